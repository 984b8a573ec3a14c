"""`hermes import hermes-agent` against a state.db written by a real Hermes Agent 0.19.

The package is installed into a throwaway venv (cached under /tmp by version); the
test skips only when pip cannot get it, and HERMES_REQUIRE_HERMES_AGENT=1 (set by
.ci/run) turns that skip into a failure.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.compat.session_db import SessionDB

VERSION = "0.19.0"
HERE = Path(__file__).parent
HERMES = str(Path(sys.executable).parent / "hermes")


@pytest.fixture(scope="session")
def hermes_agent_python() -> Path:
    venv = Path(f"/tmp/hermes-agent-{VERSION}-venv")
    python = venv / "bin" / "python"
    if not (venv / ".ok").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        pip = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"hermes-agent=={VERSION}"],
            capture_output=True, text=True,
        )  # fmt: skip
        if pip.returncode != 0:
            why = f"pip cannot install hermes-agent=={VERSION}: {pip.stderr[-500:]}"
            if os.environ.get("HERMES_REQUIRE_HERMES_AGENT") == "1":
                pytest.fail(why)
            pytest.skip(why)
        (venv / ".ok").touch()
    return python


def build_store(python: Path, tmp_path: Path) -> tuple[Path, list[dict]]:
    path = tmp_path / "ha" / "state.db"
    path.parent.mkdir()
    env = {**os.environ, "HERMES_HOME": str(tmp_path / "ha-home"), "HERMES_DISABLE_LAZY_INSTALLS": "1"}  # fmt: skip
    done = subprocess.run([str(python), str(HERE / "ha_build_store.py"), str(path)],
                          env=env, capture_output=True, text=True, check=True)  # fmt: skip
    return path, json.loads(done.stdout.strip().splitlines()[-1])


def started_at(path: Path) -> dict[str, float]:
    with sqlite3.connect(path) as conn:
        found = dict(conn.execute("SELECT id, started_at FROM sessions"))
    conn.close()
    return found


def hermes(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([HERMES, *args], capture_output=True, text=True)


def check_imported(db: SessionDB, rows: list[dict]) -> None:
    """Every row of the Hermes Agent store, as it means there, in the hermes store ``db``.

    Rows archived by an in-place compaction are history in ``<id>~archive`` (searchable,
    exported, not in the context); rewound rows are undone; the live rows are the context.
    """
    segments = {s: db.get_segments(s) for s in ("root-2", "side")}
    assert [s["id"] for s in segments["root-2"]] == ["root", "root-2~archive", "root-2"]
    assert [s["lineage"] for s in segments["root-2"]] == ["root", "compression", "compression"]
    assert [s["id"] for s in segments["side"]] == ["side"]
    assert segments["side"][0]["lineage"] == "branch"
    imported = {m["message_uid"]: m for s in ("root", "root-2~archive", "root-2", "side")
                for m in db.get_messages(s, include_undone=True)}  # fmt: skip
    assert len(imported) == len(rows)
    # Up to the newest archived row, what is not live predates the live context.
    boundary = max(r["id"] for r in rows if not r["active"] and r["compacted"])
    for row in rows:
        got = imported[f"hermes-agent:{row['session_id']}:{row['id']}"]
        history = row["session_id"] == "root-2" and row["id"] <= boundary and not row["active"]
        assert got["session_id"] == row["session_id"] + ("~archive" if history else "")
        for key in ("role", "content", "tool_call_id", "tool_name", "reasoning"):
            assert got[key] == row[key], key
        assert got["undone"] == (not row["active"] and not row["compacted"])
        if row["tool_calls"]:
            assert got["tool_calls"] == json.loads(row["tool_calls"])
    context = [m["content"] for m in db.get_messages_as_conversation("root-2")]
    assert context == [r["content"] for r in rows if r["session_id"] == "root-2" and r["active"]]
    assert "noted" not in context and "compacted summary of Lisbon" not in context
    assert [h["session_id"] for h in db.search_messages("noted")] == ["root-2~archive"]
    assert db.search_messages("Lagos") == []  # rewound: taken back, not found
    exported = "".join(db.export_conversation("root-2"))
    assert "compacted summary of Lisbon" in exported and "noted" in exported
    assert db.coverage_violations() == [] and db.invariant_violations() == []


@pytest.mark.hermes_agent
def test_a_real_hermes_agent_store_is_imported_exactly_once(hermes_agent_python, tmp_path, hermes_home) -> None:  # fmt: skip
    source, rows = build_store(hermes_agent_python, tmp_path)
    started = started_at(source)
    before = (source.read_bytes(), source.stat().st_mtime_ns, sorted(source.parent.iterdir()))

    dry = hermes("import", "hermes-agent", "--dry-run", str(source))
    assert dry.returncode == 0, dry.stderr
    assert f"Would import 3 new sessions and {len(rows)} new messages" in dry.stdout
    assert not (hermes_home / "state.db").exists()  # a dry run changes nothing

    first = hermes("import", "hermes-agent", str(source))
    assert first.returncode == 0, first.stderr
    assert f"{len(rows)} new messages" in first.stdout and "Verified" in first.stdout

    db = SessionDB(db_path=hermes_home / "state.db")
    try:
        check_imported(db, rows)
        root = db.get_session("root")
        assert root["title"] == "Trip planning" and root["user_id"] == "u1"
        assert root["started_at"] == started["root"]  # its own time, not the import's
    finally:
        db.close()

    dry_again = hermes("import", "hermes-agent", "--dry-run", str(source))
    assert "Nothing to import" in dry_again.stdout, dry_again.stderr
    second = hermes("import", "hermes-agent", str(source))
    assert second.returncode == 0, second.stderr
    assert "Nothing to import" in second.stdout
    assert (source.read_bytes(), source.stat().st_mtime_ns, sorted(source.parent.iterdir())) == before  # fmt: skip
