"""A gateway whose state.db is deleted or replaced stops, and acknowledges nothing more.

Before: the gateway answered 200 and cron kept running, all into the unlinked file, and
at exit those turns were gone. Now every write checks that the file at the path is the
one it writes, and the gateway watches it: it logs one sentence and exits (a worker with
STORE_GONE_EXIT, on which the supervisor stops them all rather than start a worker on a
new, empty file).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes.cli.gateway_workers import STORE_GONE_EXIT
from tests.gateway.harness import HEADER, stored_api_key, wait_for, write_config
from tests.gateway.processes import free_port

pytestmark = pytest.mark.slow  # gateway processes started and stopped


def _ask(url: str, words: str, session: str | None = None) -> httpx.Response:
    body = {"model": "fake-model", "messages": [{"role": "user", "content": words}]}
    headers = {"Authorization": f"Bearer {stored_api_key()}"}
    if session:
        headers[HEADER] = session
    return httpx.post(f"{url}/chat/completions", json=body, headers=headers, timeout=30)


def _start(run_gateway: Any, workers: int) -> tuple[Any, str]:
    port = free_port()
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", str(workers))
    return gateway, gateway.wait_ready(port)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_deleted_store_stops_the_gateway(
    hermes_home: Path, fake_llm: Any, run_gateway: Any, workers: int
) -> None:
    write_config(hermes_home, fake_llm.url)
    gateway, url = _start(run_gateway, workers)
    first = _ask(url, "before the delete")
    assert first.status_code == 200
    db = hermes_home / "state.db"
    db.unlink()
    try:
        late = _ask(url, "after the delete", first.headers[HEADER])
        assert late.status_code != 200, "a turn was acknowledged into a deleted file"
    except httpx.HTTPError:
        pass  # the gateway was already gone: nothing acknowledged either
    code = gateway.proc.wait(30)
    expected = STORE_GONE_EXIT if workers == 1 else 1
    assert code == expected, gateway.output()
    assert "was deleted or replaced while hermes had it open" in gateway.output()
    assert not db.exists(), "a worker started again on a new, empty state.db"
    state = (hermes_home / "gateway_state.json").read_text()
    if workers == 1:  # with workers, another one may have been the first to stop
        assert "deleted or replaced" in state


def test_a_replaced_store_stops_the_gateway(
    hermes_home: Path, fake_llm: Any, run_gateway: Any
) -> None:
    write_config(hermes_home, fake_llm.url)
    gateway, url = _start(run_gateway, 1)
    assert _ask(url, "kept").status_code == 200
    db = hermes_home / "state.db"
    shutil.copy(db, hermes_home / "restored.db")
    (hermes_home / "restored.db").replace(db)
    wait_for(lambda: gateway.proc.poll() is not None, timeout=30)
    assert gateway.proc.returncode == STORE_GONE_EXIT, gateway.output()


def test_a_deleted_wal_stops_the_gateway(
    hermes_home: Path, fake_llm: Any, run_gateway: Any
) -> None:
    # Its commits would go to the unlinked log, which no process reads again (issue 53:
    # what another process does when it took itself for the store's last user).
    write_config(hermes_home, fake_llm.url)
    gateway, url = _start(run_gateway, 1)
    first = _ask(url, "before the delete")
    assert first.status_code == 200
    (hermes_home / "state.db-wal").unlink()
    try:
        late = _ask(url, "after the delete", first.headers[HEADER])
        assert late.status_code != 200, "a turn was acknowledged into a deleted -wal"
    except httpx.HTTPError:
        pass  # the gateway was already gone: nothing acknowledged either
    assert gateway.proc.wait(30) == STORE_GONE_EXIT, gateway.output()
    assert "-wal file) was deleted or replaced while hermes" in gateway.output()
