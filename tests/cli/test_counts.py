"""Counts leave undone messages out, and lineage adds up (issue 14.8).

The store is built the way the agent builds it (appends, undo marks, rotations); the
real `hermes` reads it back.
"""

from __future__ import annotations

import json

from hermes.state import SessionDB
from tests.cli.helpers import rotate


def _alice(db_path, *, rotations: int = 0) -> tuple[str, str]:
    """'Alice chat': 6 standing messages and 8 undone, over ``rotations + 1`` segments."""
    with SessionDB(db_path=db_path) as db:
        root = db.create_session(source="cli", title="Alice chat")
        wrong = db.append_messages(root, [
            {"role": "user" if n % 2 == 0 else "assistant", "content": f"wrong {n}"}
            for n in range(8)
        ])  # fmt: skip
        db.mark_undone(root, [i for i in wrong.message_ids if i is not None])
        tip = root
        for n in range(6):
            tip = db.append_message(
                tip, "user" if n % 2 == 0 else "assistant", f"kept {n}"
            ).session_id
            if n < rotations:
                tip = rotate(db, tip, summary=f"[summary {n}]")
        return root, tip


def test_list_counts_standing_messages_and_shows_undone_apart(hermes, cli_env):
    root, _ = _alice(cli_env.home / "state.db")
    (row,) = json.loads(hermes("sessions", "list", "--json").stdout)
    assert (row["messages"], row["undone"]) == (6, 8)
    line = next(x for x in hermes("sessions", "list").stdout.splitlines() if "Alice" in x)
    assert line.split()[2] == "6" and "8 undone" in line


def test_resume_counts_standing_messages(chat, cli_env):
    root, _ = _alice(cli_env.home / "state.db")
    session = chat()
    session.command(f"/resume {root}", "Resumed 'Alice chat': 6 messages (and 8 undone)")


def test_lineage_of_seven_segments_is_flat_and_adds_up(hermes, cli_env):
    root, _ = _alice(cli_env.home / "state.db", rotations=6)
    result = hermes("sessions", "lineage", root)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "6 messages (+8 undone), 7 segments" in lines[0]
    assert lines[1] == "1 → 2 → 3 → 4 → 5 → 6 → 7"
    rows = [line.split() for line in lines[3:]]
    assert [r[0] for r in rows] == [str(n) for n in range(1, 8)]
    assert all(not line.startswith(" ") for line in lines[3:])
    assert sum(int(r[2]) for r in rows) == 6
    tree = json.loads(hermes("sessions", "lineage", root, "--json").stdout)
    node, depth, counted = tree["root"], 1, tree["root"]["messages"]
    while node["children"]:
        (node,) = node["children"]
        depth += 1
        counted += node["messages"]
    assert (depth, counted, tree["messages"], tree["undone"]) == (7, 6, 6, 8)
