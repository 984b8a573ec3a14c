"""`hermes kanban work TASK`: one Kanban task as a turn of this profile's agent.

The board's dispatcher (hermes.kanban.dispatch.dispatch_once) claims a ready task and starts
this command as ``hermes -p ASSIGNEE kanban work TASK --board SLUG``, its output going to
the task's worker log. The turn's answer completes the task (its result, and the run's
summary); a turn that fails blocks it with the reason, for a person to look at. While the
turn runs, the claim is renewed so the dispatcher does not hand the task out again.
"""

from __future__ import annotations

import threading
from typing import Any

import click

from hermes.cli._store import opened_store
from hermes.cli.chat import _make_agent, _require_key
from hermes.config import load_config
from hermes.errors import HermesError
from hermes.kanban import db as board_db
from hermes.kanban import flow, tasks
from hermes.kanban.context import build_worker_context

HEARTBEAT_SECONDS = 60.0


def task_prompt(conn: Any, task: Any) -> str:
    """What the agent is asked: the worker's context for the task (its attempts, what the
    tasks it waited for produced, the comments people left on it) and what to answer."""
    return build_worker_context(conn, task.id) + "\nDo the task and answer with its result.\n"


def _keep_claim(task_id: str, claimer: str, board: str | None, stop: threading.Event) -> None:
    while not stop.wait(HEARTBEAT_SECONDS):
        with board_db.connect_closing(board=board) as conn:
            if not flow.heartbeat_claim(conn, task_id, claimer=claimer):
                return  # the claim was taken back: nothing left to keep


@click.group()
def kanban() -> None:
    """The Kanban board's worker (the board itself: hermes-webui's Kanban panel)."""


@kanban.command()
@click.argument("task_id")
@click.option("--board", default=None, help="The board's slug (default: the active board).")
def work(task_id: str, board: str | None) -> None:
    """Do one claimed Kanban task as a turn of this profile's agent."""
    with board_db.connect_closing(board=board) as conn:
        task = tasks.get_task(conn, task_id)
        if task is None or task.status != "running" or not task.claim_lock:
            raise HermesError(
                f"Kanban task {task_id} is not claimed for work: the dispatcher starts "
                "this command for a task it has claimed."
            )
        prompt = task_prompt(conn, task)
    stop = threading.Event()
    keeper = threading.Thread(
        target=_keep_claim, args=(task_id, task.claim_lock, board, stop), daemon=True
    )
    keeper.start()
    try:
        answer, error = _run_turn(prompt)
    finally:
        stop.set()
    if error is None:
        click.echo(answer)  # the log holds the answer before the board says done
    with board_db.connect_closing(board=board) as conn:
        if error is None:
            flow.complete_task(
                conn, task_id, result=answer, summary=answer, expected_run_id=task.current_run_id
            )
        else:
            flow.block_task(conn, task_id, reason=error, expected_run_id=task.current_run_id)
    if error is not None:
        raise HermesError(f"Kanban task {task_id} is blocked: {error}")


def _run_turn(prompt: str) -> tuple[str, str | None]:
    """The agent's answer, or what went wrong in one sentence."""
    try:
        config = load_config()
        base_url = config.get("model.base_url")
        api_key = _require_key(base_url)
        with opened_store(read_only=False, create=True) as db:
            agent = _make_agent(
                config, db, api_key=api_key, base_url=base_url, model=None, interactive=False
            )
            try:
                result = agent.run(prompt)
            finally:
                agent.client.close()
    except HermesError as exc:
        return "", str(exc)
    answer = (result.answer or "").strip()
    if result.interrupted or not answer:
        return "", "the agent's turn ended without an answer"
    return answer, None
