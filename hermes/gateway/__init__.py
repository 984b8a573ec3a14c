"""hermes.gateway — see DESIGN.md."""
