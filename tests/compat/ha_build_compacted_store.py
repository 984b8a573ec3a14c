"""Run by Hermes Agent 0.19's own python: a session the user titled, compacted in place.

"Sourdough" (id ``sd``): two turns, an in-place compaction (``archive_and_compact``), one
more turn. Argument: the state.db to write. Prints, as JSON, what 0.19 answers when a
tool reads the session by its id.
"""

import json
import sys
from pathlib import Path

from hermes_state import SessionDB

db = SessionDB(db_path=Path(sys.argv[1]))
db.create_session("sd", "cli", model="m1")
db.set_session_title("sd", "Sourdough")
db.append_message("sd", "user", "how do I feed a starter")
db.append_message("sd", "assistant", "equal parts flour and water, daily")
db.archive_and_compact("sd", [{"role": "user", "content": "summary: feeding a starter"}])
db.append_message("sd", "user", "and the levain?")
db.append_message("sd", "assistant", "build it the night before")


def read(rows):
    return [[r["role"], r["content"], r.get("active", 1)] for r in rows]


print(
    json.dumps(
        {
            "root": db.get_conversation_root("sd"),
            "messages": read(db.get_messages("sd")),
            "all_messages": read(db.get_messages("sd", include_inactive=True)),
            "conversation": read(db.get_messages_as_conversation("sd")),
        }
    )
)
db.close()
