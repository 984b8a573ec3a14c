"""The seed's race with real processes and the real compressor: six agents in six
processes compress one session at once through the fake summary model."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest

from hermes.state import SessionDB
from tests.fakes import llm_server as fake

WORKERS = 6


def compress_in_process(db_path: str, url: str, session_id: str, barrier, results) -> None:
    from hermes.agent import AIAgent

    db = SessionDB(db_path=db_path)
    agent = AIAgent(
        api_key="k",
        base_url=url,
        model=fake.DEFAULT_MODEL,
        session_db=db,
        session_id=session_id,
        skip_context_files=True,
        skip_memory=True,
    )
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "p" * 400}
        for i in range(16)
    ]
    barrier.wait(timeout=30)
    out, _ = agent._compress_context(messages, "sys")
    results.put((agent.session_id, out is messages, len(out)))
    db.close()


@pytest.mark.parametrize("round_", range(3))
def test_six_processes_compressing_one_session_make_one_child(
    fake_llm, tmp_path: Path, hermes_home: Path, round_: int
) -> None:
    (hermes_home / "config.yaml").write_text("model:\n  context_length: 4000\n")
    fake_llm.responder = lambda body: fake.text("SUMMARY", delay=0.3)
    db_path = str(tmp_path / "state.db")
    db = SessionDB(db_path=db_path)
    parent = db.create_session(source="discord")
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(WORKERS), ctx.Queue()
    procs = [
        ctx.Process(
            target=compress_in_process, args=(db_path, fake_llm.url, parent, barrier, results)
        )
        for _ in range(WORKERS)
    ]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0

    children = db._conn.execute(
        "SELECT id FROM sessions WHERE parent_session_id = ?", (parent,)
    ).fetchall()
    assert len(children) == 1
    rotated = [o for o in outcomes if o[0] != parent]
    assert len(rotated) == 1 and rotated[0][0] == children[0]["id"]
    assert all(untouched for sid, untouched, _ in outcomes if sid == parent)
    assert len(fake_llm.requests) == 1  # only the lease holder asked for a summary
    assert db.get_compression_lock_holder(parent) is None
    assert db.invariant_violations() == []
    db.close()
