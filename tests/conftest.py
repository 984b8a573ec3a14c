"""Shared test setup: every test gets its own HERMES_HOME and a clean environment."""

from __future__ import annotations

import signal
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

# Fixtures every suite uses without importing them: the fake LLM server, the stores.
pytest_plugins = (
    "tests.fakes.fixtures",
    "tests.fakes.mcp_venv",
    "tests.stores",
    "tests.hermes_agent_venv",
)

# Hermes Agent's own tests run in a pytest of their own, with their conftest and options
# (tests/compat/test_hermes_agent_suite.py starts it).
collect_ignore = ["hermes_agent_suite"]


_LEAKY_ENV = (
    "HERMES_MODEL",
    "HERMES_BASE_URL",
    "HERMES_API_KEY",
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "HERMES_STATE_URL",
    "HERMES_GATEWAY_KEY",
    "HERMES_DEBUG",
    "HERMES_PROFILE",
    # Where the Kanban board is: a worker started by a test's dispatch pins these.
    "HERMES_KANBAN_HOME",
    "HERMES_KANBAN_DB",
    "HERMES_KANBAN_BOARD",
    "HERMES_KANBAN_WORKSPACES_ROOT",
    "HERMES_KANBAN_ATTACHMENTS_ROOT",
)


@pytest.fixture(autouse=True)
def hermes_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """A private HERMES_HOME, so no test reads or writes the developer's real one."""
    home = tmp_path_factory.mktemp("hermes_home")
    monkeypatch.setenv("HERMES_HOME", str(home))
    for name in _LEAKY_ENV:
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture(autouse=True)
def _sigint_left_as_found(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that leaves this process's SIGINT ignored or blocked would hand that to
    every program a later test starts (exec keeps both), and ^C in a chat started then
    would be lost. Put it back, and name the test in the warnings summary."""
    handler = signal.getsignal(signal.SIGINT)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    yield
    changed = []
    if signal.getsignal(signal.SIGINT) is not handler:
        signal.signal(signal.SIGINT, handler if handler is not None else signal.SIG_DFL)
        changed.append("SIGINT's handler")
    if signal.pthread_sigmask(signal.SIG_SETMASK, mask) != mask:
        changed.append("the signal mask")
    if changed:  # put back first: the warning is an error under this suite's filters
        warnings.warn(f"{request.node.nodeid} left {' and '.join(changed)} changed", stacklevel=1)


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """Collect the files named on the command line folder by folder: pytest makes a second
    node for a folder named again after another folder's file, and that node misses the
    fixtures of the folder's conftest ("fixture ... not found")."""
    args = session.config.args
    first_seen: dict[str, int] = {}
    for arg in args:
        first_seen.setdefault(str(Path(arg.split("::")[0]).parent), len(first_seen))
    args.sort(key=lambda arg: first_seen[str(Path(arg.split("::")[0]).parent)])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Spread the tests marked slow over the first three quarters of the run: under ``-n``
    none is left to end the suite on one busy worker, and they do not all start gateway
    processes at the same moment (which starves the machine). The order is the same in
    every worker, as xdist requires."""
    slow = [item for item in items if item.get_closest_marker("slow")]
    if not slow:
        return
    fast = [item for item in items if not item.get_closest_marker("slow")]
    step = max(1, len(fast) * 3 // 4 // len(slow))
    spread: list[pytest.Item] = []
    for k, item in enumerate(slow):
        spread += [item, *fast[k * step : (k + 1) * step]]
    spread += fast[len(slow) * step :]
    items[:] = spread
