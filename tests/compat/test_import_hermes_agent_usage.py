"""What a Hermes Agent 0.19 session records beside its messages comes over in the
import (and so in the in-place upgrade): the working directory, the usage and cost
figures with their per-model rows, and each message's provider fields."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hermes.compat import importer
from hermes.compat.session_db import SessionDB
from tests.compat.hermes_agent import HERE
from tests.state.helpers import StoreSpec


def build_usage_store(python: Path, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HERMES_HOME": str(path.parent / "ha-runtime-home"),
           "HERMES_DISABLE_LAZY_INSTALLS": "1"}  # fmt: skip
    subprocess.run(
        [str(python), str(HERE / "ha_build_usage_store.py"), str(path)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip


USAGE = (
    "SELECT id, cwd, model, input_tokens, output_tokens, cache_read_tokens,"
    " cache_write_tokens, reasoning_tokens, api_call_count, estimated_cost_usd,"
    " billing_provider FROM sessions WHERE id IN ('work', 'compacted') ORDER BY id"
)
PER_MODEL = (
    "SELECT session_id, model, billing_provider, input_tokens, api_call_count,"
    " estimated_cost_usd FROM session_model_usage ORDER BY session_id, model"
)


@pytest.mark.hermes_agent
def test_usage_cwd_and_provider_fields_come_over(hermes_agent_python, tmp_path, store: StoreSpec) -> None:  # fmt: skip
    source = tmp_path / "ha" / "state.db"
    build_usage_store(hermes_agent_python, source)
    conn = importer.open_source(source)
    expected_usage = [tuple(r) for r in conn.execute(USAGE)]
    expected_per_model = [tuple(r) for r in conn.execute(PER_MODEL)]
    db = SessionDB(db_path=store.path, url=store.url)
    try:
        importer.import_store(conn, db)
        importer.import_store(conn, db)  # a second import changes no figure
        assert store.execute(USAGE) == expected_usage
        assert expected_usage[1][1:4] == ("/home/ada/project", "m1", 140)
        assert store.execute(PER_MODEL) == expected_per_model
        archive = importer.archive_segment_id("compacted")
        assert store.execute(
            "SELECT input_tokens, api_call_count FROM sessions WHERE id = ?", (archive,)
        ) == [(0, 0)]
        answer = db.get_messages_as_conversation("work")[1]
        assert answer["finish_reason"] == "stop"
        assert (answer["reasoning"], answer["reasoning_content"]) == (
            "short summary",
            "the provider's scratchpad",
        )
        assert answer["reasoning_details"] == [{"type": "reasoning.summary", "summary": "read the log"}]  # fmt: skip
        assert answer["codex_message_items"] == [{"type": "message", "id": "msg_1"}]
    finally:
        db.close()
        conn.close()
