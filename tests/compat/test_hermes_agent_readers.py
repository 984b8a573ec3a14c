"""Third-party readers' SQL (deja-vu, agf, codeburn, hermesd, hermes-webui) on hermes's
store, both backends, after real turns (fake model) with a compressed conversation; and
the same SQL on a state.db Hermes Agent 0.19 wrote itself.

The queries are written as the tools write them (their public sources): each runs as is,
and the figures it returns are the ones hermes recorded.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hermes.state import SessionDB
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake
from tests.state.helpers import StoreSpec

HERE = Path(__file__).parent

# What every main model call reports: 1000 prompt tokens of which the cache served 600
# and took 100, 50 completion tokens of which 20 were reasoning, $0.002 charged.
USAGE: dict[str, Any] = {
    "prompt_tokens": 1000,
    "completion_tokens": 50,
    "usage_extra": {
        "prompt_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 100},
        "completion_tokens_details": {"reasoning_tokens": 20},
        "cost": 0.002,
    },
}
QUESTIONS = [f"question {i} " + "y" * 300 for i in range(6)]


@dataclass(frozen=True)
class Reader:
    tool: str
    sql: str
    params: tuple[Any, ...] = ()


# Each as the tool sends it; ``?`` placeholders (PostgreSQL: %s, swapped by the runner).
READERS = (
    Reader(
        "deja-vu recall",
        "select session_id,role,content,timestamp from messages"
        " where role in ('user','assistant') and content is not null and content <> ''"
        " and timestamp > 0 order by session_id,timestamp,id",
    ),
    Reader(
        "deja-vu fingerprint",
        "select count(*), coalesce(max(timestamp), 0) from messages"
        " where role in ('user','assistant') and content is not null and content <> ''",
    ),
    Reader(
        "codeburn discovery",
        "SELECT id, title, coalesce(input_tokens, 0) AS input_tokens,"
        " coalesce(output_tokens, 0) AS output_tokens,"
        " coalesce(cache_read_tokens, 0) AS cache_read_tokens,"
        " coalesce(cache_write_tokens, 0) AS cache_write_tokens,"
        " coalesce(reasoning_tokens, 0) AS reasoning_tokens FROM sessions"
        " WHERE coalesce(input_tokens, 0) + coalesce(output_tokens, 0)"
        " + coalesce(cache_read_tokens, 0) + coalesce(cache_write_tokens, 0)"
        " + coalesce(reasoning_tokens, 0) > 0 ORDER BY started_at DESC LIMIT 10000",
    ),
    Reader(
        "codeburn session",
        "SELECT id, source, model, cwd, git_repo_root, billing_provider,"
        " coalesce(input_tokens, 0) AS input_tokens, coalesce(output_tokens, 0) AS output_tokens,"
        " coalesce(cache_read_tokens, 0) AS cache_read_tokens,"
        " coalesce(cache_write_tokens, 0) AS cache_write_tokens,"
        " coalesce(reasoning_tokens, 0) AS reasoning_tokens, estimated_cost_usd, actual_cost_usd,"
        " coalesce(api_call_count, 0) AS api_call_count,"
        " coalesce(tool_call_count, 0) AS tool_call_count, started_at, ended_at, title"
        " FROM sessions ORDER BY started_at",
    ),
    Reader(
        "codeburn messages",
        "SELECT coalesce(id, 0) AS id, role, content, tool_calls, tool_name, timestamp"
        " FROM messages ORDER BY timestamp ASC, id ASC",
    ),
    Reader(
        "codeburn totals",
        "SELECT SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens),"
        " SUM(cache_write_tokens), SUM(reasoning_tokens), SUM(api_call_count),"
        " SUM(estimated_cost_usd), SUM(actual_cost_usd) FROM sessions",
    ),
    Reader(
        "hermesd sessions",
        "SELECT id, source, model, parent_session_id, started_at, ended_at, message_count,"
        " tool_call_count, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
        " reasoning_tokens, billing_provider, estimated_cost_usd, cost_status, pricing_version,"
        " title, api_call_count, cwd, rewind_count, archived, handoff_state, handoff_platform,"
        " handoff_error FROM sessions ORDER BY started_at DESC",
    ),
    Reader(
        "hermesd tool stats",
        "SELECT tool_name, COUNT(*) as call_count FROM messages WHERE tool_name IS NOT NULL"
        " GROUP BY tool_name ORDER BY call_count DESC",
    ),
    Reader(
        "hermes-webui watcher",
        "SELECT s.id, COUNT(m.id), COALESCE(MAX(m.timestamp), 0) FROM sessions s"
        " LEFT JOIN messages m ON m.session_id = s.id"
        " WHERE s.source IS NOT NULL AND s.source NOT IN (?) GROUP BY s.id ORDER BY s.id",
        ("tool",),
    ),
    Reader(
        "agf last activity",
        "SELECT s.id, s.title, s.cwd, s.message_count,"
        " COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id),"
        " s.started_at) AS last_active FROM sessions s ORDER BY last_active DESC",
    ),
    Reader(
        "deja-vu-style recall with titles",
        "SELECT m.content, m.timestamp, s.title FROM messages m"
        " JOIN sessions s ON s.id = m.session_id"
        " WHERE m.active = 1 AND m.role = 'user' ORDER BY m.timestamp, m.id",
    ),
    Reader(
        "session_model_usage",
        "SELECT model, SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens),"
        " SUM(cache_write_tokens), SUM(reasoning_tokens), SUM(api_call_count)"
        " FROM session_model_usage GROUP BY model",
    ),
    Reader(
        "gateway_routing",
        "SELECT session_key, entry_json FROM gateway_routing WHERE scope = ?",
        ("",),
    ),
    Reader("state_meta", "SELECT key, value FROM state_meta WHERE key = ?", ("schema_repair",)),
)


def run(store: StoreSpec, sql: str, params: tuple[Any, ...] = ()) -> list[tuple]:
    return [tuple(row) for row in store.execute(sql, params)]


def read(store: StoreSpec, tool: str) -> list[tuple]:
    reader = next(r for r in READERS if r.tool == tool)
    return run(store, reader.sql, reader.params)


def responder(body: dict[str, Any]) -> fake.Reply:
    text = str(body.get("messages"))
    if "summar" in text.lower() and not body.get("tools"):
        return fake.text("SUMMARY OF EARLIER TURNS")
    last = body["messages"][-1]
    if last["role"] == "user" and str(last["content"]).startswith("question 0"):
        return fake.tool_call("read_file", {"path": "notes.txt"}, **USAGE)
    return fake.text("answer " + "x" * 400, **USAGE)


@pytest.fixture
def conversation(store: StoreSpec, fake_llm, hermes_home: Path, tmp_path: Path):
    """A CLI-style conversation through real turns, compressed at least once; returns
    (its root id, its tip id, the number of main model calls)."""
    (hermes_home / "config.yaml").write_text(
        "model:\n  context_length: 1200\ncompression:\n  threshold: 0.5\n", encoding="utf-8"
    )
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    fake_llm.responder = responder
    db = store.open()
    try:
        agent = fake_agent(fake_llm, db, skip_memory=True, cwd=tmp_path)
        for question in QUESTIONS:
            agent.run(question)
        chain = db.get_lineage(agent.session_id)
        assert len(chain) >= 3, "the conversation never compressed twice"
        db.gateway.set_route("telegram:dm:42", agent.session_id, platform="telegram")
    finally:
        db.close()
    calls = sum(1 for r in fake_llm.requests if r.get("tools"))
    return chain[0], chain[-1], calls


def walk_chain(store: StoreSpec, root: str) -> list[tuple[str, str]]:
    """What a 0.19 reader does: from the root, follow the child of each segment ended by
    compression, reading its active rows in timestamp order."""
    seen, segment = [], root
    while segment:
        seen += run(
            store,
            "SELECT role, content FROM messages WHERE session_id = ? AND active = 1"
            " ORDER BY timestamp, id",
            (segment,),
        )
        child = run(
            store,
            "SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id"
            " WHERE p.id = ? AND p.end_reason = 'compression'",
            (segment,),
        )
        segment = child[0][0] if child else None
    return seen


def test_every_reader_query_runs_on_both_backends(store, conversation) -> None:
    for reader in READERS:
        rows = run(store, reader.sql, reader.params)
        assert rows or reader.tool == "state_meta", reader.tool


def test_a_chain_walk_over_active_rows_sees_each_message_once(store, conversation) -> None:
    root, tip, _ = conversation
    walked = walk_chain(store, root)
    with store.open(read_only=True) as db:
        logical = [(m["role"], m["content"]) for m in db.get_conversation_messages(root)]
    assert walked == logical
    assert [c for role, c in walked if role == "user"] == QUESTIONS
    # The child segments do hold copies (the summary and the kept tail), not active.
    copies = run(store, "SELECT COUNT(*) FROM messages WHERE compacted = 1 AND active = 1")
    assert copies == [(0,)]
    assert run(store, "SELECT COUNT(*) FROM messages WHERE compacted = 1")[0][0] > 0
    recalled = [content for content, _, _ in read(store, "deja-vu-style recall with titles")]
    assert recalled == QUESTIONS


def test_undone_rows_are_not_active(store, conversation) -> None:
    root, tip, _ = conversation
    with store.open() as db:
        last_two = [m["id"] for m in db.get_conversation_messages(tip)][-2:]
        db.mark_undone(tip, last_two)
    walked = walk_chain(store, root)
    assert [c for role, c in walked if role == "user"] == QUESTIONS[:-1]
    inactive = run(store, "SELECT COUNT(*) FROM messages WHERE undone = 1 AND active = 1")
    assert inactive == [(0,)]
    assert run(store, "SELECT rewind_count FROM sessions WHERE id = ?", (tip,)) == [(1,)]


def test_tokens_and_cost_are_the_ones_the_provider_reported(store, conversation) -> None:
    _, _, calls = conversation
    totals = read(store, "codeburn totals")[0]
    assert totals[:6] == (calls * 300, calls * 50, calls * 600, calls * 100, calls * 20, calls)
    assert totals[6] is None  # hermes keeps no price table: no estimate
    assert totals[7] == pytest.approx(calls * 0.002)
    per_model = read(store, "session_model_usage")
    assert per_model == [(fake.DEFAULT_MODEL, *totals[:6])]


def test_counts_last_activity_and_workspace_match_what_hermes_recorded(
    store, conversation, tmp_path: Path
) -> None:
    root, tip, _ = conversation
    watched = {sid: (n, last) for sid, n, last in read(store, "hermes-webui watcher")}
    segments = run(
        store, "SELECT id, message_count, last_active_at, cwd, tool_call_count FROM sessions"
    )
    assert {sid for sid, *_ in segments} == set(watched)
    for sid, count, last_active, cwd, _ in segments:
        assert watched[sid][0] == count, sid
        assert watched[sid][1] == pytest.approx(last_active), sid
        assert cwd == str(tmp_path)
    assert sum(row[4] for row in segments) == 1  # the one read_file call
    stats = dict(
        run(store, "SELECT tool_name, COUNT(*) FROM messages WHERE active = 1 GROUP BY tool_name")
    )
    assert stats["read_file"] == 1
    reasons = run(
        store,
        "SELECT finish_reason FROM messages WHERE role = 'assistant' AND active = 1 ORDER BY id",
    )
    assert reasons[0] == ("tool_calls",) and set(reasons[1:]) == {("stop",)}


def test_the_gateway_route_reads_as_a_gateway_routing_entry(store, conversation) -> None:
    _, tip, _ = conversation
    [(key, entry)] = read(store, "gateway_routing")
    assert key == "telegram:dm:42"
    assert json.loads(entry)["session_id"] == tip
    assert json.loads(entry)["platform"] == "telegram"


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_readers_that_ask_pragma_table_info_find_the_columns(store, conversation) -> None:
    """hermes-webui, codeburn and hermesd list columns with PRAGMA table_info (which does
    not show generated columns) before they query."""
    conn = sqlite3.connect(store.path)
    try:
        messages = {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
        sessions = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
    finally:
        conn.close()
    assert {"id", "session_id", "role", "content", "timestamp", "tool_calls", "active"} <= messages
    assert {"cwd", "cache_read_tokens", "estimated_cost_usd", "tool_call_count"} <= sessions


def test_the_same_queries_run_on_a_store_hermes_agent_wrote(
    tmp_path: Path, hermes_agent_python: Path
) -> None:
    """The queries above are the ones 0.19 answers: run on a state.db its SessionDB wrote."""
    path = tmp_path / "ha" / "state.db"
    path.parent.mkdir()
    env = {**os.environ, "HERMES_HOME": str(tmp_path / "ha-home"),
           "HERMES_DISABLE_LAZY_INSTALLS": "1"}  # fmt: skip
    subprocess.run([str(hermes_agent_python), str(HERE / "ha_build_reader_store.py"), str(path)],
                   env=env, check=True, capture_output=True, timeout=120)  # fmt: skip
    spec = StoreSpec("sqlite", path=str(path))
    for reader in READERS:
        rows = run(spec, reader.sql, reader.params)
        assert rows or reader.tool == "state_meta", reader.tool
    assert walk_chain(spec, "root") == [
        ("user", "question 0"),
        ("assistant", None),
        ("tool", "sunny"),
        ("assistant", "answer 0"),
        ("user", "question 1"),
        ("assistant", "answer 1"),
    ]
    assert read(spec, "codeburn totals")[0][:6] == (110, 22, 30, 5, 4, 3)


def test_sessions_list_workspace_lists_the_conversations_started_there(
    tmp_path: Path, hermes_home: Path
) -> None:
    here, elsewhere = tmp_path / "project", tmp_path / "other"
    (here / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    with SessionDB(db_path=hermes_home / "state.db") as db:
        ids = {
            db.create_session(source="cli", title=title, cwd=str(cwd)): title
            for title, cwd in (("in it", here), ("below it", here / "sub"),
                               ("elsewhere", elsewhere), ("gateway", None))
        }  # fmt: skip
        for sid in ids:
            db.append_message(sid, "user", "hello")
            db.append_message(sid, "assistant", "hi")
    hermes = str(Path(sys.executable).parent / "hermes")
    done = subprocess.run(
        [hermes, "sessions", "list", "--source", "cli", "--workspace", str(here), "--json"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    titles = sorted(row["title"] for row in json.loads(done.stdout))
    assert titles == ["below it", "in it"]


def test_hermes_agents_create_session_keeps_the_working_directory(tmp_path: Path) -> None:
    from hermes_state import SessionDB as HermesAgentSessionDB

    with HermesAgentSessionDB(db_path=tmp_path / "state.db") as db:
        db.create_session("s", "cli", cwd="/srv/project")
        db.create_session("s-2", "cli", parent_session_id="s", cwd="/srv/project/sub")
    spec = StoreSpec("sqlite", path=str(tmp_path / "state.db"))
    assert run(spec, "SELECT id, cwd FROM sessions ORDER BY id") == [
        ("s", "/srv/project"),
        ("s-2", "/srv/project/sub"),
    ]
