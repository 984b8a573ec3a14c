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
    subprocess.run(
        [str(hermes_agent_python), str(HERE / "ha_build_compacted_store.py"), str(store)],
        env=env,
        check=True,
        capture_output=True,
    )

    upgraded = hermes(hermes_home, "import", "hermes-agent", "--yes")
    assert upgraded.returncode == 0, upgraded.stderr

    with sqlite3.connect(store) as conn:
        titles = dict(conn.execute("SELECT id, title FROM sessions").fetchall())
    assert titles == {"sd~archive": "Sourdough", "sd": "Sourdough"}  # no "Sourdough #2"

    (row,) = json.loads(hermes(hermes_home, "sessions", "list", "--json").stdout)
    assert (row["title"], row["tip_id"]) == ("Sourdough", "sd")

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
