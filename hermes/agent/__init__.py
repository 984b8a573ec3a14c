"""hermes.agent — see DESIGN.md."""
