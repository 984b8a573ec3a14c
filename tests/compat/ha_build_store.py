"""Run by Hermes Agent 0.19's own python: build a state.db through ITS SessionDB.

Prints every message row as JSON (session id, id, role, content, ...) for the test to
compare with what hermes imported.
"""

import json
import sys
from pathlib import Path

from hermes_state import SessionDB

db = SessionDB(db_path=Path(sys.argv[1]))
db.create_session("root", "cli", model="m1", system_prompt="be brief", user_id="u1")
db.set_session_title("root", "Trip planning")
db.append_message("root", "user", "plan a trip to Lisbon")
db.append_message(
    "root",
    "assistant",
    None,
    tool_calls=[
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "search", "arguments": '{"q": "Lisbon"}'},
        }
    ],
    reasoning="look it up",
)
db.append_message("root", "tool", "sunny, 24C", tool_name="search", tool_call_id="c1")
db.append_message("root", "assistant", "Lisbon is sunny.", token_count=7)
db.end_session("root", "compression")
db.create_session("root-2", "cli", parent_session_id="root", model="m1")
db.append_message("root-2", "user", "summary: a trip to Lisbon")
db.append_message("root-2", "assistant", "noted")
# A rewind before the first in-place compaction: taken back, not summarised.
taken_back = db.append_message("root-2", "user", "oops, a wrong question")
db.append_message("root-2", "assistant", "an answer to the wrong question")
db.rewind_to_message("root-2", taken_back)
db.archive_and_compact("root-2", [{"role": "user", "content": "compacted summary of Lisbon"}])
db.append_message("root-2", "user", "and Porto?")
db.append_message("root-2", "assistant", "Porto is lovely in spring.")
# A second in-place compaction archives the first one's summary too.
db.archive_and_compact(
    "root-2",
    [
        {"role": "user", "content": "second summary: Lisbon, then Porto"},
        {"role": "assistant", "content": "Porto is lovely in spring."},
    ],
)
db.append_message("root-2", "user", "what about Faro?")
db.append_message("root-2", "assistant", "Faro has beaches.")
faro_followup = db.append_message("root-2", "user", "and Lagos instead?")
db.append_message("root-2", "assistant", "Lagos has cliffs.")
db.rewind_to_message("root-2", faro_followup)
db.end_session("root", "branched")
db.create_session("side", "telegram", parent_session_id="root", user_id="u2")
db.append_message("side", "user", "a branch about Madrid")
for n in range(int(sys.argv[2]) if len(sys.argv) > 2 else 0):  # bulk, for a long upgrade
    db.create_session(f"bulk-{n}", "cli")
    db.append_message(f"bulk-{n}", "user", f"question {n}")
    db.append_message(f"bulk-{n}", "assistant", f"answer {n}")
rewound = db.append_message("side", "user", "scratch that: Seville")
db.rewind_to_message("side", rewound)
rows = db._conn.execute(
    "SELECT session_id, id, role, content, tool_calls, tool_call_id, tool_name, reasoning,"
    " active, compacted FROM messages ORDER BY id"
).fetchall()
print(json.dumps([dict(r) for r in rows]))
db.close()
