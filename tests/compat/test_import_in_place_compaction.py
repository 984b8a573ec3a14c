"""A Hermes Agent 0.19 session compacted in place, upgraded by hermes: the user still finds
it by the id and the title they know.

hermes keeps the archived rows as history in a segment of their own (``sd~archive``,
hermes.compat.importer), but the conversation keeps the title the user gave it (not
"Sourdough #2"), `sessions list` and `sessions search` name it ``sd``, Hermes Agent's
``search_messages`` names the session ``sd`` (whose rows they were), and resuming it by
its title or id continues it. The store is written by a real Hermes Agent 0.19.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from hermes.compat.session_db import SessionDB
from tests.cli.helpers import hermes_command
from tests.compat.hermes_agent import HERE
from tests.gateway.api_calls import call
from tests.gateway.harness import GatewayThread, write_config

pytestmark = pytest.mark.hermes_agent


def hermes(home: Path, *args: str, llm: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HERMES_HOME": str(home)}
    if llm:
        env.update(HERMES_BASE_URL=llm, HERMES_MODEL="fake-model")
    return subprocess.run(
        [*hermes_command(), *args],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def test_the_title_and_id_the_user_knows_survive(hermes_agent_python, hermes_home, fake_llm):
    store = hermes_home / "state.db"
    env = {**os.environ, "HERMES_HOME": str(hermes_home.parent / "ha-runtime")}
    built = subprocess.run(
        [str(hermes_agent_python), str(HERE / "ha_build_compacted_store.py"), str(store)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    as_0_19_reads_it = json.loads(built.stdout.splitlines()[-1])

    upgraded = hermes(hermes_home, "import", "hermes-agent", "--yes")
    assert upgraded.returncode == 0, upgraded.stderr

    with sqlite3.connect(store) as conn:
        titles = dict(conn.execute("SELECT id, title FROM sessions").fetchall())
    assert titles == {"sd~archive": "Sourdough", "sd": "Sourdough"}  # no "Sourdough #2"

    (row,) = json.loads(hermes(hermes_home, "sessions", "list", "--json").stdout)
    assert (row["title"], row["conversation_id"], row["tip_id"]) == ("Sourdough", "sd", "sd")
    shown = hermes(hermes_home, "sessions", "show", "sd", "--no-pager")
    assert "conversation sd ·" in shown.stdout, shown.stderr
    lineage = json.loads(hermes(hermes_home, "sessions", "lineage", "sd", "--json").stdout)
    assert lineage["conversation_id"] == "sd"

    # Read by its 0.19 id through 0.19's names, it answers as 0.19 does.
    with SessionDB(db_path=store, read_only=True) as db:
        assert db.get_conversation_root("sd") == as_0_19_reads_it["root"] == "sd"
        assert db.get_conversation_root("sd~archive") == "sd"
        for name, rows in (
            ("messages", db.get_messages("sd")),
            ("all_messages", db.get_messages("sd", include_inactive=True)),
            ("conversation", db.get_messages_as_conversation("sd")),
        ):
            assert [[r["role"], r["content"], r.get("active", 1)] for r in rows] == (
                as_0_19_reads_it[name]
            ), name
        [listed] = db.list_sessions_rich()
        assert listed["id"] == "sd" and "_lineage_root_id" not in listed

    write_config(hermes_home, fake_llm.url)
    with GatewayThread(hermes_home) as gateway:  # the HTTP API names it so too
        for named in ("sd", "sd~archive"):
            status, got = call(gateway, "GET", f"/api/sessions/{named}")
            assert status == 200 and got["id"] == got["session"]["id"] == "sd", got
        status, page = call(gateway, "GET", "/api/sessions/sd/messages")
        assert status == 200 and page["session_id"] == "sd"

    found = hermes(hermes_home, "sessions", "search", "starter")
    assert found.returncode == 0, found.stderr
    named = [line.split()[-1] for line in found.stdout.splitlines()[1:]]  # ID last
    assert named and set(named) == {"sd"}  # never "sd~archive"
    assert "Sourdough" in found.stdout

    with SessionDB(db_path=store, read_only=True) as db:  # Hermes Agent's search, for its readers
        hits = db.search_messages("feed starter")
    assert [h["session_id"] for h in hits] == ["sd"]

    resumed = hermes(hermes_home, "--resume", "Sourdough", "-z", "and baking?", llm=fake_llm.url)
    assert resumed.returncode == 0, resumed.stderr
    with SessionDB(db_path=store, read_only=True) as db:
        assert db.resolve_tip("sd") == "sd"
        assert [m["content"] for m in db.get_messages_as_conversation("sd")][-1] == (
            "echo: and baking?"
        )
