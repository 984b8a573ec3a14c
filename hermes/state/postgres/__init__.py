"""The PostgreSQL engine, behind ``state/backend.py``'s seam.

backend.py    PostgresBackend: a pool, READ COMMITTED, one store for many hosts
schema.py     the schema, as numbered migrations, column for column SQLite's
turn_lock.py  turn locks: advisory locks on one dedicated connection
"""
