"""The `hermes` command. Nothing imports this package; it imports the rest."""
