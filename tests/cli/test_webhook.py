"""`hermes webhook`: subscribe, list, test and remove routes of a running gateway.

The routes are Hermes Agent 0.19's ``webhook_subscriptions.json`` (0600), which a running
gateway reads again at its next request: a route subscribed while it runs is served, a
removed one is not, and a file written by 0.19 works in place. ``test`` posts a signed
event to the real gateway process and says what happened, or that nobody listens.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.testing.ports import free_port
from tests.compat.hermes_agent import build_store
from tests.gateway.harness import wait_for, write_config
from tests.gateway.processes import Gateway

pytestmark = pytest.mark.slow  # a gateway process

# What Hermes Agent 0.19's `hermes webhook subscribe alerts --deliver telegram
# --deliver-chat-id 42 --events deploy --prompt ...` writes.
WRITTEN_BY_0_19 = {
    "alerts": {
        "description": "Agent-created subscription: alerts",
        "events": ["deploy"],
        "secret": "0.19-secret-Kq2r9vXb7nY4tW1z",
        "prompt": "Deploy of {service} finished: {status}",
        "skills": [],
        "deliver": "log",
        "created_at": "2026-11-02T09:15:00Z",
    }
}


@pytest.fixture
def port(cli_env: Any, fake_llm: Any) -> int:
    port = free_port()
    write_config(cli_env.home, fake_llm.url, gateway={"platforms": {"webhook": {"port": port}}})
    return port


@pytest.fixture
def gateway(cli_env: Any, port: int) -> Iterator[Gateway]:
    running = Gateway(cli_env.home, "--workers", "1", "--grace", "0.2")
    try:
        running.wait_ready(port)
        yield running
    finally:
        running.proc.kill()
        running.proc.wait(10)


def _answers(gateway: Gateway, route: str) -> list[str]:
    marker = f"answer of '{route}' (delivery "
    return [line for line in gateway.output().splitlines() if marker in line]


def test_subscribe_list_test_and_remove_with_a_running_gateway(
    hermes: Any, cli_env: Any, gateway: Gateway
) -> None:
    made = hermes("webhook", "subscribe", "ci", "--events", "test", "--prompt", "CI says {message}")
    assert made.returncode == 0, made.stderr
    path = cli_env.home / "webhook_subscriptions.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    route = json.loads(path.read_text(encoding="utf-8"))["ci"]
    assert route["secret"] in made.stdout and len(route["secret"]) >= 32
    assert route["events"] == ["test"] and route["deliver"] == "log"

    listed = hermes("webhook", "list")
    assert "ci  (subscription)" in listed.stdout and "Events:  test" in listed.stdout

    tested = hermes("webhook", "test", "ci")  # served without a restart
    assert tested.returncode == 0, tested.stderr
    assert "202" in tested.stdout and "Accepted" in tested.stdout, tested.stdout
    wait_for(lambda: _answers(gateway, "ci"), timeout=30, interval=0.1)
    assert "echo: CI says Hello from hermes webhook test" in _answers(gateway, "ci")[0]

    assert hermes("webhook", "remove", "ci").returncode == 0
    assert json.loads(path.read_text(encoding="utf-8")) == {}
    gone = hermes("webhook", "test", "ci")
    assert gone.returncode == 1
    assert gone.stderr.strip() == "Error: No webhook route named 'ci': see `hermes webhook list`."


def test_a_subscriptions_file_written_by_hermes_agent_works_in_place(
    hermes: Any, cli_env: Any, gateway: Gateway
) -> None:
    path = cli_env.home / "webhook_subscriptions.json"
    path.write_text(json.dumps(WRITTEN_BY_0_19, indent=2), encoding="utf-8")
    payload = json.dumps({"service": "api", "status": "green"})
    tested = hermes("webhook", "test", "alerts", "--payload", payload, "--event", "deploy")
    assert "202" in tested.stdout, tested.stdout + tested.stderr
    wait_for(lambda: _answers(gateway, "alerts"), timeout=30, interval=0.1)
    assert "echo: Deploy of api finished: green" in _answers(gateway, "alerts")[0]
    ignored = hermes("webhook", "test", "alerts")  # a 'test' event: not one it takes
    assert "Ignored: the route takes only these events: deploy." in ignored.stdout


def test_test_says_when_no_gateway_listens(hermes: Any, port: int) -> None:
    assert hermes("webhook", "subscribe", "ci").returncode == 0
    tested = hermes("webhook", "test", "ci")
    assert tested.returncode == 1
    assert tested.stderr.strip() == (
        f"Error: No gateway answers at http://127.0.0.1:{port}/webhooks/ci: start it with "
        "`hermes gateway run`, with the webhook platform enabled."
    )


def test_subscribe_refuses_what_cannot_be_served(hermes: Any, cli_env: Any) -> None:
    email = hermes("webhook", "subscribe", "mail", "--deliver", "email")
    assert email.returncode == 1
    assert "delivers to 'email', which is not supported here" in email.stderr
    bare = hermes("webhook", "subscribe", "ping", "--deliver-only")
    assert bare.returncode == 1 and "deliver_only but delivers to 'log'" in bare.stderr
    assert not Path(cli_env.home / "webhook_subscriptions.json").exists()


@pytest.mark.hermes_agent
def test_importing_another_home_brings_its_subscriptions(
    hermes: Any, cli_env: Any, hermes_agent_venv_python: Path, tmp_path: Path
) -> None:
    their = tmp_path / "ha"
    build_store(hermes_agent_venv_python, their / "state.db")
    theirs = {**WRITTEN_BY_0_19, "ci": {**WRITTEN_BY_0_19["alerts"], "prompt": "theirs"}}
    (their / "webhook_subscriptions.json").write_text(json.dumps(theirs), encoding="utf-8")
    assert hermes("webhook", "subscribe", "ci", "--prompt", "ours").returncode == 0

    done = hermes("import", "hermes-agent", str(their / "state.db"))
    assert done.returncode == 0, done.stderr
    assert "Brought 1 webhook subscription(s): alerts." in done.stdout
    path = cli_env.home / "webhook_subscriptions.json"
    routes = json.loads(path.read_text(encoding="utf-8"))
    assert routes["alerts"] == WRITTEN_BY_0_19["alerts"] and routes["ci"]["prompt"] == "ours"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = hermes("import", "hermes-agent", str(their / "state.db"))
    assert "webhook subscription" not in again.stdout
