"""A turn a crash cut off is answered once after the restart, or its user is told
(invariant 16), and the tool command it was running does not outlive it.

A real gateway process is SIGKILLed while the terminal tool runs a ``sleep``; the
``sleep`` survives its gateway (its own session); the next gateway on the store ends
it, then answers the cut turn from the stored history (whose tool result now says
"interrupted"), or with ``gateway.resume_interrupted: false`` stores one sentence saying
so. Both stores.
"""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path

import httpx
import psutil
import pytest

from hermes.gateway.work import INTERRUPTED_NOTICE
from hermes.state.context.wellformed import INTERRUPTED_RESULT
from tests.fakes import llm_server as fake
from tests.gateway.harness import wait_for, write_config
from tests.gateway.processes import HEADER, free_port
from tests.state.helpers import StoreSpec

pytestmark = pytest.mark.slow  # gateway processes killed mid-turn and restarted

SESSION = "crash-cut-1"


def sleeping(seconds: str) -> list[psutil.Process]:
    """The live ``sleep <seconds>`` processes (the tool command of the test)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if seconds in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def ask(url: str, key: str, text: str) -> None:
    """One chat completion; the gateway dies under it, so its failure is expected."""
    try:
        httpx.post(
            f"{url}/chat/completions",
            headers={"Authorization": f"Bearer {key}", HEADER: SESSION},
            json={"model": "fake-model", "messages": [{"role": "user", "content": text}]},
            timeout=60,
        )
    except httpx.HTTPError:
        pass


def answers(db, session: str) -> list[str]:
    """The final answers stored after the question, in order."""
    rows = [m for m in db.get_conversation_messages(session) if not m["undone"]]
    return [m["content"] for m in rows if m["role"] == "assistant" and not m.get("tool_calls")]


@pytest.mark.parametrize("resume", [True, False], ids=["answered", "told"])
def test_a_turn_cut_off_by_sigkill_is_answered_once_or_told_and_its_tool_ends(
    resume: bool,
    gateways_store: StoreSpec,
    hermes_home: Path,
    fake_llm: fake.FakeLLMServer,
    run_gateway,
) -> None:
    seconds = f"{300 + random.random():.6f}"
    # Without the sandbox: inside it the kernel ends the command with its gateway
    # (--die-with-parent), so only the fallback leaves one for the next start to end.
    write_config(
        hermes_home,
        fake_llm.url,
        gateway={"resume_interrupted": resume},
        terminal={"sandbox": "off"},
    )
    store = gateways_store
    fake_llm.strict_context = True

    def model(body: dict) -> fake.Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return fake.text("done, after the crash")
        return fake.tool_call("terminal", {"command": f"sleep {seconds}"})

    fake_llm.responder = model
    try:
        port = free_port()
        first = run_gateway("--api-server", f"127.0.0.1:{port}")
        url = first.wait_ready(port)
        key = (hermes_home / "api_key").read_text().strip()
        asking = threading.Thread(target=ask, args=(url, key, "run the build"), daemon=True)
        asking.start()
        wait_for(lambda: sleeping(seconds), timeout=30)

        # SIGKILL of the gateway, its supervisor and workers alike: no shutdown, no undo,
        # no re-queue (the tool command is a worker's child in a session of its own).
        workers = psutil.Process(first.proc.pid).children()
        for proc in [first.proc, *workers]:
            proc.kill()
        first.proc.wait(10)
        psutil.wait_procs(workers, timeout=10)
        assert sleeping(seconds), "the tool command died with its gateway: nothing to test"
        asking.join(30)

        port = free_port()
        second = run_gateway("--api-server", f"127.0.0.1:{port}")
        second.wait_ready(port)
        db = store.open()
        try:
            wait_for(lambda: answers(db, SESSION), timeout=30)
            wait_for(lambda: not sleeping(seconds), timeout=10)
            second.terminate()
            said = answers(db, SESSION)
            rows = db.get_conversation_messages(SESSION)
        finally:
            db.close()
    finally:  # a failing run must not leave its tool command behind
        for proc in sleeping(seconds):
            proc.kill()
    assert said == (["done, after the crash"] if resume else [INTERRUPTED_NOTICE])
    results = [m["content"] for m in rows if m["role"] == "tool"]
    assert results == [INTERRUPTED_RESULT]  # the killed tool's call is closed once
    assert fake_llm.stats()["invalid_contexts"] == 0
    resumed = [b for b in fake_llm.requests if b["messages"][-1]["role"] == "tool"]
    assert len(resumed) == (1 if resume else 0), json.dumps(resumed)[:500]
