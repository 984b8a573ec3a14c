"""What Hermes Agent's callers set on an agent after making it still steers its turns.

Such callers change ``max_iterations``, ``persist_session`` or ``compression_enabled``
on a made agent; the turn reads them through the facade (``TurnHost.defaults``, the
binding, the context window), so the next turn follows them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.compat.agent import AIAgent as HermesAgentAIAgent
from hermes.state import SessionDB
from hermes.testing import ScriptedModel, tool_call
from tests.scripted import scripted_agent


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path=tmp_path / "state.db") as store:
        yield store


def test_a_later_max_iterations_caps_the_next_turn(
    db: SessionDB, tmp_path: Path, hermes_home: Path
) -> None:
    (tmp_path / "notes.txt").write_text("42\n")
    model = ScriptedModel([tool_call("read_file", {"path": "notes.txt"})] * 3 + ["done"])
    agent = scripted_agent(db, model, cwd=tmp_path)
    agent.max_iterations = 1

    answer = agent.chat("Read notes.txt until you are sure.")

    assert answer.startswith("I stopped after 1 steps")
    assert len(model.requests) == 1


def test_persist_session_turned_off_later_stops_the_writes(
    db: SessionDB, hermes_home: Path
) -> None:
    agent = scripted_agent(db, ScriptedModel(["one", "two"]))
    assert agent.chat("first") == "one"
    session = agent.session_id
    assert session is not None
    agent.persist_session = False

    assert agent.chat("second") == "two"

    assert [r["content"] for r in db.get_messages(session)] == ["first", "one"]


def test_compression_turned_off_later_is_not_attempted(db: SessionDB, hermes_home: Path) -> None:
    events: list[str] = []
    agent = scripted_agent(
        db,
        ScriptedModel(["ok"]),
        kind=HermesAgentAIAgent,  # 0.19's names for the window's settings
        event_callback=lambda kind, data: events.append(kind),
    )
    agent.compression_enabled = False
    agent.context_compressor.context_length = 10  # any context is over the threshold

    assert agent.chat("a message long enough to be over a ten-token window, surely") == "ok"

    assert "compressing" not in events


def test_a_model_set_later_is_the_one_the_segment_records(db: SessionDB, hermes_home: Path) -> None:
    model = ScriptedModel(["ok"])
    agent = scripted_agent(db, model)
    agent.model = "switched-model"

    assert agent.chat("hello") == "ok"

    assert model.requests[0].model == "switched-model"
    assert db.get_session(agent.session_id)["model"] == "switched-model"
