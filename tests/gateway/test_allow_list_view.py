"""End to end (issue 59): a gateway user's view is an allow-list, not a deny-list.

A real gateway process is started from a folder OUTSIDE the home and outside /tmp
(under /var/tmp, as a service's ``/srv/app`` would be) that holds a secret ``.env``; a
folder beside it stands for ``/srv``, ``/opt`` or another user's home, which no list
names. A model that obeys planted lines (``tests/gateway/principals.py``) tries to read
both with ``read_file`` and with ``cat``, for a Telegram user and for an API principal:
neither sees them, while the system (``/usr``, ``/etc``) and the user's own workspace
stay in reach.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.fake_platforms import FakeTelegram
from tests.gateway.principals import TELEGRAM_TOKEN, configure, obedient, start

pytestmark = pytest.mark.slow  # gateway processes

START_SECRET = "start-folder-secret-61d0c2"
ELSEWHERE = "srv-data-of-the-host-93ab1e"


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram(TELEGRAM_TOKEN) as fake:
        yield fake


@pytest.fixture
def host() -> Iterator[Path]:
    """``app/`` (the gateway's start folder, its ``.env`` holding a secret), ``srv/``
    (a folder of the host nobody listed) and ``home/`` (the operator's HOME)."""
    root = Path(tempfile.mkdtemp(prefix="hermes-allow-list-", dir="/var/tmp"))
    for name in ("app", "srv", "home"):
        (root / name).mkdir()
    (root / "app" / ".env").write_text(f"DEPLOY_TOKEN={START_SECRET}\n", encoding="utf-8")
    (root / "srv" / "data.txt").write_text(f"{ELSEWHERE}\n", encoding="utf-8")
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_a_gateway_users_tools_see_the_system_and_their_workspace_only(
    hermes_home: Path, fake_llm, run_gateway, telegram: FakeTelegram, host: Path
) -> None:
    fake_llm.responder = obedient
    configure(hermes_home, fake_llm.url, telegram)
    app, srv = host / "app", host / "srv"
    gateway = start(run_gateway, telegram, cwd=app, env={"HOME": str(host / "home")})

    attempts = [
        f"READ: {app}/.env",
        f"READ: {srv}/data.txt",
        f"RUN: cat {app}/.env {srv}/data.txt; ls {host}; grep -r {START_SECRET} {host}",
    ]
    for words in attempts:
        for said in (gateway.telegram_says(42, words), gateway.chat("alice", words)[0]):
            assert "RESULT<<" in said, said
            assert START_SECRET not in said and ELSEWHERE not in said, said
    refused = gateway.telegram_says(42, f"READ: {app}/.env")
    assert "Refused" in refused and "outside your workspace" in refused, refused

    system = gateway.chat("alice", "RUN: head -c 20 /etc/os-release && ls /usr/bin/env && pwd")[0]
    assert "Exit code: 0" in system and "/usr/bin/env" in system, system
    works = gateway.telegram_says(42, "RUN: echo mine > mine.txt && cat mine.txt")
    assert "Exit code: 0" in works and "mine" in works, works
