"""Finding and naming conversations: by any segment id or by title, usage totals.

Shared by every surface (the CLI, the gateway's chat commands).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes.errors import HermesError
from hermes.state.backend import Row
from hermes.state.segments import numbered_title

if TYPE_CHECKING:
    from hermes.state.store import SessionDB


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


def conversation_root(db: SessionDB, ref: str) -> Row:
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
    return str(chain[0]["id"])


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
