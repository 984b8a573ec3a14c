"""Hermes Agent 0.19's ``gateway.run`` process side, as a tool that starts or supervises
the gateway calls it: ``start_gateway`` serves the home's gateway in the caller's event
loop until SIGTERM, ``python -m gateway.run`` is ``hermes gateway run`` and a wrong
config.yaml exits with 0.19's EX_CONFIG code; its notes read as 0.19's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from hermes.testing.ports import free_port

START = (
    "import asyncio\n"
    "from gateway.run import start_gateway\n"
    "print('started:', asyncio.run(start_gateway()), flush=True)\n"
)


def api_home(home: Path, port: int) -> dict[str, str]:
    (home / "config.yaml").write_text(
        f"gateway:\n  platforms:\n    api_server:\n      host: 127.0.0.1\n      port: {port}\n",
        encoding="utf-8",
    )
    return {**os.environ, "HERMES_HOME": str(home)}


def serving(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_start_gateway_serves_the_home_until_sigterm(hermes_home: Path) -> None:
    from gateway.run import GATEWAY_SERVICE_RESTART_EXIT_CODE, load_gateway_config_for_runner

    port = free_port()
    env = api_home(hermes_home, port)
    assert load_gateway_config_for_runner().get("gateway.platforms")["api_server"]["port"] == port
    gateway = subprocess.Popen(
        [sys.executable, "-c", START], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while not serving(port):
            assert gateway.poll() is None, gateway.communicate()
            assert time.monotonic() < deadline, "the gateway did not serve in time"
            time.sleep(0.1)
        state = json.loads((hermes_home / "gateway_state.json").read_text(encoding="utf-8"))
        assert (state["pid"], state["gateway_state"]) == (gateway.pid, "running")

        # A second one on the same port cannot start: False, the reason said, no traceback.
        second = subprocess.run(
            [sys.executable, "-c", START], env=env, capture_output=True, text=True, timeout=60
        )
        assert second.returncode == 0 and "started: False" in second.stdout
        assert "already in use" in second.stderr and "Traceback" not in second.stderr
    finally:
        gateway.send_signal(signal.SIGTERM)
        out, err = gateway.communicate(timeout=60)
    assert gateway.returncode == 0 and "started: True" in out.decode(), err.decode()
    assert GATEWAY_SERVICE_RESTART_EXIT_CODE == 75  # its store replaced under it: EX_TEMPFAIL


def test_a_wrong_config_exits_with_0_19s_fatal_config_code(hermes_home: Path) -> None:
    from gateway.run import GATEWAY_FATAL_CONFIG_EXIT_CODE

    (hermes_home / "config.yaml").write_text(
        "gateway:\n  platforms:\n    telegrum: {}\n", encoding="utf-8"
    )
    env = {**os.environ, "HERMES_HOME": str(hermes_home)}
    for command in (["-m", "gateway.run"], ["-m", "hermes", "gateway", "run"]):
        ran = subprocess.run(
            [sys.executable, *command], env=env, capture_output=True, text=True, timeout=60
        )
        assert ran.returncode == GATEWAY_FATAL_CONFIG_EXIT_CODE == 78, ran.stderr
        assert "gateway.platforms names 'telegrum'" in ran.stderr
        assert "Traceback" not in ran.stderr


def test_the_notes_read_as_0_19s(hermes_agent_python: Path, tmp_path: Path) -> None:
    from gateway.run import build_resume_recovery_note, render_notice_line

    calls = [
        ("restart_timeout", "", True),
        ("shutdown_timeout", "where were we?", True),
        (None, "", False),
        ("something", "go on", False),
    ]
    probe = (
        "import json, sys\n"
        "from gateway.run import build_resume_recovery_note as note, render_notice_line as line\n"
        "class N: text = '  ⚠ Credits 90% used \\n'\n"
        "calls = json.loads(sys.argv[1])\n"
        "print(json.dumps([note(r, m, interactive=i) for r, m, i in calls]"
        " + [line(N()), line(None)]))\n"
    )
    env = {**os.environ, "HERMES_HOME": str(tmp_path / "ha"), "HOME": str(tmp_path)}
    theirs = subprocess.run(
        [str(hermes_agent_python), "-c", probe, json.dumps(calls)],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip

    class Notice:
        text = "  ⚠ Credits 90% used \n"

    ours = [build_resume_recovery_note(r, m, interactive=i) for r, m, i in calls]
    ours += [render_notice_line(Notice()), render_notice_line(None)]
    assert ours == json.loads(theirs.stdout)


def test_a_gateway_asked_to_serve_several_profiles_exits_as_a_wrong_config(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.run import MultiplexConfigError, SecondaryPortBindingConfigError

    assert issubclass(SecondaryPortBindingConfigError, MultiplexConfigError)
    assert issubclass(MultiplexConfigError, RuntimeError)  # 0.19's handlers catch it so
    env = {**os.environ, "HERMES_HOME": str(hermes_home)}
    for config in ("gateway:\n  multiplex_profiles: true\n", "multiplex_profiles: 'yes'\n"):
        (hermes_home / "config.yaml").write_text(config, encoding="utf-8")
        ran = subprocess.run(
            [sys.executable, "-m", "hermes", "gateway", "run"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert ran.returncode == 78, ran.stderr
        if config.startswith("gateway"):  # 0.19's key, known: only the refusal is said
            assert len(ran.stderr.strip().splitlines()) == 1, ran.stderr
        said = [line for line in ran.stderr.splitlines() if line.startswith("Error")]
        assert "Traceback" not in ran.stderr
        assert said == [
            "Error: gateway.multiplex_profiles asks one gateway to serve several profiles, "
            "which hermes does not do: remove it from config.yaml and run each profile's own "
            "gateway (`hermes -p NAME gateway run`)."
        ]
    # 0.19's variable over the file: off, the gateway starts as ever; on, it is refused.
    from hermes.config import load_config
    from hermes.gateway.settings import check_single_profile

    monkeypatch.setenv("GATEWAY_MULTIPLEX_PROFILES", "off")
    check_single_profile(load_config(hermes_home / "config.yaml"))
    (hermes_home / "config.yaml").write_text("gateway:\n  platforms: {}\n", encoding="utf-8")
    monkeypatch.setenv("GATEWAY_MULTIPLEX_PROFILES", "true")
    with pytest.raises(MultiplexConfigError):
        check_single_profile(load_config(hermes_home / "config.yaml"))


def test_the_interrupted_while_waiting_answer_is_0_19s(
    hermes_agent_python: Path, tmp_path: Path
) -> None:
    """The answer of a turn stopped while it waited for the model starts as 0.19's does
    (its tools detect it so); one stopped elsewhere keeps hermes's short note."""
    from gateway.run import INTERRUPT_WAITING_FOR_MODEL_PREFIX

    from hermes.agent.turn_result import stopped_note

    theirs = subprocess.run(
        [str(hermes_agent_python), "-c",
         "import gateway.run as r; print(r.INTERRUPT_WAITING_FOR_MODEL_PREFIX, end='')"],
        env={**os.environ, "HERMES_HOME": str(tmp_path), "HERMES_DISABLE_LAZY_INSTALLS": "1"},
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert theirs == INTERRUPT_WAITING_FOR_MODEL_PREFIX
    assert stopped_note(2.04) == f"{theirs}2.0s elapsed)."
    assert stopped_note(None) == "(stopped)"
