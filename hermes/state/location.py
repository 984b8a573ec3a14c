"""Where the state store is: the one place that decides it, for every caller.

A location given outright wins: ``SessionDB(url=...)`` (a PostgreSQL URL or conninfo
string) over ``db_path=...`` (a path, or a postgresql:// URL), or `hermes migrate
--from/--to`; then ``state.url`` from the configuration (config.yaml, or
HERMES_STATE_URL, which ``hermes.config`` maps onto it); then the SQLite file
``$HERMES_HOME/state.db``. A ``postgresql://`` (or ``postgres://``) URL is PostgreSQL,
anything else without a scheme is a path to a SQLite file, and any other URL is refused
in one sentence rather than opened as a file of that odd name.

Deciding creates nothing: opening (``SessionDB``) makes ``$HERMES_HOME`` when it writes
the default file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hermes.config import Config, hermes_home, load_config
from hermes.redaction import mask_url
from hermes.state.errors import StoreUnavailableError

STATE_FILE = "state.db"
URL_PREFIXES = ("postgresql://", "postgres://")
# A scheme of two letters or more: `C:\\...` (one letter) stays a path.
_OTHER_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


@dataclass(frozen=True)
class StoreLocation:
    """Where the store is: a SQLite file (``path``) or a PostgreSQL ``url``; one of them."""

    path: Path | None = None
    url: str | None = None

    def __post_init__(self) -> None:
        if (self.path is None) == (self.url is None):
            raise ValueError("a StoreLocation is a path or a URL, exactly one of them")

    @property
    def label(self) -> str:
        """How messages name it: the path, or the URL with its password masked."""
        return str(self.path) if self.path is not None else mask_url(self.url or "")

    @property
    def exists(self) -> bool:
        """False only for a SQLite file that is not there (a server is asked when opened)."""
        return self.path is None or self.path.exists()


def location_of(where: str | Path) -> StoreLocation:
    """A location given outright: a ``postgresql://`` URL, or else a SQLite file path."""
    text = str(where)
    if text.startswith(URL_PREFIXES):
        return StoreLocation(url=text)
    _refuse_other_url(text)
    return StoreLocation(path=Path(text).expanduser())


def store_location(
    where: str | Path | None = None, *, url: str | None = None, config: Config | None = None
) -> StoreLocation:
    """The store to use: ``url`` (PostgreSQL: a URL or a conninfo string), else ``where``
    (a URL or a path), else ``state.url`` of ``config`` (read from $HERMES_HOME when not
    passed), else $HERMES_HOME/state.db."""
    if url:
        _refuse_other_url(url)
        return StoreLocation(url=url)
    if where is not None and str(where) != "":
        return location_of(where)
    configured = (config if config is not None else load_config()).get("state.url")
    if configured:
        return location_of(configured)
    return StoreLocation(path=hermes_home() / STATE_FILE)


def _refuse_other_url(text: str) -> None:
    if _OTHER_URL.match(text) and not text.startswith(URL_PREFIXES):
        scheme = text.split("://", 1)[0]
        # The URL itself is not repeated: it may hold a password mask_url does not know.
        raise StoreUnavailableError(
            f"hermes keeps its store in PostgreSQL or SQLite, not behind a {scheme}:// URL: "
            "give a postgresql:// URL or the path of a SQLite file."
        )
