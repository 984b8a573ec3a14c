"""Run by Hermes Agent 0.19's own python: a state.db as 0.19 writes it through its
SessionDB, with what third-party readers query: a compression chain, usage and cost,
a working directory and a gateway route."""

import json
import sys
from pathlib import Path

from hermes_state import SessionDB

db = SessionDB(db_path=Path(sys.argv[1]))
db.create_session("root", "cli", model="m1", cwd="/work/project")
db.set_session_title("root", "Trip planning")
db.append_message("root", "user", "question 0")
db.append_message(
    "root",
    "assistant",
    None,
    tool_calls=[
        {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
    ],
    finish_reason="tool_calls",
)
db.append_message("root", "tool", "sunny", tool_name="search", tool_call_id="c1")
db.append_message("root", "assistant", "answer 0", finish_reason="stop")
db.update_token_counts(
    "root", input_tokens=100, output_tokens=20, model="m1", cache_read_tokens=30,
    cache_write_tokens=5, reasoning_tokens=4, api_call_count=2, estimated_cost_usd=0.5,
)  # fmt: skip
db.end_session("root", "compression")
db.create_session("root-2", "cli", parent_session_id="root", model="m1", cwd="/work/project")
db.append_message("root-2", "user", "question 1")
db.append_message("root-2", "assistant", "answer 1", finish_reason="stop")
db.update_token_counts("root-2", input_tokens=10, output_tokens=2, model="m1", api_call_count=1)
db.save_gateway_routing_entry(
    "telegram:dm:42", json.dumps({"session_key": "telegram:dm:42", "session_id": "root-2"})
)
db.close()
