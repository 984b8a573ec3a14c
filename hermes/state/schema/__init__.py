"""What both engines' schemas are built from: the migration runner (``migrations``, one
transaction per step, the version table) and Hermes Agent 0.19's tables and columns
(``hermes_agent``), which each engine's ``schema.py`` lays beside hermes's own."""
