"""Task attachments and notification subscriptions of ``hermes_cli.kanban_db`` on a real
board: ``kanban_files_session.py`` must print the same under hermes and under Hermes Agent
0.19; then what hermes adds, the guard that keeps every attached file in its task's own
folder (a name that is a path, a link, a row naming a file elsewhere). Then a completed
task's deliverables kept from its scratch folder (``kanban_artifacts_session.py``, the
same under both), and a real worker's."""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hermes_cli import kanban_db as kb

from hermes import profiles
from tests.compat.hermes_agent import play_session
from tests.fakes import llm_server as fake
from tests.kanban.helpers import wait_for_task

SESSION = Path(__file__).resolve().with_name("kanban_files_session.py")


def play(python: Path | str, home: Path) -> dict[str, Any]:
    return play_session(python, SESSION, home)


def test_attachments_and_subscriptions_as_on_hermes_agent(
    hermes_agent_python: Path, tmp_path: Path
) -> None:
    assert play(sys.executable, tmp_path / "hermes") == play(
        hermes_agent_python, tmp_path / "hermes-agent"
    )


def test_the_session_on_hermes(tmp_path: Path) -> None:
    shown = play(sys.executable, tmp_path / "home")
    assert shown["files"] == ["contract (1).pdf", "contract.pdf", "env", "notes.tar.gz"]
    assert shown["listed"][0][:6] == [
        "T1", "contract.pdf", "application/pdf", 10, "webui", "kanban/attachments/T1/contract.pdf"
    ]  # fmt: skip
    assert shown["too_large"] == ["AttachmentTooLarge", True]
    assert shown["unknown_task"] == ["ValueError", True]
    assert shown["removed_file_gone"] is False and shown["delete_again"] is None
    assert shown["side_board"][0] == "kanban/boards/side/attachments"
    assert shown["claim"] == [0, 6, ["created", "attached", "attached", "attached", "attached"]]
    assert shown["claim_again"] == [6, 6, []]
    assert (shown["rewind"], shown["rewind_again"]) == (True, False)
    assert shown["after_advance"] == [["commented", {"author": "bob", "len": 16}]]
    assert shown["subs_left"] == ["T2"]


@pytest.fixture
def board(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[sqlite3.Connection]:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    with kb.connect_closing() as conn:
        yield conn


def test_a_name_that_is_a_path_is_refused(board: sqlite3.Connection, tmp_path: Path) -> None:
    task = kb.create_task(board, title="t")
    for name in ("../escape.txt", "../../escape.txt", "/tmp/escape.txt", "a/b.txt", "..\\x.txt"):
        with pytest.raises(ValueError, match="not a path"):
            kb.store_attachment_bytes(board, task, name, b"x")
    assert kb.list_attachments(board, task) == []
    assert not list(tmp_path.rglob("escape.txt"))
    assert not list(tmp_path.rglob("b.txt"))
    with pytest.raises(ValueError, match="invalid task id"):
        kb.task_attachments_dir("../other")


def test_a_file_is_never_written_through_a_link(board: sqlite3.Connection, tmp_path: Path) -> None:
    task = kb.create_task(board, title="t")
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = kb.task_attachments_dir(task)
    folder.mkdir(parents=True)
    (folder / "report.txt").symlink_to(outside / "planted.txt")  # a dangling link
    attachment = kb.get_attachment(
        board, kb.store_attachment_bytes(board, task, "report.txt", b"x")
    )
    assert attachment is not None and attachment.filename == "report (1).txt"
    assert not (outside / "planted.txt").exists()
    assert os.stat(attachment.stored_path).st_mode & 0o077 == 0  # the user's alone

    other = kb.create_task(board, title="u")
    kb.task_attachments_dir(other).symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError, match="leads elsewhere"):
        kb.store_attachment_bytes(board, other, "report.txt", b"x")
    assert list(outside.iterdir()) == [] and kb.list_attachments(board, other) == []


def test_only_a_file_in_the_tasks_folder_is_recorded_or_deleted(
    board: sqlite3.Connection, tmp_path: Path
) -> None:
    task = kb.create_task(board, title="t")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    with pytest.raises(ValueError, match="attachments folder"):
        kb.add_attachment(board, task, filename="v.txt", stored_path=str(victim))
    link = kb.task_attachments_dir(task) / "v.txt"
    link.parent.mkdir(parents=True)
    link.symlink_to(victim)
    with pytest.raises(ValueError, match="attachments folder"):
        kb.add_attachment(board, task, filename="v.txt", stored_path=str(link))
    # A row naming a file elsewhere (a board 0.19 wrote, or SQL of one's own): deleting
    # the attachment forgets the row and leaves the file.
    for path in (victim, link):
        row = board.execute(
            "INSERT INTO task_attachments (task_id, filename, stored_path, size, created_at) "
            "VALUES (?, 'v.txt', ?, 7, 0)",
            (task, str(path)),
        ).lastrowid
        assert row is not None
        removed = kb.delete_attachment(board, row)
        assert removed is not None and removed.stored_path == str(path)
    assert victim.read_text() == "keep me" and link.is_symlink()
    assert kb.list_attachments(board, task) == []


