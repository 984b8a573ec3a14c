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
from hermes.state import SessionDB
from hermes.state.segments import numbered_title


@dataclass(frozen=True)
class StoreLocation:
    """Where the store is: a SQLite file (``path``) or a PostgreSQL ``url``."""

    path: Path | None = None
    url: str | None = None

    @property
    def label(self) -> str:
        return str(self.path) if self.path is not None else _hide_password(self.url or "")

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


def _hide_password(url: str) -> str:
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    credentials, host = rest.rsplit("@", 1)
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}"


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


# -- finding a conversation -----------------------------------------------------------


def resolve_conversation(db: SessionDB, ref: str) -> str:
    """The tip of the conversation ``ref`` names: any segment id, or a title (newest)."""
    ref = ref.strip()
    if db.get_session(ref) is not None:
        return db.resolve_tip(ref)
    tip = db.find_conversation_by_title(ref)
    if tip is not None:
        return tip
    raise HermesError(
        f"No conversation with the id or title '{ref}'; run `hermes sessions list` to see them."
    )


def conversation_root(db: SessionDB, ref: str) -> dict:
    """The root segment of the conversation ``ref`` names."""
    tip = resolve_conversation(db, ref)
    return db.get_segments(tip)[0]


def rename_conversation(db: SessionDB, ref: str, title: str | None) -> str:
    """Title the conversation; later segments become '<title> #N'. Returns the root id."""
    chain = db.get_segments(resolve_conversation(db, ref))
    for segment in chain:
        if segment["segment_index"] <= 1:
            db.set_title(segment["id"], title)
        else:
            db.set_title(segment["id"], numbered_title(title, segment["segment_index"]))
    return chain[0]["id"]


def token_usage(db: SessionDB, session_id: str) -> dict[str, dict[str, int]]:
    """Input/output tokens of the segment and of its whole conversation."""
    chain = db.get_segments(session_id)
    segment = next(s for s in chain if s["id"] == session_id)
    return {
        "segment": {"input": segment["input_tokens"], "output": segment["output_tokens"]},
        "conversation": {
            "input": sum(s["input_tokens"] for s in chain),
            "output": sum(s["output_tokens"] for s in chain),
        },
    }
