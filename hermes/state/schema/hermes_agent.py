"""Hermes Agent 0.19's SQL surface over hermes's store, for both engines.

Third-party tools (web UIs, dashboards, recall and cost tools) read ``state.db`` with
their own SQL, so every table and column of Hermes Agent 0.19's schema exists here with
its name and meaning, beside hermes's own.

Real columns, not generated ones or views over the two main tables: readers discover
columns with ``PRAGMA table_info``, which does not list SQLite's generated columns, and
a view cannot take the name of the table it reads. So ``messages.timestamp`` is written
with ``created_at`` and ``messages.active`` with ``compacted``/``undone`` by every path
that writes those (``insert_messages``, ``mark_undone``). A column hermes has no
counterpart for keeps Hermes Agent's default (NULL or 0).

``gateway_routing`` is a view over ``gateway_routes``, the one record of the gateway's
routes (reading it never disagrees with hermes); ``session_model_usage`` and
``state_meta`` are tables.
"""

from __future__ import annotations

from hermes.state.backend import Tx
from hermes.state.usage import backfill_tool_call_counts

# Hermes Agent 0.19's ``sessions`` columns that hermes's own schema lacks.
# {REAL} and {BIG} are the engine's names for a float and a 64-bit counter.
_SESSION_COLUMNS = (
    ("chat_id", "TEXT"),
    ("chat_type", "TEXT"),
    ("thread_id", "TEXT"),
    ("display_name", "TEXT"),
    ("origin_json", "TEXT"),
    ("expiry_finalized", "INTEGER DEFAULT 0"),
    ("model_config", "TEXT"),
    ("tool_call_count", "INTEGER NOT NULL DEFAULT 0"),
    ("cache_read_tokens", "{BIG} NOT NULL DEFAULT 0"),
    ("cache_write_tokens", "{BIG} NOT NULL DEFAULT 0"),
    ("reasoning_tokens", "{BIG} NOT NULL DEFAULT 0"),
    ("cwd", "TEXT"),
    ("git_branch", "TEXT"),
    ("git_repo_root", "TEXT"),
    ("billing_provider", "TEXT"),
    ("billing_base_url", "TEXT"),
    ("billing_mode", "TEXT"),
    ("estimated_cost_usd", "{REAL}"),
    ("actual_cost_usd", "{REAL}"),
    ("cost_status", "TEXT"),
    ("cost_source", "TEXT"),
    ("pricing_version", "TEXT"),
    ("api_call_count", "INTEGER NOT NULL DEFAULT 0"),
    ("handoff_state", "TEXT"),
    ("handoff_platform", "TEXT"),
    ("handoff_error", "TEXT"),
    ("compression_failure_cooldown_until", "{REAL}"),
    ("compression_failure_error", "TEXT"),
    ("compression_fallback_streak", "INTEGER NOT NULL DEFAULT 0"),
    ("profile_name", "TEXT"),
    ("rewind_count", "INTEGER NOT NULL DEFAULT 0"),
    ("archived", "INTEGER NOT NULL DEFAULT 0"),
)

# Hermes Agent 0.19's ``messages`` columns that hermes's own schema lacks.
_MESSAGE_COLUMNS = (
    # Epoch seconds, as created_at (Hermes Agent's name for it).
    ("timestamp", "{REAL}"),
    # 1 for a row that stands in the conversation's record: not a compacted copy a
    # rotation wrote into a child (the original is in the parent), not undone.
    ("active", "INTEGER NOT NULL DEFAULT 1"),
    ("finish_reason", "TEXT"),
    ("effect_disposition", "TEXT"),
    ("reasoning_content", "TEXT"),
    ("reasoning_details", "TEXT"),
    ("codex_reasoning_items", "TEXT"),
    ("codex_message_items", "TEXT"),
    ("platform_message_id", "TEXT"),
    ("observed", "INTEGER DEFAULT 0"),
    ("api_content", "TEXT"),
)

_TABLES = (
    """CREATE TABLE session_model_usage (
        session_id TEXT NOT NULL REFERENCES sessions(id),
        model TEXT NOT NULL,
        billing_provider TEXT NOT NULL DEFAULT '',
        billing_base_url TEXT NOT NULL DEFAULT '',
        billing_mode TEXT NOT NULL DEFAULT '',
        task TEXT NOT NULL DEFAULT '',
        api_call_count INTEGER NOT NULL DEFAULT 0,
        input_tokens {BIG} NOT NULL DEFAULT 0,
        output_tokens {BIG} NOT NULL DEFAULT 0,
        cache_read_tokens {BIG} NOT NULL DEFAULT 0,
        cache_write_tokens {BIG} NOT NULL DEFAULT 0,
        reasoning_tokens {BIG} NOT NULL DEFAULT 0,
        estimated_cost_usd {REAL} NOT NULL DEFAULT 0,
        actual_cost_usd {REAL} NOT NULL DEFAULT 0,
        cost_status TEXT,
        cost_source TEXT,
        first_seen {REAL},
        last_seen {REAL},
        PRIMARY KEY (session_id, model, billing_provider, billing_base_url, billing_mode, task)
    )""",
    "CREATE INDEX idx_session_model_usage_model ON session_model_usage (model)",
    # Key/value facts about the store, as Hermes Agent keeps them.
    "CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT)",
)

_BACKFILL = (
    "UPDATE messages SET timestamp = created_at",
    "UPDATE messages SET active = 0 WHERE compacted = 1 OR undone = 1",
)

# The gateway's routes as Hermes Agent's ``gateway_routing`` rows (one scope, '').
SQLITE_GATEWAY_ROUTING = """CREATE VIEW gateway_routing AS
    SELECT '' AS scope, session_key,
        json_object('session_key', session_key, 'session_id', session_id,
            'platform', platform,
            'updated_at', strftime('%Y-%m-%dT%H:%M:%S', updated_at, 'unixepoch')) AS entry_json,
        updated_at
    FROM gateway_routes"""

POSTGRES_GATEWAY_ROUTING = """CREATE VIEW gateway_routing AS
    SELECT ''::text AS scope, session_key,
        json_build_object('session_key', session_key, 'session_id', session_id,
            'platform', platform,
            'updated_at', to_char(to_timestamp(updated_at) AT TIME ZONE 'UTC',
                'YYYY-MM-DD"T"HH24:MI:SS'))::text AS entry_json,
        updated_at
    FROM gateway_routes"""


def statements(*, real: str, big: str, gateway_routing: str) -> tuple[str, ...]:
    """The migration's statements in one engine's types."""

    def typed(sql: str) -> str:
        return sql.replace("{REAL}", real).replace("{BIG}", big)

    added = [
        f"ALTER TABLE sessions ADD COLUMN {name} {typed(kind)}" for name, kind in _SESSION_COLUMNS
    ]
    added += [
        f"ALTER TABLE messages ADD COLUMN {name} {typed(kind)}" for name, kind in _MESSAGE_COLUMNS
    ]
    return (*added, *_BACKFILL, *(typed(t) for t in _TABLES), gateway_routing)


def backfill(tx: Tx) -> None:
    """The step SQL cannot take on both engines alike: counting stored tool calls."""
    backfill_tool_call_counts(tx)
