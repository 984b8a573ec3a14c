"""`hermes cron`: scheduled jobs, as Hermes Agent 0.19's command has them.

``list``, ``create`` (alias ``add``), ``edit``, ``pause``, ``resume``, ``run``, ``runs``
and ``remove``. The jobs live in the state store; every running gateway runs them (each
due time once), and ``run`` asks the next gateway tick for a run now.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from hermes.cli._group import DefaultGroup
from hermes.cli._store import opened_store
from hermes.cli._table import echo_listing
from hermes.config import hermes_home, load_config
from hermes.cron import CronStore, check_target, files, parse
from hermes.cron.targets import WAITING_AFTER, configured_platforms, why_undelivered
from hermes.cron.workdir import check_workdir
from hermes.errors import HermesError
from hermes.state.location import store_location
from hermes.tools.toolsets import check_names


@contextmanager
def _jobs(*, read_only: bool = False) -> Iterator[CronStore]:
    with opened_store(read_only=read_only, create=not read_only) as db:
        yield CronStore(db.backend, read_only=db.read_only, on_change=files.writer(hermes_home()))


def _no_store_yet() -> bool:
    """No store yet means no jobs yet: a listing says so instead of creating one."""
    return not store_location(config=load_config()).exists


def _find(store: CronStore, ref: str) -> dict[str, Any]:
    job = store.job(ref)
    if job is None:
        raise HermesError(f"No job {ref!r}: see `hermes cron list` for the ids.")
    return job


def _change(ref: str, **fields: Any) -> dict[str, Any]:
    """Update the job ``ref`` names and return it as it now is."""
    with _jobs() as store:
        if "workdir" in fields:
            fields["workdir"] = _workdir(fields["workdir"], store)
        job = store.update_job(_find(store, ref)["id"], **fields)
    assert job is not None  # it was just found, in the same store
    return job


def _when(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp)) if stamp else "-"


@click.group(cls=DefaultGroup)
def cron() -> None:
    """Scheduled jobs: list, create, edit, pause, resume, run, runs, remove (default: list)."""


@cron.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include paused jobs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_cmd(show_all: bool, as_json: bool) -> None:
    """One row per job: id, name, schedule, state, next run, delivery."""
    jobs: list[dict[str, Any]] = []
    if not _no_store_yet():
        with _jobs(read_only=True) as store:
            jobs = store.jobs(include_disabled=show_all)
    echo_listing(
        jobs,
        as_json=as_json,
        empty="No scheduled jobs. Add one with `hermes cron create`.",
        headers=["id", "name", "schedule", "state", "next run", "deliver"],
        row=_job_row,
    )


def _job_row(job: dict[str, Any]) -> list[Any]:
    when = _when(job["next_run_at"])
    return [job["id"], job["name"], job["schedule"], job["state"], when, job["deliver"]]


@cron.command("create")
@click.argument("schedule_arg", metavar="[SCHEDULE]", required=False)
@click.argument("prompt_arg", metavar="[PROMPT]", required=False)
@click.option("--schedule", help="'0 9 * * *', 'every 2h', '2026-02-03T14:00' or 'in 30m'.")
@click.option("--prompt", help="What the agent is asked at each run.")
@click.option("--name", help="A name for the job (default: the prompt's start).")
@click.option("--deliver", help="local (default), telegram:CHAT, discord:CHANNEL, slack:CHANNEL.")
@click.option("--timezone", help="IANA time zone of the schedule (default: this machine's).")
@click.option("--skill", "skills", multiple=True, help="A skill for the job; repeat for more.")
@click.option("--model", help="The model for this job's runs.")
@click.option(
    "--toolset",
    "toolsets",
    multiple=True,
    help="Limit the job to a toolset, tool or MCP server; repeat for more.",
)
@click.option(
    "--workdir",
    help="The folder (absolute path) the job's runs work in; default: a folder of its own.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    help="Stop after this many runs (default: as often as the schedule says; a one-shot runs once).",
)
def create(
    schedule_arg: str | None,
    prompt_arg: str | None,
    schedule: str | None,
    prompt: str | None,
    name: str | None,
    deliver: str | None,
    timezone: str | None,
    skills: tuple[str, ...],
    model: str | None,
    toolsets: tuple[str, ...],
    workdir: str | None,
    repeat: int | None,
) -> None:
    """Create a scheduled job."""
    when, ask = schedule or schedule_arg, prompt or prompt_arg
    if not when or not ask:
        raise HermesError(
            "A job needs a schedule and a prompt: --schedule 'every 1h' --prompt '...'."
        )
    parsed = parse(when, timezone=timezone)
    target = check_target(deliver)
    limited = check_names(toolsets, load_config())
    with _jobs() as store:
        folder = _workdir(workdir, store)
        job = store.create_job(
            name=name or ask[:50].strip(),
            schedule=parsed,
            prompt=ask,
            deliver=target,
            timezone=timezone,
            skills=skills,
            model=model,
            toolsets=limited,
            workdir=folder,
            repeat_times=repeat,
        )
    click.echo(
        f"Created job {job['id']} ({job['name']}): {parsed.display}, next run {_when(job['next_run_at'])}."
    )
    if folder:
        click.echo(f"Its runs work in {folder}.")
    _warn_if_undeliverable(target)


def _workdir(value: str | None, store: CronStore) -> str | None:
    return check_workdir(value, hermes_home=hermes_home(), store=store.backend)


def _warn_if_undeliverable(target: str) -> None:
    """Say at once when no gateway of this home would deliver the job's answers."""
    from hermes.gateway.state_file import served_platforms

    why = why_undelivered(
        target, configured_platforms(load_config()), served_platforms(hermes_home())
    )
    if why:
        click.echo(f"Warning: {why}.", err=True)


