"""The state store as the commands see it: opening it, and finding a conversation.

Read-only commands open the store read-only, so they are safe while a gateway writes.
A missing store is a sentence, not an empty database created behind the user's back;
a damaged one is a sentence too, and nothing is written to it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from hermes.cli._hermes_agent_store import upgraded_or_read_only
from hermes.config import load_config
from hermes.errors import HermesError
from hermes.state import SessionDB
from hermes.state.errors import HermesAgentStoreError
from hermes.state.location import StoreLocation, store_location


def open_db(
    location: StoreLocation,
    *,
    read_only: bool,
    synchronous: str | None = None,
    kind: type[SessionDB] = SessionDB,
) -> SessionDB:
    """Open the store; ``synchronous`` given means config.yaml is not read again. ``kind``:
    the class to open it as (Hermes Agent's SessionDB, for commands that answer in its
    shapes)."""
    return kind(
        db_path=location.path, url=location.url, read_only=read_only, synchronous=synchronous
    )


@contextmanager
def opened_store(
    *, read_only: bool, create: bool = False, kind: type[SessionDB] = SessionDB
) -> Iterator[SessionDB]:
    """Open the configured store for one command; damage becomes one sentence."""
    config = load_config()
    location = store_location(config=config)
    if not create and not location.exists:
        raise HermesError(
            f"No conversations yet: there is no state store at {location.label}. "
            "Start one with `hermes chat`."
        )
    synchronous = config.get("state.synchronous")
    with database_errors(location):
        try:
            db = open_db(location, read_only=read_only, synchronous=synchronous, kind=kind)
        except HermesAgentStoreError:
            assert location.path is not None  # only a SQLite file can be one
            with upgraded_or_read_only(location.path, read_only=read_only) as view:
                if view is not None:
                    yield view
                    return
            db = open_db(location, read_only=read_only, synchronous=synchronous, kind=kind)
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
    "conversation_root",
    "database_errors",
    "open_db",
    "opened_store",
    "rename_conversation",
    "resolve_conversation",
    "token_usage",
]
