"""Run by Hermes Agent 0.19's own python: chats as 0.19 leaves them ended, through ITS
SessionDB: a terminal chat closed (``cli_close``, as its CLI ends every chat on exit),
one left with /exit (``user_exit``), and a Telegram chat the user reset
(``session_reset``)."""

import sys
from pathlib import Path

from hermes_state import SessionDB

db = SessionDB(db_path=Path(sys.argv[1]))
for sid, source, reason in (
    ("reset", "telegram", "session_reset"),
    ("closed", "cli", "cli_close"),
    ("exited", "cli", "user_exit"),
):
    db.create_session(sid, source, model="m1")
    db.append_message(sid, "user", f"first question of {sid}")
    db.append_message(sid, "assistant", f"first answer of {sid}")
    db.end_session(sid, reason)
db.close()
