"""Hermes Agent 0.19's ``hermes_cli.kanban_db`` is not stood in for: hermes keeps no Kanban
board. Importing it says so (an ImportError, as when the module is missing, so callers
such as hermes-webui's Kanban panel fall back as they do without it)."""

raise ImportError(
    "hermes has no Kanban board: hermes_cli.kanban_db (Hermes Agent 0.19's task board) is "
    "not provided; use `hermes cron` for scheduled work."
)
