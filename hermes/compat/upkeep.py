"""Hermes Agent 0.19's store upkeep over the hermes store: prune, vacuum, ``state_meta``.

Pruning works on conversations (deleting one segment of a chain would leave the rest
unreachable): a conversation goes when its live segment has ended and started before
the cutoff, which is 0.19's rule (ended, ``started_at`` older than the cutoff) applied
to the segment that stands for it. Transcript files 0.19 kept beside the store
(``sessions/<id>.json``...) go with their segments when the caller names the folder.
``hermes_state.SessionDB`` (session_db.py) offers these under 0.19's method names; they
work on the store's own ``SessionDB``, so this module imports nothing of session_db.py.
"""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path
from typing import Any

from hermes.compat import listing
from hermes.state import SessionDB

log = logging.getLogger("hermes.compat")

LAST_AUTO_PRUNE = "last_auto_prune"


def prune(
    db: SessionDB, older_than_days: float | None, source: str | None, sessions_dir: Any
) -> int:
    """Delete ended conversations that started their live segment before the cutoff;
    returns the segments deleted."""
    cutoff = time.time() - older_than_days * 86400 if older_than_days is not None else None
    stale = listing.prunable(db, cutoff, source)
    removed = 0
    for conversation_id, segment_ids in stale:
        db.delete_conversation(conversation_id)
        removed += len(segment_ids)
        for segment_id in segment_ids:
            remove_transcript_files(sessions_dir, segment_id)
    return removed


def remove_transcript_files(sessions_dir: Any, session_id: str) -> None:
    """0.19's on-disk transcripts of a session: ``<id>.json``, ``<id>.jsonl`` and the
    gateway's ``request_dump_<id>_*.json``; a file that cannot go is left."""
    if sessions_dir is None:
        return
    folder = Path(sessions_dir)
    paths = [folder / f"{session_id}.json", folder / f"{session_id}.jsonl"]
    with contextlib.suppress(OSError):
        paths += list(folder.glob(f"request_dump_{session_id}_*.json"))
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def vacuum(db: SessionDB) -> int:
    """SQLite: give the space of deleted rows back (VACUUM, outside any transaction).
    PostgreSQL's autovacuum does this itself. Returns 0 (no FTS index is optimised
    apart: the store keeps its own)."""
    shared = getattr(db.backend, "_shared", None)
    if shared is None:
        return 0
    with shared.lock:
        shared.conn.execute("VACUUM")
    return 0


def auto_prune_and_vacuum(
    db: SessionDB,
    retention_days: float,
    min_interval_hours: float,
    run_vacuum: bool,
    sessions_dir: Any,
) -> dict[str, Any]:
    """0.19's startup upkeep: at most once per ``min_interval_hours`` (recorded in
    ``state_meta``), prune and, if anything went, vacuum. Never raises."""
    result: dict[str, Any] = {"skipped": False, "pruned": 0, "vacuumed": False}
    try:
        now = time.time()
        last = _as_float(get_meta(db, LAST_AUTO_PRUNE))
        if last is not None and now - last < min_interval_hours * 3600:
            result["skipped"] = True
            return result
        result["pruned"] = prune(db, retention_days, None, sessions_dir)
        if run_vacuum and result["pruned"] > 0:
            vacuum(db)
            result["vacuumed"] = True
        set_meta(db, LAST_AUTO_PRUNE, str(now))
    except Exception as exc:  # upkeep must never stop a start-up, as in 0.19
        log.warning("state store upkeep failed: %s", exc)
        result["error"] = str(exc)
    return result


def get_meta(db: SessionDB, key: str) -> str | None:
    """A value of Hermes Agent's ``state_meta`` key/value table (None if unset)."""
    row = db._read(lambda tx: tx.one("SELECT value FROM state_meta WHERE key = ?", (key,)))
    return None if row is None else row["value"]


def set_meta(db: SessionDB, key: str, value: str) -> None:
    db._write(
        lambda tx: tx.run(
            "INSERT INTO state_meta (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
    )


def _as_float(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None  # a damaged marker counts as no earlier run
