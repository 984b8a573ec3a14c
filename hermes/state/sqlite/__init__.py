"""The SQLite engine, behind ``state/backend.py``'s seam.

backend.py       SQLiteBackend: one writer connection per file per process
schema.py        the schema, as numbered migrations
turn_lock.py     turn locks: file locks the OS frees when a process dies
group_commit.py  writers waiting at once share one COMMIT
"""
