"""hermes.tools — see DESIGN.md."""
