"""Run by Hermes Agent 0.19's own python: a session the user titled, compacted in place.

"Sourdough" (id ``sd``): two turns, an in-place compaction (``archive_and_compact``), one
more turn. Argument: the state.db to write.
"""

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
db.close()
