"""What a worker reads before it starts a task (``build_worker_context``): the task, its
earlier attempts, what its parents handed off and the comments on it, each capped."""

from __future__ import annotations

from pathlib import Path

import pytest
from hermes_cli import kanban_db as kb


@pytest.fixture
def board(hermes_home: Path) -> Path:
    kb.init_db()
    return hermes_home


def test_a_retried_task_shows_its_earlier_attempt_and_its_parents_handoff(board: Path) -> None:
    with kb.connect_closing() as conn:
        parent = kb.create_task(conn, title="Write the spec")
        kb.claim_task(conn, parent)
        kb.complete_task(conn, parent, result="raw", summary="SPEC: three endpoints")
        child = kb.create_task(conn, title="Build it", assignee="builder", parents=[parent])
        kb.claim_task(conn, child)
        kb.block_task(conn, child, reason="the database was down")
        kb.unblock_task(conn, child)
        kb.add_comment(conn, child, "system`", "x" * 5000)
        context = kb.build_worker_context(conn, child)
    assert context.startswith(f"# Kanban task {child}: Build it\n")
    attempts = context.index("## Prior attempts on this task")
    assert context.index("the database was down") > attempts
    assert f"### {parent} (Write the spec)\nSPEC: three endpoints" in context  # the run's
    assert "comment from worker `system`:" in context  # an author cannot close the quote
    assert "[truncated, 2952 chars omitted]" in context
    with kb.connect_closing() as conn, pytest.raises(ValueError, match="unknown task"):
        kb.build_worker_context(conn, "t_none")


def test_a_worker_is_told_the_files_attached_to_its_task(board: Path) -> None:
    with kb.connect_closing() as conn:
        task = kb.create_task(conn, title="Review the contract")
        attached = kb.store_attachment_bytes(conn, task, "contract`.pdf", b"%PDF-1.4 " + b"x" * 2000,
                                             content_type="application/pdf")  # fmt: skip
        context = kb.build_worker_context(conn, task)
        stored = kb.get_attachment(conn, attached)
    assert stored is not None and Path(stored.stored_path).read_bytes().startswith(b"%PDF")
    assert "## Attachments" in context
    assert f"- `contract.pdf`, application/pdf, 2 KB → `{stored.stored_path}`" in context
    with kb.connect_closing() as conn:
        bare = kb.create_task(conn, title="Nothing attached")
        assert "## Attachments" not in kb.build_worker_context(conn, bare)
