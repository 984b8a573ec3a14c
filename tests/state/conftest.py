"""Fixtures for the store suite: one suite, run against SQLite and PostgreSQL.

``store`` and ``make_db`` (both backends, one fresh store per test) come from
``tests/stores.py``, shared by every suite; ``db`` is the first ``SessionDB`` on it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.state import SessionDB
from tests.stores import DBFactory


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Keep the user's HERMES_HOME (and its config.yaml) out of the store tests."""
    home = tmp_path_factory.mktemp("hermes_home")
    monkeypatch.setenv("HERMES_HOME", str(home))
    for name in ("HERMES_STATE_URL", "HERMES_STATE_SYNCHRONOUS"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def db(make_db: DBFactory) -> SessionDB:
    return make_db()
