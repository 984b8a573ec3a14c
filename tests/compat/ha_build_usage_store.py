"""Run by Hermes Agent 0.19's own python: a state.db with usage, cost, a working
directory and provider message fields, written through ITS SessionDB."""

import sys
from pathlib import Path

from hermes_state import SessionDB

db = SessionDB(db_path=Path(sys.argv[1]))
db.create_session("work", "cli", model="m1", cwd="/home/ada/project")
db.append_message("work", "user", "why is the build red?")
db.append_message(
    "work",
    "assistant",
    "a missing import",
    finish_reason="stop",
    reasoning="short summary",
    reasoning_content="the provider's scratchpad",
    reasoning_details=[{"type": "reasoning.summary", "summary": "read the log"}],
    codex_message_items=[{"type": "message", "id": "msg_1"}],
)
for model, tokens in (("m1", 100), ("m2", 40)):
    db.update_token_counts(
        "work",
        input_tokens=tokens,
        output_tokens=10,
        model=model,
        cache_read_tokens=7,
        cache_write_tokens=3,
        reasoning_tokens=2,
        estimated_cost_usd=0.5,
        billing_provider="openrouter",
        api_call_count=1,
    )
# Compacted in place: its figures belong to the session once, not to each segment.
db.create_session("compacted", "cli", model="m1")
db.append_message("compacted", "user", "first question")
db.append_message("compacted", "assistant", "first answer")
db.update_token_counts("compacted", input_tokens=50, output_tokens=5, model="m1", api_call_count=1)
db.archive_and_compact("compacted", [{"role": "user", "content": "summary of the first"}])
db.close()