def test_a_boards_connection_keeps_its_files_in_that_board(board: sqlite3.Connection) -> None:
    kb.create_board("side")
    with kb.connect_closing(board="side") as side:
        task = kb.create_task(side, title="t")
        stored = kb.get_attachment(side, kb.store_attachment_bytes(side, task, "a.txt", b"a"))
        assert stored is not None
        assert Path(stored.stored_path).parent == kb.task_attachments_dir(task, board="side")
        placed = kb.task_attachments_dir(task, board="side") / "b.txt"
        placed.write_bytes(b"b")
        assert kb.add_attachment(side, task, filename="b.txt", stored_path=str(placed)) > 0
        with pytest.raises(ValueError, match="attachments folder"):
            kb.add_attachment(side, task, filename="c.txt", stored_path=str(
                kb.task_attachments_dir(task, board="default") / "c.txt"))  # fmt: skip


def test_two_notifiers_claim_each_event_once(board: sqlite3.Connection) -> None:
    task = kb.create_task(board, title="t")
    sub = {"task_id": task, "platform": "telegram", "chat_id": "7"}
    kb.add_notify_sub(board, **sub)
    kb.complete_task(board, task, result="done")
    with kb.connect_closing() as other:
        first = kb.claim_unseen_events_for_sub(board, **sub)
        second = kb.claim_unseen_events_for_sub(other, **sub)
    assert [e.kind for e in first[2]] == ["created", "completed"]
    assert second == (first[1], first[1], [])


ARTIFACTS = SESSION.with_name("kanban_artifacts_session.py")


def test_completion_artifacts_as_on_hermes_agent(hermes_agent_python: Path, tmp_path: Path) -> None:
    ours = play_session(sys.executable, ARTIFACTS, tmp_path / "hermes")
    assert ours == play_session(hermes_agent_python, ARTIFACTS, tmp_path / "hermes-agent")
    assert ours["copies"] == ["<h1>report</h1>", "notes"]  # named, and named in prose
    assert ours["named"]["completed"][0]["artifacts"] == [
        "~/kanban/attachments/T1/report.html", "~/elsewhere.txt",
        "~/kanban/attachments/T1/notes.md",
    ]  # fmt: skip
    assert [ours[k]["status"] for k in ("missing", "too_big")] == ["running", "running"]
    assert ours["missing"]["returned"] == ["ArtifactPreservationError", True]


def test_a_link_out_of_the_scratch_folder_is_not_copied(
    board: sqlite3.Connection, tmp_path: Path
) -> None:
    """A worker cannot make a file outside its folder an attachment by linking to it."""
    secret = tmp_path / "secret.txt"
    secret.write_text("not the worker's")
    task = kb.create_task(board, title="t")
    kb.claim_task(board, task, claimer="elsewhere:1")
    folder = kb.workspaces_root() / task
    folder.mkdir(parents=True)
    kb.set_workspace_path(board, task, folder)
    (folder / "report.txt").symlink_to(secret)
    named = str(folder / "report.txt")
    assert kb.complete_task(board, task, result=f"see {named}", metadata={"artifacts": [named]})
    assert kb.list_attachments(board, task) == []
    run = kb.latest_run(board, task)
    assert run is not None and run.metadata == {"artifacts": [named]}


def test_a_workers_deliverable_outlives_its_scratch_folder(
    tmp_path: Path, fake_llm: fake.FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hermes's worker answers in prose, naming the file it wrote in its scratch folder:
    the file is kept as an attachment, then the folder goes."""
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    monkeypatch.setenv("HERMES_BASE_URL", fake_llm.url)
    monkeypatch.setenv("HERMES_MODEL", fake.DEFAULT_MODEL)
    profiles.create("builder")
    with kb.connect_closing() as conn:
        task = kb.create_task(conn, title="Write it", assignee="builder")
        folder = kb.workspaces_root() / task
        fake_llm.script(
            fake.tool_call("terminal", {"command": "echo deliverable > report.txt"}),
            fake.text(f"Wrote {folder}/report.txt."),
        )
        kb.dispatch_once(conn)
        done = wait_for_task(conn, task, "done")
        attached = kb.list_attachments(conn, task)
    assert done.status == "done", kb.read_worker_log(task)
    assert not folder.exists()
    assert [(a.filename, a.uploaded_by) for a in attached] == [("report.txt", "kanban_complete")]
    assert Path(attached[0].stored_path).read_text() == "deliverable\n"
