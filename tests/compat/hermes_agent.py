"""Helpers of the compat suite: stores written by a real Hermes Agent 0.19, and what
hermes must hold after importing or upgrading one (``ha_build_store.py`` builds it)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from hermes.compat.session_db import SessionDB

VERSION = "0.19.0"
HERE = Path(__file__).parent


def play_session(python: Path | str, script: Path, home: Path) -> dict[str, Any]:
    """What ``script`` (a session that prints one JSON document) prints, run by ``python``
    with ``home``, made fresh, as its Hermes home: the same script under hermes and under a
    real Hermes Agent 0.19 must print the same."""
    home.mkdir(parents=True)
    env = {**os.environ, "HERMES_HOME": str(home), "HOME": str(home),
           "HERMES_DISABLE_LAZY_INSTALLS": "1"}  # fmt: skip
    run = subprocess.run(
        [str(python), str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    shown: dict[str, Any] = json.loads(run.stdout)
    return shown


def build_store(python: Path, path: Path, *, extra_sessions: int = 0) -> list[dict]:
    """Write a state.db at ``path`` with Hermes Agent's own SessionDB; its message rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HERMES_HOME": str(path.parent / "ha-runtime-home"),
           "HERMES_DISABLE_LAZY_INSTALLS": "1"}  # fmt: skip
    done = subprocess.run(
        [str(python), str(HERE / "ha_build_store.py"), str(path), str(extra_sessions)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


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
    sessions = {r["session_id"] for r in rows} | {"root-2~archive"}
    imported = {m["message_uid"]: m for s in sessions
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
    # Hermes Agent's search names the session whose rows they were, as 0.19 did.
    assert [h["session_id"] for h in db.search_messages("noted")] == ["root-2"]
    assert db.search_messages("Lagos") == []  # rewound: taken back, not found
    exported = "".join(db.export_conversation("root-2"))
    assert "compacted summary of Lisbon" in exported and "noted" in exported
    assert db.coverage_violations() == [] and db.invariant_violations() == []
