"""The runs API (POST /v1/runs and its events, stop, steer, approval) against a real
gateway over real HTTP, plain aiohttp; the model is the scripted fake."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.state import SessionDB
from tests.fakes.llm_server import hang, stall, text, tool_call
from tests.gateway.harness import GatewayThread, wait_for, workspace_of, write_config
from tests.gateway.run_calls import events, request, wait_status


def _start(gateway, body: dict, **headers: str) -> tuple[int, dict, dict]:
    return request(gateway, gateway.api_key, "POST", "/v1/runs", json=body, headers=headers)


def test_a_late_client_and_a_resuming_one_see_every_event_once(gateway, fake_llm) -> None:
    fake_llm.script(stall("alpha beta gamma delta", after_chunks=1, seconds=1.0))
    status, started, _ = _start(gateway, {"input": "tell me"})
    assert status == 202 and started["status"] == "started"
    run_id = started["run_id"]
    # Join only after the first delta is recorded.
    wait_for(lambda: request(gateway, gateway.api_key, "GET", f"/v1/runs/{run_id}")[1]
             ["last_event"] is not None)  # fmt: skip
    late = events(gateway, gateway.api_key, run_id)
    ids = [n for n, _ in late]
    assert ids == list(range(1, len(ids) + 1))
    names = [e["event"] for _, e in late]
    assert names[0] == "message.delta" and names[-1] == "run.completed"
    assert "".join(e["delta"] for _, e in late if e["event"] == "message.delta") == (
        "alpha beta gamma delta"
    )
    assert late[-1][1]["output"] == "alpha beta gamma delta"
    assert all(e["run_id"] == run_id for _, e in late)
    # A client that read one event, went away and came back with Last-Event-ID.
    first = events(gateway, gateway.api_key, run_id, take=1)
    rest = events(gateway, gateway.api_key, run_id, last_id=first[-1][0])
    assert first + rest == late
    status, run, _ = request(gateway, gateway.api_key, "GET", f"/v1/runs/{run_id}")
    assert run["status"] == "completed" and run["output"] == "alpha beta gamma delta"
    assert run["object"] == "hermes.run" and run["last_event"] == "run.completed"
    # The run's conversation holds the turn, once.
    rows = gateway.db.get_conversation_messages(started["session_id"])
    assert [(m["role"], m["content"]) for m in rows] == [
        ("user", "tell me"),
        ("assistant", "alpha beta gamma delta"),
    ]


def test_a_run_continues_the_conversation_it_names(gateway, fake_llm) -> None:
    _, first, _ = _start(gateway, {"input": "one"})
    wait_status(gateway, gateway.api_key, first["run_id"], "completed")
    _, second, _ = _start(gateway, {"input": "two", "session_id": first["session_id"]})
    assert second["session_id"] == first["session_id"]
    done = wait_status(gateway, gateway.api_key, second["run_id"], "completed")
    assert done["output"] == "echo: two"
    rows = gateway.db.get_conversation_messages(first["session_id"])
    assert [m["content"] for m in rows] == ["one", "echo: one", "two", "echo: two"]


def test_stop_interrupts_a_running_turn(gateway, fake_llm) -> None:
    fake_llm.script(hang(30))
    _, started, _ = _start(gateway, {"input": "take your time"})
    run_id = started["run_id"]
    wait_for(lambda: fake_llm.requests)
    status, stopping, _ = request(
        gateway, gateway.api_key, "POST", f"/v1/runs/{run_id}/stop", json={}
    )
    assert status == 200 and stopping["status"] == "stopping"
    seen = events(gateway, gateway.api_key, run_id)
    assert seen[-1][1]["event"] == "run.cancelled"
    assert wait_status(gateway, gateway.api_key, run_id, "cancelled")["status"] == "cancelled"


def test_steering_joins_the_turn_before_its_next_model_call(gateway, fake_llm) -> None:
    fake_llm.script(hang(3, then=tool_call("read_file", {"path": "notes.txt"})), text("done"))
    _, started, _ = _start(gateway, {"input": "read my notes"})
    run_id = started["run_id"]
    wait_for(lambda: fake_llm.requests)
    status, steered, _ = request(
        gateway, gateway.api_key, "POST", f"/v1/runs/{run_id}/steer",
        json={"text": "answer in French"},
    )  # fmt: skip
    assert status == 202 and steered["status"] == "accepted"
    assert wait_status(gateway, gateway.api_key, run_id, "completed")["output"] == "done"
    second = fake_llm.requests[1]["messages"]
    assert second[-1] == {"role": "user", "content": "answer in French"}
    assert second[-2]["role"] == "tool"
    names = [e["event"] for _, e in events(gateway, gateway.api_key, run_id)]
    assert names == ["tool.started", "tool.completed", "message.delta", "run.completed"]


@pytest.fixture
def asking_gateway(hermes_home: Path, fake_llm, model_key: str):
    """A gateway on which ``touch *canary`` needs approval."""
    write_config(hermes_home, fake_llm.url, terminal={"dangerous_patterns": [r"touch \S*canary"]})
    with GatewayThread(hermes_home) as running:
        yield running


@pytest.mark.parametrize("choice", ["once", "deny"])
def test_a_risky_command_waits_for_approval_over_the_api(
    asking_gateway, fake_llm, hermes_home: Path, choice: str
) -> None:
    gateway = asking_gateway
    fake_llm.script(tool_call("terminal", {"command": "touch yes-canary"}), text("finished"))
    _, started, _ = _start(gateway, {"input": "make the canary"})
    run_id = started["run_id"]
    waiting = wait_status(gateway, gateway.api_key, run_id, "waiting_for_approval")
    assert waiting["last_event"] == "approval.request"
    request_event = [e for _, e in events(gateway, gateway.api_key, run_id, take=2)][-1]
    assert request_event["event"] == "approval.request"
    assert request_event["command"] == "touch yes-canary" and "once" in request_event["choices"]
    status, answered, _ = request(
        gateway, gateway.api_key, "POST", f"/v1/runs/{run_id}/approval", json={"choice": choice}
    )
    assert status == 200 and answered["choice"] == choice and answered["resolved"] == 1
    assert wait_status(gateway, gateway.api_key, run_id, "completed")["output"] == "finished"
    assert (workspace_of(hermes_home) / "yes-canary").exists() is (choice == "once")
    result = fake_llm.requests[1]["messages"][-1]
    assert result["role"] == "tool"
    assert result["content"].startswith("Refused:") is (choice == "deny")
    names = [e["event"] for _, e in events(gateway, gateway.api_key, run_id)]
    assert "approval.responded" in names
    # Nothing pending any more.
    status, body, _ = request(
        gateway, gateway.api_key, "POST", f"/v1/runs/{run_id}/approval", json={"choice": "once"}
    )
    assert status == 409 and body["error"]["code"] == "approval_not_pending"


def test_idempotency_key_returns_the_same_run_and_refuses_another_body(gateway, fake_llm) -> None:
    status, first, headers = _start(gateway, {"input": "once only"}, **{"Idempotency-Key": "k1"})
    assert status == 202 and "Idempotency-Replayed" not in headers
    status, again, headers = _start(gateway, {"input": "once only"}, **{"Idempotency-Key": "k1"})
    assert status == 202 and again["run_id"] == first["run_id"]
    assert headers["Idempotency-Replayed"] == "true"
    status, body, _ = _start(gateway, {"input": "something else"}, **{"Idempotency-Key": "k1"})
    assert status == 409 and body["error"]["code"] == "idempotency_key_conflict"
    wait_status(gateway, gateway.api_key, first["run_id"], "completed")
    assert [r for r in fake_llm.requests if r["messages"][-1]["content"] == "once only"]
    assert len(fake_llm.requests) == 1


def test_unknown_runs_and_bad_input_get_clear_errors(gateway) -> None:
    status, body, _ = request(gateway, gateway.api_key, "GET", "/v1/runs/run_nope")
    assert status == 404 and body["error"]["code"] == "run_not_found"
    status, body, _ = _start(gateway, {"input": ""})
    assert status == 400 and "'input'" in body["error"]["message"]
    status, body, _ = _start(gateway, {"input": "hi", "model": "nope"})
    assert status == 404 and body["error"]["code"] == "model_not_found"


def test_runs_live_in_the_store(gateway, fake_llm) -> None:
    _, started, _ = _start(gateway, {"input": "remember me"})
    wait_status(gateway, gateway.api_key, started["run_id"], "completed")
    with SessionDB(db_path=gateway.home / "state.db") as other:
        row = other._conn.execute(
            "SELECT status FROM api_runs WHERE id = ?", (started["run_id"],)
        ).fetchone()
    assert row["status"] == "completed"


def test_a_run_goes_on_after_a_stored_response(gateway, client) -> None:
    first = client.responses.create(model="fake-model", input="my name is Ada")
    _, started, _ = _start(gateway, {"input": "my name?", "previous_response_id": first.id})
    wait_status(gateway, gateway.api_key, started["run_id"], "completed")
    rows = gateway.db.get_conversation_messages(started["session_id"])
    assert [m["content"] for m in rows] == [
        "my name is Ada",
        "echo: my name is Ada",
        "my name?",
        "echo: my name?",
    ]
    status, body, _ = _start(gateway, {"input": "x", "previous_response_id": "resp_nope"})
    assert status == 404 and body["error"]["code"] == "previous_response_not_found"


def test_steering_after_the_last_model_call_is_reported_unused(gateway, fake_llm) -> None:
    fake_llm.script(hang(3, then=text("done already")))
    _, started, _ = _start(gateway, {"input": "quick one"})
    run_id = started["run_id"]
    wait_for(lambda: fake_llm.requests)
    request(gateway, gateway.api_key, "POST", f"/v1/runs/{run_id}/steer", json={"text": "late"})
    wait_status(gateway, gateway.api_key, run_id, "completed")
    seen = [e for _, e in events(gateway, gateway.api_key, run_id)]
    assert seen[-2] == {**seen[-2], "event": "run.steer_unused", "texts": ["late"]}
    assert seen[-1]["event"] == "run.completed"


def test_an_unanswered_approval_expires_and_the_command_is_refused(
    hermes_home: Path, fake_llm, model_key: str
) -> None:
    write_config(
        hermes_home,
        fake_llm.url,
        terminal={"dangerous_patterns": [r"touch \S*canary"]},
        gateway={"api_approval_timeout": 1},
    )
    fake_llm.script(tool_call("terminal", {"command": "touch late-canary"}), text("gave up"))
    with GatewayThread(hermes_home) as gateway:
        _, started, _ = _start(gateway, {"input": "make it"})
        run_id = started["run_id"]
        assert wait_status(gateway, gateway.api_key, run_id, "completed")["output"] == "gave up"
        names = [e["event"] for _, e in events(gateway, gateway.api_key, run_id)]
    assert names.index("approval.request") < names.index("approval.expired")
    assert not (hermes_home / "late-canary").exists()
    assert fake_llm.requests[1]["messages"][-1]["content"].startswith("Refused:")
