"""Run by Hermes Agent 0.19's own python: four conversations as 0.19 records them, through
ITS SessionDB: one compressed by rotation (``compression.in_place: false``), one
compacted in place (0.19's default), a /branch of the first (marked as 0.19's /branch
marks it) and a plain chat."""

import sys
from pathlib import Path

from hermes_state import SessionDB

db = SessionDB(db_path=Path(sys.argv[1]))
db.create_session("rotated", "cli")
db.append_message("rotated", "user", "first question")
db.end_session("rotated", "compression")
db.create_session("rotated-2", "cli", parent_session_id="rotated")
db.append_message("rotated-2", "user", "second question")

db.create_session("in-place", "cli")
db.append_message("in-place", "user", "a question")
db.archive_and_compact("in-place", [{"role": "user", "content": "summary"}])

# As hermes_cli/cli_commands_mixin.py's /branch creates one.
db.create_session(
    "branch", "cli", parent_session_id="rotated-2", model_config={"_branched_from": "rotated-2"}
)
db.append_message("branch", "user", "what if")

db.create_session("plain", "telegram")
db.append_message("plain", "user", "hello")
print(db.session_count(exclude_children=True))
db.close()