cron.add_command(create, "add")


@cron.command("edit")
@click.argument("job_ref")
@click.option("--schedule", help="A new schedule.")
@click.option("--prompt", help="A new prompt.")
@click.option("--name", help="A new name.")
@click.option("--deliver", help="A new delivery target.")
@click.option("--model", help="A new model.")
@click.option(
    "--toolset",
    "toolsets",
    multiple=True,
    help="The job's toolsets (replacing them); repeat for more.",
)
@click.option("--all-toolsets", is_flag=True, help="Let the job use every tool again.")
@click.option(
    "--workdir",
    help="A new folder (absolute path) for the job's runs; '' for the job's own folder.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=0),
    help="How many runs the job makes in all, those made counted (0: as often as its schedule says).",
)
def edit(
    job_ref: str,
    schedule: str | None,
    prompt: str | None,
    name: str | None,
    deliver: str | None,
    model: str | None,
    toolsets: tuple[str, ...],
    all_toolsets: bool,
    workdir: str | None,
    repeat: int | None,
) -> None:
    """Change a job."""
    fields: dict[str, Any] = {}
    if toolsets or all_toolsets:
        fields["toolsets"] = [] if all_toolsets else check_names(toolsets, load_config())
    if schedule is not None:
        fields["schedule"] = parse(schedule).text
    if deliver is not None:
        fields["deliver"] = check_target(deliver)
    if workdir is not None:
        fields["workdir"] = workdir  # checked once the store is open
    if repeat is not None:
        fields["repeat_times"] = repeat or None
    fields.update(
        {k: v for k, v in (("prompt", prompt), ("name", name), ("model", model)) if v is not None}
    )
    if not fields:
        raise HermesError(
            "Nothing to change: give --schedule, --prompt, --name, --deliver, --model, "
            "--toolset, --workdir or --repeat."
        )
    job = _change(job_ref, **fields)
    click.echo(f"Updated job {job['id']} ({job['name']}); next run {_when(job['next_run_at'])}.")
    if deliver is not None:
        _warn_if_undeliverable(job["deliver"])


@cron.command("pause")
@click.argument("job_ref")
def pause(job_ref: str) -> None:
    """Pause a job: it does not run until resumed."""
    job = _change(job_ref, enabled=0, next_run_at=None)
    click.echo(f"Paused job {job['id']} ({job['name']}).")


@cron.command("resume")
@click.argument("job_ref")
def resume(job_ref: str) -> None:
    """Resume a paused job from its next due time."""
    job = _change(job_ref, enabled=1)
    click.echo(f"Resumed job {job['id']} ({job['name']}); next run {_when(job['next_run_at'])}.")


@cron.command("run")
@click.argument("job_ref")
def run(job_ref: str) -> None:
    """Run a job now (a running gateway picks it up at its next tick)."""
    with _jobs() as store:
        job = _find(store, job_ref)
        store.run_now(job["id"])
    click.echo(f"Job {job['id']} ({job['name']}) will run at the next gateway tick.")


@cron.command("runs")
@click.argument("job_ref", required=False)
@click.option(
    "--limit",
    type=click.IntRange(1, 500),
    default=20,
    show_default=True,
    help="How many runs to show, newest first.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def runs(job_ref: str | None, limit: int, as_json: bool) -> None:
    """Recent runs: when due, status, conversation, and whether the answer was delivered."""
    with _jobs(read_only=True) as store:
        job_id = _find(store, job_ref)["id"] if job_ref else None
        rows = store.runs(job_id, limit)
    # echo_listing is the shared part; what stays is each listing's own columns and words.
    echo_listing(
        rows,
        as_json=as_json,
        empty="No runs yet.",
        headers=["run", "job", "due", "status", "session", "delivery"],
        row=_run_row,
    )


def _run_row(run: dict[str, Any]) -> list[Any]:
    status = f"{run['status']}: {run['error']}" if run["error"] else run["status"]
    due = _when(run["due_at"])
    return [run["id"][:12], run["job_id"], due, status, run["session_id"] or "-", _delivery(run)]


def _delivery(run: dict[str, Any]) -> str:
    if run["delivery"] is None:
        return "-"
    if run["delivery"] == "sent":
        return f"sent to {run['target']}"
    waited = time.time() - (run["delivery_created_at"] or time.time())
    if run["delivery"] == "pending" and waited >= WAITING_AFTER:
        why = run["delivery_error"] or why_undelivered(
            run["target"], configured_platforms(load_config())
        )
        return (
            f"pending to {run['target']} for {waited / 60:.0f} min: "
            f"{why or 'no gateway has taken it yet'}"
        )
    error = f": {run['delivery_error']}" if run["delivery_error"] else ""
    return (
        f"{run['delivery']} to {run['target']} after {run['delivery_attempts']} attempt(s){error}"
    )


@cron.command("remove")
@click.argument("job_ref")
def remove(job_ref: str) -> None:
    """Remove a job (its past runs stay listed)."""
    with _jobs() as store:
        job = _find(store, job_ref)
        store.remove_job(job["id"])
    click.echo(f"Removed job {job['id']} ({job['name']}).")
