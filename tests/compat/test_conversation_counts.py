"""Tools that count sessions see conversations: a compression segment is told apart from
a new chat by Hermes Agent 0.19's own rule, read from the columns 0.19 writes
(``parent_session_id``, the parent's ``end_reason``, ``model_config``'s branch marker).

The count is 0.19's ``SessionDB.session_count(exclude_children=True)`` (hermes_state.py:
``_LISTABLE_CHILD_SQL`` and the ``_delegate_from`` filter), the rule its own session
lists use. The sources of agentburn and ai-spend-tracker could not be found, so their
count is taken to be 0.19's own; hermesd's (mudrii/hermesd, hermesd/db.py) is
``SELECT COUNT(*) FROM sessions``: every row, which for 0.19 too counts each segment of a
rotated conversation (``compression.in_place: false``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import hermes_state
from hermes.state import SessionDB
from tests.state.helpers import StoreSpec, chain

HERE = Path(__file__).parent

# hermes_state.py 0.19: SessionDB.session_count(exclude_children=True), as SQL.
CONVERSATION_COUNT_0_19 = (
    "SELECT COUNT(*) FROM sessions s WHERE (s.parent_session_id IS NULL"
    " OR json_extract(COALESCE(s.model_config, '{}'), '$._branched_from') IS NOT NULL"
    " OR EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session_id"
    " AND p.end_reason = 'branched' AND s.started_at >= p.ended_at))"
    " AND json_extract(COALESCE(s.model_config, '{}'), '$._delegate_from') IS NULL"
)
# hermes_state.py 0.19: _COMPRESSION_CHILD_SQL, the rows that continue a conversation.
COMPRESSION_CHILDREN_0_19 = (
    "SELECT COUNT(*) FROM sessions s WHERE EXISTS (SELECT 1 FROM sessions p"
    " WHERE p.id = s.parent_session_id AND p.end_reason = 'compression')"
    " AND json_extract(COALESCE(s.model_config, '{}'), '$._branched_from') IS NULL"
)


def one(spec: StoreSpec, sql: str) -> int:
    [(count,)] = spec.execute(sql)
    return int(count)


def four_hermes_conversations(db: SessionDB) -> None:
    """A chat compressed twice, another compressed once, a branch of the first (as
    hermes's own branching makes it) and a child hermes takes as a branch."""
    first = db.create_session(source="cli")
    chain(db, first, 3)
    second = db.create_session(source="cli")
    chain(db, second, 2)
    db.branch_session(first)
    with hermes_state.SessionDB(db_path=db.location) as compat:
        # A parent that was not ended for compression: 0.19's callers mean a new chat.
        compat.create_session("child", "telegram", parent_session_id=second)


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_0_19s_rule_counts_each_hermes_conversation_once(store: StoreSpec) -> None:
    with store.open() as db:
        four_hermes_conversations(db)
    assert one(store, "SELECT COUNT(DISTINCT conversation_id) FROM sessions") == 4
    assert one(store, CONVERSATION_COUNT_0_19) == 4
    assert one(store, COMPRESSION_CHILDREN_0_19) == 3  # the segments after each root


def test_a_branch_carries_0_19s_branch_marker(store: StoreSpec) -> None:
    with store.open() as db:
        root = db.create_session(source="cli")
        db.append_message(root, "user", "hello")
        branch = db.branch_session(root)
    [(marker,)] = store.execute("SELECT model_config FROM sessions WHERE id = ?", (branch,))
    assert json.loads(marker) == {"_branched_from": root}
    assert store.execute("SELECT model_config FROM sessions WHERE id = ?", (root,)) == [(None,)]


def test_branches_made_before_the_marker_get_it_on_upgrade(store: StoreSpec) -> None:
    with store.open() as db:
        root = db.create_session(source="cli")
        branch = db.branch_session(root)
    store.execute("UPDATE sessions SET model_config = NULL")
    # The store as migration 18 left it: migrations 20's and 21's columns go too
    # (migrations run from the highest version recorded).
    for column in ("origin", "context_from", "repeat_times", "completed"):
        store.execute(f"ALTER TABLE cron_jobs DROP COLUMN {column}")
    store.execute("DELETE FROM schema_version WHERE version >= 19")
    with store.open():
        pass
    [(marker,)] = store.execute("SELECT model_config FROM sessions WHERE id = ?", (branch,))
    assert json.loads(marker) == {"_branched_from": root}


def test_the_count_is_the_one_0_19_gives_its_own_store(
    tmp_path: Path, hermes_agent_python: Path
) -> None:
    """The same SQL on a store 0.19 wrote: four conversations, as 0.19's own
    ``session_count(exclude_children=True)`` says; hermesd's row count sees the rotated
    conversation's two segments there too."""
    path = tmp_path / "ha" / "state.db"
    path.parent.mkdir()
    env = {**os.environ, "HERMES_HOME": str(tmp_path / "ha-home"),
           "HERMES_DISABLE_LAZY_INSTALLS": "1"}  # fmt: skip
    built = subprocess.run(
        [str(hermes_agent_python), str(HERE / "ha_build_conversations_store.py"), str(path)],
        env=env, check=True, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert built.stdout.split() == ["4"]  # 0.19's session_count(exclude_children=True)
    spec = StoreSpec("sqlite", path=str(path))
    assert one(spec, CONVERSATION_COUNT_0_19) == 4
    assert one(spec, COMPRESSION_CHILDREN_0_19) == 1
    assert one(spec, "SELECT COUNT(*) FROM sessions") == 5  # hermesd: rows, not chats
