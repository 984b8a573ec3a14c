"""`hermes kanban work TASK`: one Kanban task as a turn of this profile's agent.

The board's dispatcher (hermes.kanban.dispatch.dispatch_once) claims a ready task and starts
this command as ``hermes -p ASSIGNEE kanban work TASK --board SLUG``, its output going to
the task's worker log, with ``--skill NAME`` for each skill the task names (a review
task's worker gets the reviewer's). The turn's answer completes the task (its result, and
the run's summary); a turn that fails blocks it with the reason, for a person to look at,
but one the provider refused for its rate limit puts it back in the queue, where the
dispatcher's respawn guard holds it for the cool-down (hermes/kanban/respawn.py). While
the turn runs, the claim is renewed so the dispatcher does not hand the task out again.
"""

from __future__ import annotations

import threading
from typing import Any

import click

from hermes.agent.errors import ModelUnavailableError
from hermes.cli._store import opened_store
from hermes.cli.chat import _make_agent, _require_key
from hermes.config import load_config
from hermes.cron.job_run import job_prompt
from hermes.errors import HermesError
from hermes.kanban import db as board_db
from hermes.kanban import flow, respawn, supervision, tasks
from hermes.kanban.context import build_worker_context
from hermes.tools.workspaces import KANBAN_SOURCE

HEARTBEAT_SECONDS = 60.0


def task_prompt(conn: Any, task: Any) -> str:
    """What the agent is asked: the worker's context for the task (its attempts, what the
    tasks it waited for produced, the comments people left on it) and what to answer."""
    return build_worker_context(conn, task.id) + "\nDo the task and answer with its result.\n"


def _keep_claim(task_id: str, claimer: str, board: str | None, stop: threading.Event) -> None:
    """Renew the claim and say the worker is alive (the dispatcher's stale check reads
    the heartbeat), from the start of the turn and every minute of it."""
    while True:
        with board_db.connect_closing(board=board) as conn:
            if not flow.heartbeat_claim(conn, task_id, claimer=claimer):
                return  # the claim was taken back: nothing left to keep
            supervision.heartbeat_worker(conn, task_id, quiet=True)
        if stop.wait(HEARTBEAT_SECONDS):
            return


@click.group()
def kanban() -> None:
    """The Kanban board's worker (the board itself: hermes-webui's Kanban panel)."""


@kanban.command()
@click.argument("task_id")
@click.option("--board", default=None, help="The board's slug (default: the active board).")
@click.option("--skill", "skills", multiple=True, help="A skill to load into the turn.")
def work(task_id: str, board: str | None, skills: tuple[str, ...]) -> None:
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
        answer, error, throttled = _run_turn(prompt, skills, task.max_runtime_seconds)
    finally:
        stop.set()
    if error is None:
        click.echo(answer)  # the log holds the answer before the board says done
    with board_db.connect_closing(board=board) as conn:
        if error is None:
            flow.complete_task(
                conn, task_id, result=answer, summary=answer, expected_run_id=task.current_run_id
            )
        elif throttled:
            respawn.requeue_rate_limited(conn, task_id, error, expected_run_id=task.current_run_id)
        else:
            flow.block_task(conn, task_id, reason=error, expected_run_id=task.current_run_id)
    if error is not None:
        where = "back in the queue" if throttled else "blocked"
        raise HermesError(f"Kanban task {task_id} is {where}: {error}")


def _run_turn(
    prompt: str, skills: tuple[str, ...] = (), max_runtime: int | None = None
) -> tuple[str, str | None, bool]:
    """The agent's answer, or what went wrong in one sentence and whether it was the
    provider's rate limit (HTTP 429 after every retry). Each skill is loaded
    before the prompt as a cron job's are (the operator's skills only: a workspace's own
    were written by earlier runs). Under a task's ``max_runtime`` a terminal command may
    run until shortly before it (0.19's terminal timeout for workers)."""
    try:
        config = load_config()
        longer = supervision.worker_terminal_timeout(max_runtime, config.get("terminal.timeout"))
        if longer is not None:
            config.values["terminal.timeout"] = longer
        base_url = config.get("model.base_url")
        api_key = _require_key(base_url)
        with opened_store(read_only=False, create=True) as db:
            # Its own source: an unattended turn (no memory written, no network by
            # default), and no terminal chat for `hermes chat --continue` to pick up.
            agent = _make_agent(
                config,
                db,
                api_key=api_key,
                base_url=base_url,
                model=None,
                interactive=False,
                source=KANBAN_SOURCE,
            )
            try:
                result = agent.run(job_prompt(agent, prompt, skills, project=None))
            finally:
                agent.client.close()
    except HermesError as exc:
        throttled = isinstance(exc, ModelUnavailableError) and exc.status == 429
        return "", str(exc), throttled
    answer = (result.answer or "").strip()
    if result.interrupted or not answer:
        return "", "the agent's turn ended without an answer", False
    return answer, None, False
