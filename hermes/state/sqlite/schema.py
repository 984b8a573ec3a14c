"""The SQLite schema, as numbered migrations.

Invariants the schema itself enforces:
- a parent has at most one compression child (``sessions_one_compression_child``);
- a conversation has at most one live tip (``sessions_one_live_tip``);
- a message identity is stored once (``messages.message_uid UNIQUE``).
Rows are never deleted by compression; only deleting a whole conversation removes rows.
"""

from __future__ import annotations

from hermes.state.backend import Tx
from hermes.state.schema import hermes_agent as schema_hermes_agent
from hermes.state.schema.migrations import Migration


def _fold_pending_table(tx: Tx) -> None:
    """Index the rows migration 4's table still deferred, then drop the table: from
    migration 9 on, the deferred rows are the ones above the watermark."""
    tx.index_messages(
        tx.all(
            "SELECT m.id, m.content, m.content_parts FROM messages_fts_pending p"
            " CROSS JOIN messages m ON m.id = p.id ORDER BY p.id"
        )
    )
    tx.run("DROP TABLE messages_fts_pending")


# The same tables as postgres/schema.py's, in each engine's own types and syntax: the DDL
# stays written twice so each file reads as its engine runs it (test_schema_parity
# checks they agree).
MIGRATIONS = (
    Migration(
        1,
        "initial",
        (
            """CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                conversation_id TEXT NOT NULL,
                parent_session_id TEXT REFERENCES sessions(id),
                lineage TEXT NOT NULL DEFAULT 'root'
                    CHECK (lineage IN ('root', 'compression', 'branch')),
                segment_index INTEGER NOT NULL DEFAULT 1,
                source TEXT NOT NULL,
                user_id TEXT,
                session_key TEXT,
                title TEXT,
                model TEXT,
                system_prompt TEXT,
                started_at REAL NOT NULL,
                last_active_at REAL NOT NULL,
                ended_at REAL,
                end_reason TEXT,
                message_count INTEGER NOT NULL DEFAULT 0,
                input_tokens INTEGER NOT NULL DEFAULT 0,
                output_tokens INTEGER NOT NULL DEFAULT 0
            )""",
            """CREATE UNIQUE INDEX sessions_one_compression_child
                ON sessions (parent_session_id) WHERE lineage = 'compression'""",
            """CREATE UNIQUE INDEX sessions_one_live_tip
                ON sessions (conversation_id) WHERE ended_at IS NULL""",
            "CREATE UNIQUE INDEX sessions_chain ON sessions (conversation_id, segment_index)",
            "CREATE INDEX sessions_last_active ON sessions (last_active_at)",
            "CREATE INDEX sessions_parent ON sessions (parent_session_id)",
            """CREATE TABLE messages (
                id INTEGER PRIMARY KEY,
                session_id TEXT NOT NULL REFERENCES sessions(id),
                message_uid TEXT NOT NULL UNIQUE,
                role TEXT NOT NULL,
                content TEXT,
                tool_calls TEXT,
                tool_call_id TEXT,
                tool_name TEXT,
                reasoning TEXT,
                created_at REAL NOT NULL,
                token_count INTEGER,
                compacted INTEGER NOT NULL DEFAULT 0,
                origin_id INTEGER,
                undone INTEGER NOT NULL DEFAULT 0
            )""",
            "CREATE INDEX messages_session ON messages (session_id, id)",
            # Contentless: the text lives once, in messages; the index holds only tokens.
            """CREATE VIRTUAL TABLE messages_fts USING fts5 (
                content, content='', tokenize='unicode61 remove_diacritics 2'
            )""",
            """CREATE TABLE compression_locks (
                session_id TEXT PRIMARY KEY,
                holder TEXT NOT NULL,
                acquired_at REAL NOT NULL,
                expires_at REAL NOT NULL
            )""",
            """CREATE TABLE gateway_routes (
                session_key TEXT PRIMARY KEY,
                session_id TEXT NOT NULL,
                platform TEXT,
                updated_at REAL NOT NULL
            )""",
        ),
    ),
    Migration(
        2,
        "gateway_queue",
        (
            # Input that arrived while a conversation was busy, kept across restarts.
            """CREATE TABLE gateway_queue (
                id INTEGER PRIMARY KEY,
                session_key TEXT NOT NULL,
                payload TEXT NOT NULL,
                enqueued_at REAL NOT NULL
            )""",
            "CREATE INDEX gateway_queue_key ON gateway_queue (session_key, id)",
        ),
    ),
    Migration(
        3,
        "content_parts",
        (
            # 1 when ``content`` holds a JSON list of content parts (text, images), not text.
            "ALTER TABLE messages ADD COLUMN content_parts INTEGER NOT NULL DEFAULT 0",
        ),
    ),
    Migration(
        4,
        "fts_pending",
        (
            # Messages whose search index entry is deferred (until migration 9).
            "CREATE TABLE messages_fts_pending (id INTEGER PRIMARY KEY)",
        ),
    ),
    Migration(
        5,
        "gateway_queue_owner",
        (
            # The gateway instance that answers a queued row; NULL: released, anyone may.
            "ALTER TABLE gateway_queue ADD COLUMN owner TEXT",
            "CREATE INDEX gateway_queue_owner ON gateway_queue (owner)",
            # A heartbeat per running gateway, so another host can tell it is gone.
            """CREATE TABLE gateway_instances (
                holder TEXT PRIMARY KEY,
                started_at REAL NOT NULL,
                seen_at REAL NOT NULL
            )""",
        ),
    ),
    Migration(
        6,
        "segment_coverage",
        (
            # What the summary of a compression child read (invariant 14): one row per
            # origin message (COALESCE(origin_id, id)) of the parent that its summary
            # covered. Every other row of the parent is copied into the child.
            """CREATE TABLE segment_coverage (
                session_id TEXT NOT NULL,
                origin_id INTEGER NOT NULL,
                PRIMARY KEY (session_id, origin_id)
            )""",
        ),
    ),
    Migration(
        7,
        "history_digests",
        (
            # The chain digest of each standing original user/assistant message of a
            # conversation the HTTP API started (hermes/state/history.py): a stateless
            # client's history finds the conversation it continues in one indexed read.
            # Keyed by the digest, without a rowid: one b-tree fewer to write per append.
            """CREATE TABLE history_digests (
                digest TEXT NOT NULL,
                message_id INTEGER NOT NULL,
                conversation_id TEXT NOT NULL,
                PRIMARY KEY (digest, message_id)
            ) WITHOUT ROWID""",
            """CREATE INDEX history_digests_conversation
                ON history_digests (conversation_id, message_id)""",
        ),
    ),
    Migration(
        8,
        "messages_undone",
        (
            # The undone rows of a segment, for the agent's history-cache stamp
            # (SessionDB.segment_stamp) to count in a few reads rather than scanning the
            # segment. Partial: an append (undone = 0) never writes to it.
            "CREATE INDEX messages_undone ON messages (session_id) WHERE undone = 1",
        ),
    ),
    Migration(
        9,
        "fts_watermark",
        (
            # Every original message with text at or below ``indexed_through`` is in
            # messages_fts, none above it: the deferred rows are a range of the primary
            # key, so deferring one costs no write beyond the message itself.
            """CREATE TABLE messages_fts_watermark (
                one INTEGER PRIMARY KEY CHECK (one = 1),
                indexed_through INTEGER NOT NULL
            )""",
            """INSERT INTO messages_fts_watermark (one, indexed_through)
                SELECT 1, COALESCE(MAX(id), 0) FROM messages""",
        ),
        then=_fold_pending_table,
    ),
    Migration(
        10,
        "hermes_agent_surface",
        # Hermes Agent 0.19's tables and columns, for the tools that read state.db.
        schema_hermes_agent.statements(
            real="REAL",
            big="INTEGER",
            gateway_routing=schema_hermes_agent.SQLITE_GATEWAY_ROUTING,
        ),
        then=schema_hermes_agent.backfill,
    ),
    Migration(
        11,
        "api_runs",
        (
            # Runs of the HTTP API (POST /v1/runs): one row per run, its state readable by
            # every gateway on the store. ``idempotency_key`` makes a retried start return
            # the same run, across restarts; ``fingerprint`` tells a retry from a conflict.
            """CREATE TABLE api_runs (
                id TEXT PRIMARY KEY,
                conversation_id TEXT NOT NULL,
                session_key TEXT NOT NULL,
                status TEXT NOT NULL,
                model TEXT,
                idempotency_key TEXT,
                fingerprint TEXT,
                output TEXT,
                error TEXT,
                usage TEXT,
                last_event TEXT,
                stop_requested INTEGER NOT NULL DEFAULT 0,
                owner TEXT,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL
            )""",
            "CREATE UNIQUE INDEX api_runs_idempotency ON api_runs (idempotency_key)",
            # A run's events in order (``seq`` from 1): a client joining late or resuming
            # with Last-Event-ID reads them from here, from any gateway.
            """CREATE TABLE api_run_events (
                run_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                event TEXT NOT NULL,
                data TEXT NOT NULL,
                created_at REAL NOT NULL,
                PRIMARY KEY (run_id, seq)
            )""",
            # What callers send a running run (steering, approval answers), through any
            # gateway; the gateway running it takes each once.
            """CREATE TABLE api_run_inputs (
                id INTEGER PRIMARY KEY,
                run_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                body TEXT NOT NULL,
                created_at REAL NOT NULL,
                taken_at REAL
            )""",
            "CREATE INDEX api_run_inputs_run ON api_run_inputs (run_id, id)",
        ),
    ),
    Migration(
        12,
        "cron",
        (
            # Scheduled jobs (docs/design.md, invariant "Scheduled work happens once"). A job's
            # ``next_run_at`` moves on by compare-and-swap as its due run is written, so
            # two gateways never both make the run of one due time.
            """CREATE TABLE cron_jobs (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                schedule TEXT NOT NULL,
                timezone TEXT,
                prompt TEXT NOT NULL,
                skills TEXT,
                model TEXT,
                toolsets TEXT,
                deliver TEXT NOT NULL,
                enabled INTEGER NOT NULL DEFAULT 1,
                paused_reason TEXT,
                next_run_at REAL,
                last_run_at REAL,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL
            )""",
            "CREATE INDEX cron_jobs_due ON cron_jobs (next_run_at)",
            # One row per due time of a job (unique), claimed under a lease: ``holder``
            # runs it until ``lease_expires_at``; a dead holder's run is taken over.
            """CREATE TABLE cron_runs (
                id TEXT PRIMARY KEY,
                job_id TEXT NOT NULL,
                due_at REAL NOT NULL,
                status TEXT NOT NULL,
                holder TEXT,
                lease_expires_at REAL,
                attempts INTEGER NOT NULL DEFAULT 0,
                session_id TEXT,
                output TEXT,
                error TEXT,
                created_at REAL NOT NULL,
                finished_at REAL
            )""",
            "CREATE UNIQUE INDEX cron_runs_due ON cron_runs (job_id, due_at)",
            "CREATE INDEX cron_runs_status ON cron_runs (status)",
            # What a finished run must deliver, written in the transaction that finishes
            # it; a sender marks it sent once the platform accepted it.
            """CREATE TABLE cron_outbox (
                run_id TEXT PRIMARY KEY,
                target TEXT NOT NULL,
                body TEXT NOT NULL,
                status TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at REAL NOT NULL,
                holder TEXT,
                lease_expires_at REAL,
                last_error TEXT,
                created_at REAL NOT NULL,
                sent_at REAL
            )""",
            "CREATE INDEX cron_outbox_pending ON cron_outbox (status, next_attempt_at)",
        ),
    ),
    Migration(
        13,
        "blobs",
        (
            # Large inline data of content parts (an image sent as a data URL), once per
            # sha256 of the data URL: messages and their rotated copies keep a reference
            # (hermes/state/blobs.py). ``size``: characters of the data URL.
            """CREATE TABLE blobs (
                sha256 TEXT PRIMARY KEY,
                media_type TEXT NOT NULL,
                size INTEGER NOT NULL,
                data TEXT NOT NULL,
                created_at REAL NOT NULL
            )""",
        ),
    ),
    Migration(
        14,
        "api_principals",
        (
            # The API principal (gateway.api_keys) that started a run; '' for the
            # operator's key. Only its principal (or the operator) reaches the run, and an
            # Idempotency-Key names a run within its principal's own.
            "ALTER TABLE api_runs ADD COLUMN principal TEXT NOT NULL DEFAULT ''",
            "DROP INDEX api_runs_idempotency",
            "CREATE UNIQUE INDEX api_runs_idempotency ON api_runs (principal, idempotency_key)",
        ),
    ),
    Migration(
        15,
        "api_requests",
        (
            # Requests of the HTTP API that may be retried (hermes/state/gateway/api_requests.py):
            # one row per (principal, key), claimed by the first try before its turn
            # starts (the primary key decides the winner across workers and hosts), with
            # the uids its question and answer are stored under, the gateway running it,
            # and then its answer, which every retry gets. ``principal`` is '' for the
            # operator's key.
            """CREATE TABLE api_requests (
                principal TEXT NOT NULL,
                request_key TEXT NOT NULL,
                token TEXT NOT NULL,
                status TEXT NOT NULL,
                holder TEXT,
                user_uid TEXT NOT NULL,
                answer_uid TEXT NOT NULL,
                answer TEXT,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                PRIMARY KEY (principal, request_key)
            )""",
            "CREATE INDEX api_requests_age ON api_requests (updated_at)",
        ),
    ),
    Migration(
        16,
        "coverage_by_stub",
        (
            # 1: the summary read this row as its stub and anchors, not whole (a tool
            # output ``recall`` returns verbatim); the coverage check asks that it stay
            # recallable (invariant 14).
            "ALTER TABLE segment_coverage ADD COLUMN by_stub INTEGER NOT NULL DEFAULT 0",
        ),
    ),
    Migration(
        17,
        "cron_workdir",
        (
            # The folder a job's runs work in (Hermes Agent 0.19's ``workdir``), a real
            # absolute path checked when it was set (hermes/cron/workdir.py); NULL: the
            # job's own folder, <workspaces>/cron/<job id>/.
            "ALTER TABLE cron_jobs ADD COLUMN workdir TEXT",
        ),
    ),
    Migration(
        18,
        "webhook_deliveries",
        (
            # The webhook events a gateway accepted (hermes/state/gateway/webhook_deliveries.py):
            # one row per (route, delivery id), inserted with the event's queued turn in one
            # transaction, so a sender's retry of an event never runs a second turn, on
            # any gateway of the store or after a restart. ``deliver`` and
            # ``deliver_extra`` (JSON) say where its answer goes; ``delivered_at`` is set
            # once it went.
            """CREATE TABLE webhook_deliveries (
                route TEXT NOT NULL,
                delivery_id TEXT NOT NULL,
                deliver TEXT NOT NULL,
                deliver_extra TEXT NOT NULL,
                received_at REAL NOT NULL,
                delivered_at REAL,
                PRIMARY KEY (route, delivery_id)
            )""",
            "CREATE INDEX webhook_deliveries_age ON webhook_deliveries (received_at)",
        ),
    ),
    Migration(
        19,
        "branch_marker",
        (
            # Hermes Agent 0.19's mark of a branch (hermes/state/segments.py,
            # branch_marker), so tools counting conversations by 0.19's rule count the
            # branches made before it was written.
            "UPDATE sessions SET model_config = json_object('_branched_from', parent_session_id)"
            " WHERE lineage = 'branch' AND parent_session_id IS NOT NULL"
            " AND model_config IS NULL",
        ),
    ),
    Migration(
        20,
        "cron_job_origin_context",
        (
            # Hermes Agent 0.19's job fields: ``origin``, the chat a job was made from
            # (JSON: platform, chat_id ...), kept beside ``deliver`` (its resolved target);
            # ``context_from``, the ids of the jobs whose latest answer a run is given
            # first (JSON list). NULL: none.
            "ALTER TABLE cron_jobs ADD COLUMN origin TEXT",
            "ALTER TABLE cron_jobs ADD COLUMN context_from TEXT",
        ),
    ),
    Migration(
        21,
        "cron_job_repeat",
        (
            # Hermes Agent 0.19's ``repeat``: ``repeat_times``, how many runs the job makes
            # before it stops (NULL: as many as its schedule gives; a one-shot's is 1), and
            # ``completed``, how many it has made (a finite one-shot's run is counted when
            # first taken, before it runs; any other job's when it finishes). NULL
            # ``completed``: a job saved through 0.19's ``save_jobs`` with no repeat record,
            # counted by nobody. Jobs already stored count their finished runs, and a
            # one-shot among them (its schedule stored as its ISO time) gets 1.
            "ALTER TABLE cron_jobs ADD COLUMN repeat_times INTEGER",
            "ALTER TABLE cron_jobs ADD COLUMN completed INTEGER",
            "UPDATE cron_jobs SET repeat_times = 1"
            " WHERE schedule LIKE '____-__-__%' AND schedule NOT LIKE '% %'",
            "UPDATE cron_jobs SET completed = (SELECT COUNT(*) FROM cron_runs"
            " WHERE cron_runs.job_id = cron_jobs.id AND status IN ('completed', 'failed'))",
        ),
    ),
)
