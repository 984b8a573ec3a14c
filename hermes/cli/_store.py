"""The state store as the commands see it: opening it, and finding a conversation.

Read-only commands open the store read-only, so they are safe while a gateway writes.
A missing store is a sentence, not an empty database created behind the user's back;
a damaged one is a sentence too, and nothing is written to it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hermes.config import hermes_home, load_config
from hermes.errors import HermesError
from hermes.secrets import mask_url
from hermes.state import SessionDB


@dataclass(frozen=True)
class StoreLocation:
    """Where the store is: a SQLite file (``path``) or a PostgreSQL ``url``."""

    path: Path | None = None
    url: str | None = None

    @property
    def label(self) -> str:
        return str(self.path) if self.path is not None else mask_url(self.url or "")

    @property
    def exists(self) -> bool:
        return self.path is None or self.path.exists()


def store_location(state_url: str | None = None, *, use_config: bool = True) -> StoreLocation:
    """The configured store: ``state.url`` (or HERMES_STATE_URL), else $HERMES_HOME/state.db."""
    url = state_url
    if url is None and use_config:
        url = load_config().get("state.url")
    url = url or os.environ.get("HERMES_STATE_URL")
    if url:
        return StoreLocation(url=url)
    return StoreLocation(path=hermes_home() / "state.db")


def open_db(
    location: StoreLocation, *, read_only: bool, synchronous: str | None = None
) -> SessionDB:
    """Open the store; ``synchronous`` given means config.yaml is not read again."""
    if location.path is not None:
        return SessionDB(db_path=location.path, read_only=read_only, synchronous=synchronous)
    return SessionDB(url=location.url, read_only=read_only, synchronous=synchronous)


@contextmanager
def opened_store(*, read_only: bool, create: bool = False) -> Iterator[SessionDB]:
    """Open the configured store for one command; damage becomes one sentence."""
    config = load_config()
    location = store_location(config.get("state.url"), use_config=False)
    if not create and not location.exists:
        raise HermesError(
            f"No conversations yet: there is no state store at {location.label}. "
            "Start one with `hermes chat`."
        )
    with database_errors(location):
        db = open_db(location, read_only=read_only, synchronous=config.get("state.synchronous"))
        try:
            yield db
        finally:
            db.close()


@contextmanager
def database_errors(location: StoreLocation) -> Iterator[None]:
    """Turn a raw SQLite error (a damaged page found mid-query) into a sentence."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise HermesError(
            f"The state store {location.label} is damaged ({exc}); nothing was changed. "
            "Run `hermes doctor`, and restore the file from a backup if it fails."
        ) from exc


# Conversation lookups live with the store; re-exported for the CLI's modules.
from hermes.state.lookup import (  # noqa: E402
    conversation_root,
    rename_conversation,
    resolve_conversation,
    token_usage,
)

__all__ = [
    "StoreLocation",
    "conversation_root",
    "database_errors",
    "open_db",
    "opened_store",
    "rename_conversation",
    "resolve_conversation",
    "store_location",
    "token_usage",
]
