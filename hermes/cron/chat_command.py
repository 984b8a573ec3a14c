"""``/cron`` in a chat: the jobs of ``hermes cron``, from inside a conversation.

Importing this module registers the command with the chat's slash commands (the agent
room cannot import cron, so the surfaces that offer it import this).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from hermes.agent.commands import Reply, command
from hermes.cron import files
from hermes.cron.schedule import parse
from hermes.cron.store import CronStore
from hermes.cron.targets import check_target
from hermes.errors import HermesError

if TYPE_CHECKING:
    from hermes.agent import AIAgent

USAGE = (
    "/cron [list] | /cron add SCHEDULE | PROMPT | /cron pause|resume|run|remove JOB | "
    "/cron runs [JOB]"
)


# The /help row stays as narrow as the others; `/cron help` gives the whole syntax.
@command(
    "cron",
    "/cron [ACTION]",
    "Scheduled jobs: list, add, pause, resume, run, runs, remove.",
    subcommands=("list", "add", "pause", "resume", "run", "runs", "remove", "help"),
    category="Tools & Skills",
    cli_only=True,  # jobs are the operator's: a messaging chat does not manage them
)
def cron_command(agent: AIAgent, arg: str) -> Reply:
    if agent.binding.session_db is None:
        raise HermesError("This command needs the state store, and this agent has none.")
    store = CronStore(
        agent.binding.session_db.backend,
        read_only=agent.binding.session_db.read_only,
        on_change=files.writer(agent.hermes_home),
    )
    verb, _, rest = arg.strip().partition(" ")
    verb, rest = verb.lower() or "list", rest.strip()
    if verb == "list":
        return Reply(_listing(store))
    if verb == "help":
        return Reply(f"Usage: {USAGE}.")
    if verb == "add":
        return Reply(_add(store, rest))
    if verb == "runs":
        job_id = _find(store, rest)["id"] if rest else None
        lines = [
            f"{_when(r['due_at'])}  {r['status']}  delivery: {r['delivery'] or '-'}"
            for r in store.runs(job_id, 10)
        ]
        return Reply("\n".join(lines) or "No runs yet.")
    if verb in ("pause", "resume", "run", "remove"):
        job = _find(store, rest)
        if verb == "pause":
            store.update_job(job["id"], enabled=0, next_run_at=None)
        elif verb == "resume":
            store.update_job(job["id"], enabled=1)
        elif verb == "run":
            store.run_now(job["id"])
        else:
            store.remove_job(job["id"])
        return Reply(f"{verb.capitalize()}: job {job['id']} ({job['name']}).")
    return Reply(f"Unknown /cron action {verb!r}; use {USAGE}.", ok=False)


def _add(store: CronStore, rest: str) -> str:
    schedule, bar, prompt = rest.partition("|")
    if not bar or not schedule.strip() or not prompt.strip():
        raise HermesError("Give a schedule and a prompt: /cron add every 2h | the news.")
    parsed = parse(schedule.strip())
    text = prompt.strip()
    job = store.create_job(name=text[:50], schedule=parsed, prompt=text, deliver=check_target(None))
    return f"Created job {job['id']}: {parsed.display}, next run {_when(job['next_run_at'])}."


def _listing(store: CronStore) -> str:
    jobs = store.jobs()
    if not jobs:
        return "No scheduled jobs. Add one with /cron add SCHEDULE | PROMPT."
    return "\n".join(
        f"{j['id']}  {j['name']}  {j['schedule']}  {j['state']}  next: {_when(j['next_run_at'])}"
        for j in jobs
    )


def _find(store: CronStore, ref: str) -> dict:  # type: ignore[type-arg]
    job = store.job(ref) if ref else None
    if job is None:
        raise HermesError(f"No job {ref!r}: /cron list shows the ids.")
    return job


def _when(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp)) if stamp else "-"
