"""Notification subscriptions (0.19's ``kanban_notify_subs``): a chat (platform, chat,
thread) that wants to hear what happens to a task, and the last event it was told of.

A notifier reads a subscription's new events by id (``unseen_events_for_sub``), or claims
them in one write transaction so that two notifiers on one board never both send them
(``claim_unseen_events_for_sub``), and puts the cursor back if sending failed
(``rewind_notify_cursor``, only if nobody moved it since). A blank thread is stored as
``''``, since it is part of the subscription's key.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from typing import Any

from hermes.kanban.db import write_txn
from hermes.kanban.records import Event
from hermes.kanban.tasks import event_from_row

_KEY = "task_id = ? AND platform = ? AND chat_id = ? AND thread_id = ?"


def _key(task_id: str, platform: str, chat_id: str, thread_id: str | None) -> tuple[str, ...]:
    return (task_id, platform, chat_id, thread_id or "")


def add_notify_sub(
    conn: sqlite3.Connection,
    *,
    task_id: str,
    platform: str,
    chat_id: str,
    thread_id: str | None = None,
    user_id: str | None = None,
    notifier_profile: str | None = None,
) -> None:
    """Subscribe a chat to a task (a second call changes nothing, but gives a row with no
    notifier profile the one passed)."""
    key = _key(task_id, platform, chat_id, thread_id)
    with write_txn(conn):
        conn.execute(
            "INSERT OR IGNORE INTO kanban_notify_subs (task_id, platform, chat_id, thread_id, "
            "user_id, notifier_profile, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (*key, user_id, notifier_profile, int(time.time())),
        )
        if notifier_profile:
            conn.execute(
                "UPDATE kanban_notify_subs SET notifier_profile = ? WHERE "
                + _KEY
                + " AND (notifier_profile IS NULL OR notifier_profile = '')",
                (notifier_profile, *key),
            )


def list_notify_subs(conn: sqlite3.Connection, task_id: str | None = None) -> list[dict[str, Any]]:
    """Every subscription (of ``task_id``, when given), as dicts of the row's columns."""
    if task_id is None:
        rows = conn.execute("SELECT * FROM kanban_notify_subs")
    else:
        rows = conn.execute("SELECT * FROM kanban_notify_subs WHERE task_id = ?", (task_id,))
    return [dict(r) for r in rows]


def remove_notify_sub(
    conn: sqlite3.Connection,
    *,
    task_id: str,
    platform: str,
    chat_id: str,
    thread_id: str | None = None,
) -> bool:
    """Unsubscribe; whether there was such a subscription."""
    with write_txn(conn):
        cur = conn.execute(
            "DELETE FROM kanban_notify_subs WHERE " + _KEY,
            _key(task_id, platform, chat_id, thread_id),
        )
    return cur.rowcount > 0


def _cursor(conn: sqlite3.Connection, key: tuple[str, ...]) -> int | None:
    row = conn.execute("SELECT last_event_id FROM kanban_notify_subs WHERE " + _KEY, key).fetchone()
    return None if row is None else int(row["last_event_id"])


def unseen_events_for_sub(
    conn: sqlite3.Connection,
    *,
    task_id: str,
    platform: str,
    chat_id: str,
    thread_id: str | None = None,
    kinds: Iterable[str] | None = None,
) -> tuple[int, list[Event]]:
    """``(cursor after them, events)``: the task's events after the subscription's cursor
    (only ``kinds``, when given), oldest first; ``(0, [])`` with no such subscription. The
    cursor does not move: ``advance_notify_cursor`` once they are sent."""
    cursor = _cursor(conn, _key(task_id, platform, chat_id, thread_id))
    if cursor is None:
        return 0, []
    wanted = list(kinds or ())
    query = "SELECT * FROM task_events WHERE task_id = ? AND id > ?"
    if wanted:
        query += f" AND kind IN ({','.join('?' * len(wanted))})"
    events = [
        event_from_row(r)
        for r in conn.execute(query + " ORDER BY id ASC", (task_id, cursor, *wanted))
    ]
    return max([cursor, *(e.id for e in events)]), events


def claim_unseen_events_for_sub(
    conn: sqlite3.Connection,
    *,
    task_id: str,
    platform: str,
    chat_id: str,
    thread_id: str | None = None,
    kinds: Iterable[str] | None = None,
) -> tuple[int, int, list[Event]]:
    """``(old cursor, new cursor, events)``, the cursor already moved past the events in
    the same write transaction, so of notifiers sharing a board one alone gets them."""
    key = _key(task_id, platform, chat_id, thread_id)
    with write_txn(conn):
        old = _cursor(conn, key)
        if old is None:
            return 0, 0, []
        new, events = unseen_events_for_sub(
            conn,
            task_id=task_id,
            platform=platform,
            chat_id=chat_id,
            thread_id=thread_id,
            kinds=kinds,
        )
        if not events:
            return old, old, []
        conn.execute(
            "UPDATE kanban_notify_subs SET last_event_id = ? WHERE "
            + _KEY
            + " AND last_event_id = ?",
            (new, *key, old),
        )
    return old, new, events


def advance_notify_cursor(
    conn: sqlite3.Connection,
    *,
    task_id: str,
    platform: str,
    chat_id: str,
    thread_id: str | None = None,
    new_cursor: int,
) -> None:
    with write_txn(conn):
        conn.execute(
            "UPDATE kanban_notify_subs SET last_event_id = ? WHERE " + _KEY,
            (int(new_cursor), *_key(task_id, platform, chat_id, thread_id)),
        )


def rewind_notify_cursor(
    conn: sqlite3.Connection,
    *,
    task_id: str,
    platform: str,
    chat_id: str,
    thread_id: str | None = None,
    claimed_cursor: int,
    old_cursor: int,
) -> bool:
    """Undo a claim whose events could not be sent, unless another notifier moved the
    cursor since; whether it was put back."""
    with write_txn(conn):
        cur = conn.execute(
            "UPDATE kanban_notify_subs SET last_event_id = ? WHERE "
            + _KEY
            + " AND last_event_id = ?",
            (int(old_cursor), *_key(task_id, platform, chat_id, thread_id), int(claimed_cursor)),
        )
    return cur.rowcount > 0
