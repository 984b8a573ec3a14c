"""One place decides where the store is (``hermes.state.location``).

Precedence: a location given outright (a URL over a path) > HERMES_STATE_URL > state.url
in config.yaml > $HERMES_HOME/state.db. A URL of another kind of database is refused
in one sentence, never opened as a file of that odd name; deciding creates nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.config import Config, defaults
from hermes.state import SessionDB
from hermes.state.errors import StoreUnavailableError
from hermes.state.location import StoreLocation, location_of, store_location

FILE_URL = "postgresql://hermes@file-host/hermes"
ENV_URL = "postgresql://hermes@env-host/hermes"


def _config_file(home: Path, url: str) -> None:
    (home / "config.yaml").write_text(f"state:\n  url: '{url}'\n")


def test_without_anything_set_it_is_the_file_in_hermes_home(isolated_home: Path) -> None:
    assert store_location() == StoreLocation(path=isolated_home / "state.db")


def test_the_precedence_url_path_environment_file_default(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _config_file(isolated_home, FILE_URL)
    assert store_location() == StoreLocation(url=FILE_URL)
    monkeypatch.setenv("HERMES_STATE_URL", ENV_URL)
    assert store_location() == StoreLocation(url=ENV_URL)
    mine = tmp_path / "mine.db"
    assert store_location(mine) == StoreLocation(path=mine)
    given = "postgresql://hermes@given-host/hermes"
    assert store_location(mine, url=given) == StoreLocation(url=given)


def test_a_config_passed_in_is_used_and_the_file_not_read(isolated_home: Path) -> None:
    (isolated_home / "config.yaml").write_text("state: [not, a, mapping\n")  # unreadable
    config = Config(values=defaults() | {"state.url": FILE_URL}, path=isolated_home / "x.yaml")
    assert store_location(config=config) == StoreLocation(url=FILE_URL)


def test_a_path_may_be_a_postgresql_url_and_a_file_named_postgres_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert location_of("postgres://h/d") == StoreLocation(url="postgres://h/d")
    monkeypatch.chdir(tmp_path)
    with SessionDB(db_path="postgres.db") as db:
        assert db.backend.kind == "sqlite"
    assert (tmp_path / "postgres.db").is_file()


@pytest.mark.parametrize("where", ["mysql://hermes:s3cret@db/hermes", "sqlite:///tmp/state.db"])
def test_a_url_of_another_database_is_one_sentence_and_creates_nothing(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for attempt in (lambda: location_of(where), lambda: SessionDB(db_path=where),
                    lambda: SessionDB(url=where)):  # fmt: skip
        with pytest.raises(StoreUnavailableError) as caught:
            attempt()
        message = str(caught.value)
        assert "\n" not in message and message.endswith("."), message
        assert "give a postgresql:// URL or the path of a SQLite file" in message
        assert "s3cret" not in message
    assert list(tmp_path.iterdir()) == []


def test_deciding_creates_nothing_and_opening_creates_a_private_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "new-home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    assert store_location() == StoreLocation(path=home / "state.db")
    assert not home.exists()
    SessionDB().close()
    assert (home / "state.db").is_file()
    assert home.stat().st_mode & 0o777 == 0o700


def test_a_location_is_a_path_or_a_url() -> None:
    with pytest.raises(ValueError):
        StoreLocation()
    with pytest.raises(ValueError):
        StoreLocation(path=Path("a.db"), url=FILE_URL)
    assert StoreLocation(url="postgresql://u:pw@h/d").label == "postgresql://u:[redacted]@h/d"
