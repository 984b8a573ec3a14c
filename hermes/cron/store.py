"""Jobs, their runs and the delivery outbox in the store (SQLite or PostgreSQL).

Exactly once, step by step, each a single write transaction:

``make_due_runs``
    a due job's ``next_run_at`` moves on by compare-and-swap and the run of that due
    time is inserted (unique per job and due time), so however many gateways look at
    once, one run exists per due time; the times a stopped store missed become one run.
``take_run``
    a run nobody holds, or whose holder is dead (a process gone on this host) or past
    its lease, is taken by compare-and-swap on its ``attempts``.
``finish``
    only the holder can finish a run; the answer and its outbox row are written in the
    same transaction.
``repeat_times`` / ``completed``
    Hermes Agent 0.19's repeat counts: a finite one-shot's run is counted in the
    transaction that first takes it (before it runs: 0.19's ``claim_dispatch``), any
    other job's in the one that finishes it; a job whose count reached its
    ``repeat_times`` gets no next run (it is ``completed``).
``take_delivery`` / ``sent`` / ``retry_later``
    the outbox row is leased the same way, marked sent after the platform accepted it,
    or put back with a backoff; after ``MAX_ATTEMPTS`` it is ``failed``, for people to see.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from hermes.cron.schedule import Schedule, ScheduleError, parse
from hermes.state import lease
from hermes.state.backend import Backend, Row, Tx
from hermes.state.tables import Tables

T = TypeVar("T")

MAX_ATTEMPTS = 8
MISSED_AFTER = 60.0  # a run this late (seconds) was missed, not merely picked up late
_JOB_COLUMNS = (
    "id, name, schedule, timezone, prompt, skills, model, toolsets, deliver, enabled,"
    " paused_reason, next_run_at, last_run_at, created_at, updated_at, workdir, origin,"
    " context_from, repeat_times, completed"
)
_RUN_COLUMNS = (
    "id, job_id, due_at, status, holder, lease_expires_at, attempts, session_id, output,"
    " error, created_at, finished_at"
)
_OUTBOX_COLUMNS = (
    "run_id, target, body, status, attempts, next_attempt_at, holder, lease_expires_at,"
    " last_error, created_at, sent_at"
)


def backoff(attempts: int) -> float:
    """Seconds before the next try after ``attempts`` failed ones: 1, 2, 4 ... 300."""
    return float(min(300, 2 ** max(0, attempts - 1)))


class CronStore(Tables):
    """The cron tables on a backend (blocking calls: use from threads).

    ``on_change`` is called with the store after each change to a job (made, edited,
    removed, run, moved to its next due time): readers' copies, such as Hermes Agent's
    ``cron/jobs.json``, follow the store that way. It must not raise.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        read_only: bool = False,
        on_change: Callable[[CronStore], None] | None = None,
    ) -> None:
        super().__init__(backend, read_only=read_only)
        self.on_change = on_change

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)

    # -- jobs ---------------------------------------------------------------------------

    def create_job(
        self,
        *,
        name: str,
        schedule: Schedule,
        prompt: str,
        deliver: str = "local",
        timezone: str | None = None,
        skills: Sequence[str] = (),
        model: str | None = None,
        toolsets: Sequence[str] = (),
        workdir: str | None = None,
        origin: dict[str, Any] | None = None,
        context_from: Sequence[str] = (),
        repeat_times: int | None = None,
        completed: int | None = 0,
        now: float | None = None,
        job_id: str | None = None,
    ) -> dict[str, Any]:
        """A new job; ``workdir`` was checked by the caller (``cron.workdir``). ``origin``:
        the chat it was made from (0.19's dict); ``context_from``: the jobs whose latest
        answer each run is given before its prompt; ``repeat_times``: how many runs it
        makes (None: a one-shot's one, else as many as its schedule gives);
        ``completed``: how many it made already (None: it keeps no count)."""
        now = time.time() if now is None else now
        if schedule.run_at is not None and schedule.run_at < now - MISSED_AFTER:
            raise ScheduleError(
                f"The time {schedule.text} is in the past: give a later one, or 'in 30m'."
            )
        job_id = job_id or uuid.uuid4().hex[:12]
        first = schedule.next_after(now - 1, anchor=now, timezone=timezone)
        if schedule.kind == "interval":
            first = now + (schedule.seconds or 0)
        if repeat_times is None and schedule.kind == "once":
            repeat_times = 1

        def create(tx: Tx) -> dict[str, Any]:
            tx.run(
                f"INSERT INTO cron_jobs ({_JOB_COLUMNS}) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, NULL, ?, NULL, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job_id,
                    name,
                    schedule.text,
                    timezone,
                    prompt,
                    json.dumps(list(skills)),
                    model,
                    json.dumps(list(toolsets)),
                    deliver,
                    first,
                    now,
                    now,
                    workdir,
                    json.dumps(origin) if origin else None,
                    json.dumps(list(context_from)) if context_from else None,
                    repeat_times if repeat_times and repeat_times > 0 else None,
                    completed,
                ),
            )
            return _job(_one_job(tx, job_id))

        made = self._write(create)
        self._changed()
        return made

    def jobs(self, *, include_disabled: bool = True) -> list[dict[str, Any]]:
        where = "" if include_disabled else " WHERE enabled = 1"
        rows = self._read(
            lambda tx: tx.all(
                f"SELECT {_JOB_COLUMNS} FROM cron_jobs{where} ORDER BY created_at, id"
            )
        )
        return [_job(row) for row in rows]

    def job(self, ref: str) -> dict[str, Any] | None:
        """The job whose id, id prefix (unique) or name is ``ref``."""
        jobs = self.jobs()
        for match in (
            [j for j in jobs if j["id"] == ref],
            [j for j in jobs if j["name"] == ref],
            [j for j in jobs if j["id"].startswith(ref)],
        ):
            if len(match) == 1:
                return match[0]
        return None

    def update_job(
        self, job_id: str, now: float | None = None, **fields: Any
    ) -> dict[str, Any] | None:
        """Set columns of a job; a new schedule, a resume or a new repeat count computes the
        next run again (a job past a lowered count stops at its next due time)."""
        now = time.time() if now is None else now

        def update(tx: Tx) -> dict[str, Any] | None:
            row = tx.one(f"SELECT {_JOB_COLUMNS} FROM cron_jobs WHERE id = ?", (job_id,))
            if row is None:
                return None
            values = dict(fields)
            for key in ("skills", "toolsets"):
                if key in values:
                    values[key] = json.dumps(list(values[key] or []))
            for key in ("origin", "context_from"):
                if key in values:
                    values[key] = json.dumps(values[key]) if values[key] else None
            new_count = "repeat_times" in values and values["repeat_times"] != row["repeat_times"]
            counted = "completed" in values or row["completed"] is not None
            if new_count and values["repeat_times"] and not counted:
                values["completed"] = 0  # a count set on a job that kept none starts now
            # A changed count on a job that runs gives it its next run again, unless the
            # caller says when that is (0.19's ``save_jobs`` carries ``next_run_at``).
            recount = new_count and row["enabled"] and "next_run_at" not in values
            if "schedule" in values or values.get("enabled") == 1 or recount:
                text = str(values.get("schedule", row["schedule"]))
                schedule = parse(text, timezone=row["timezone"], now=now)
                anchor = now
                due = schedule.next_after(now - 1, anchor=anchor, timezone=row["timezone"])
                values["next_run_at"] = now + schedule.seconds if schedule.seconds else due
            values["updated_at"] = now
            assignments = ", ".join(f"{column} = ?" for column in values)
            tx.run(f"UPDATE cron_jobs SET {assignments} WHERE id = ?", (*values.values(), job_id))
            return _job(_one_job(tx, job_id))

        updated = self._write(update)
        if updated is not None:
            self._changed()
        return updated

    def remove_job(self, job_id: str) -> bool:
        def remove(tx: Tx) -> bool:
            return tx.run("DELETE FROM cron_jobs WHERE id = ?", (job_id,)) > 0

        removed = self._write(remove)
        if removed:
            self._changed()
        return removed

    def run_now(self, job_id: str, now: float | None = None) -> str | None:
        """A run of the job due now, outside its schedule; None: no such job."""
        now = time.time() if now is None else now

        def add(tx: Tx) -> str | None:
            if tx.one("SELECT id FROM cron_jobs WHERE id = ?", (job_id,)) is None:
                return None
            return _insert_run(tx, job_id, now, "due", now)

        return self._write(add)

    # -- runs ---------------------------------------------------------------------------

    def make_due_runs(self, now: float, *, missed: str = "run_once") -> list[dict[str, Any]]:
        """Write the run of every job due by ``now``; the runs made (``status`` is
        ``skipped`` for a missed one under ``missed='skip'``)."""
        due = self._read(
            lambda tx: tx.all(
                f"SELECT {_JOB_COLUMNS} FROM cron_jobs WHERE enabled = 1 AND next_run_at <= ?",
                (now,),
            )
        )
        made = []
        for row in due:
            run = self._write(partial(_advance, job=row, now=now, missed=missed))
            if run is not None:
                made.append(run)
        if made:
            self._changed()
        return made

    def take_run(self, holder: str, ttl: float, now: float | None = None) -> dict[str, Any] | None:
        """Lease the oldest run that is due or whose holder is gone; None: none is."""
        now = time.time() if now is None else now

        def candidates(tx: Tx) -> list[Row]:
            rows = tx.all(
                f"SELECT {_RUN_COLUMNS} FROM cron_runs WHERE status IN ('due', 'running')"
                " ORDER BY due_at LIMIT 50"
            )
            return [r for r in rows if r["status"] == "due" or _lapsed(r, now)]

        # A read first: the scheduler asks every tick, and nothing to take writes nothing.
        if not self._read(candidates):
            return None

        def take(tx: Tx) -> dict[str, Any] | None:
            for row in candidates(tx):
                taken = tx.run(
                    "UPDATE cron_runs SET status = 'running', holder = ?, lease_expires_at = ?,"
                    " attempts = attempts + 1 WHERE id = ? AND attempts = ? AND status = ?",
                    (holder, now + ttl, row["id"], row["attempts"], row["status"]),
                )
                if taken:
                    if row["attempts"] == 0:  # its first take: a run taken over was counted
                        _claim_dispatch(tx, row["job_id"])
                    return _one_run(tx, row["id"])
            return None

        run = self._write(take)
        if run is not None:
            self._changed()  # readers' ledger shows it running
        return run

    def refresh_run(self, run_id: str, holder: str, ttl: float) -> bool:
        def refresh(tx: Tx) -> bool:
            return (
                tx.run(
                    "UPDATE cron_runs SET lease_expires_at = ? WHERE id = ? AND holder = ?"
                    " AND status = 'running'",
                    (time.time() + ttl, run_id, holder),
                )
                > 0
            )

        return self._write(refresh)

    def set_run_session(self, run_id: str, holder: str, session_id: str) -> bool:
        def record(tx: Tx) -> bool:
            return (
                tx.run(
                    "UPDATE cron_runs SET session_id = ? WHERE id = ? AND holder = ?"
                    " AND status = 'running'",
                    (session_id, run_id, holder),
                )
                > 0
            )

        return self._write(record)

    def finish(
        self, run_id: str, holder: str, *, output: str | None, error: str | None, deliver: str
    ) -> bool:
        """Store the run's answer and, in the same transaction, its outbox row. False:
        the run is no longer this holder's (it was taken over), and nothing is written."""
        now = time.time()

        def finish(tx: Tx) -> bool:
            status = "failed" if error else "completed"
            changed = tx.run(
                "UPDATE cron_runs SET status = ?, output = ?, error = ?, finished_at = ?,"
                " lease_expires_at = NULL WHERE id = ? AND holder = ? AND status = 'running'",
                (status, output, error, now, run_id, holder),
            )
            if not changed:
                return False
            run = _one_run(tx, run_id)
            tx.run("UPDATE cron_jobs SET last_run_at = ? WHERE id = ?", (now, run["job_id"]))
            _count_run(tx, run["job_id"])
            if deliver != "local" and not error and output:
                tx.run(
                    f"INSERT INTO cron_outbox ({_OUTBOX_COLUMNS}) VALUES"
                    " (?, ?, ?, 'pending', 0, ?, NULL, NULL, NULL, ?, NULL)",
                    (run_id, deliver, output, now, now),
                )
            return True

        finished = self._write(finish)
        if finished:
            self._changed()
        return finished

    def record_run(
        self, job_id: str, error: str | None, delivery_error: str | None, now: float | None = None
    ) -> str | None:
        """A run its caller made itself (0.19's ``mark_job_run``), stored finished: failed
        with ``error``, else completed; a ``delivery_error`` is its delivery's, failed (for
        people to see, as a delivery that gave up). The caller states both outcomes, as
        ``mark_job_run`` is told them; the job's count goes up as 0.19's does (not for
        a one-shot ``claim_dispatch`` counted already). None: no such job."""
        now = time.time() if now is None else now

        def record(tx: Tx) -> str | None:
            job = tx.one("SELECT deliver FROM cron_jobs WHERE id = ?", (job_id,))
            if job is None:
                return None
            status = "failed" if error else "completed"
            fire = _open_fire(tx, job_id)
            run_id = None if fire is None else str(fire["id"])  # the claimed fire ends here
            for nudge in range(1000 if run_id is None else 0):  # a twin instant: the next
                run_id = _insert_run(tx, job_id, now + nudge * 1e-6, status, now)
                if run_id is not None:
                    break
            assert run_id is not None
            tx.run(
                "UPDATE cron_runs SET status = ?, error = ?, finished_at = ? WHERE id = ?",
                (status, error, now, run_id),
            )
            tx.run("UPDATE cron_jobs SET last_run_at = ? WHERE id = ?", (now, job_id))
            _count_run(tx, job_id)
            if delivery_error:
                tx.run(
                    f"INSERT INTO cron_outbox ({_OUTBOX_COLUMNS}) VALUES"
                    " (?, ?, '', 'failed', 1, ?, NULL, NULL, ?, ?, NULL)",
                    (run_id, job["deliver"], now, delivery_error, now),
                )
            return run_id

        run_id = self._write(record)
        if run_id is not None:
            self._changed()
        return run_id

    # -- runs a caller makes itself (Hermes Agent 0.19's ``cron.executions``) ------------
    #
    # Statuses the scheduler never takes (it takes ``due`` and lapsed ``running`` runs):
    # ``claimed``, then ``started`` while the caller runs it, then ``completed``/``failed``,
    # or ``unknown`` once its holder died first (0.19's ledger: not a retry queue).

    def claim_execution(self, job_id: str, holder: str, now: float | None = None) -> dict[str, Any]:
        """A run ``holder`` (``lease.make_holder()``) is about to make of ``job_id``: the
        fire this process claimed of it (``claim_fire``), if any, else a new one."""
        now = time.time() if now is None else now

        def claim(tx: Tx) -> dict[str, Any]:
            fire = _open_fire(tx, job_id, mine=holder)
            if fire is not None:
                tx.run("UPDATE cron_runs SET holder = ? WHERE id = ?", (holder, fire["id"]))
                return _one_run(tx, fire["id"])
            for nudge in range(1000):  # one run per due time: a twin instant gets the next
                run_id = _insert_run(tx, job_id, now + nudge * 1e-6, "claimed", now)
                if run_id is not None:
                    tx.run("UPDATE cron_runs SET holder = ? WHERE id = ?", (holder, run_id))
                    return _one_run(tx, run_id)
            raise RuntimeError(f"Could not record a run of job {job_id}: too many at once.")

        claimed = self._write(claim)
        self._changed()
        return claimed

    def claim_fire(self, job_id: str, holder: str, ttl: float, now: float | None = None) -> bool:
        """0.19's ``claim_job_for_fire``: take one fire of an enabled job, at most once
        while a claim younger than ``ttl`` seconds stands (whoever made it, alive or not).
        The claim is a ``claimed`` run whose ``lease_expires_at`` is set (no caller's
        other run has one); a recurring job's next run moves past now, so no scheduler
        fires this time again. A stale claim is ``unknown``. False: the job is missing,
        paused, or claimed."""

        def claim(tx: Tx) -> bool:
            # Now as the lock is held: a claimer's clock read before it waited would see
            # the claim made meanwhile as stamped ahead of it, hence stale.
            at = tx.clock() if now is None else now
            # The job's row first: on PostgreSQL a second claimer waits here, then reads
            # the first one's claim (SQLite's writers are serialised already).
            locked = tx.run(
                "UPDATE cron_jobs SET updated_at = updated_at WHERE id = ? AND enabled = 1",
                (job_id,),
            )
            if not locked:
                return False
            stale = []
            for fire in _fires(tx, job_id):
                if 0 <= at - fire["created_at"] < ttl:
                    return False  # a fresh claim: a claim stamped ahead of now is stale
                stale.append(fire["id"])
            for run_id in stale:
                tx.run(
                    "UPDATE cron_runs SET status = 'unknown', finished_at = ?, error = ?"
                    " WHERE id = ?",
                    (at, "Its fire was claimed but no run was recorded in time.", run_id),
                )
            run_id = None
            for nudge in range(1000):  # one run per due time: a twin instant gets the next
                run_id = _insert_run(tx, job_id, at + nudge * 1e-6, "claimed", at)
                if run_id is not None:
                    break
            assert run_id is not None
            tx.run(
                "UPDATE cron_runs SET holder = ?, lease_expires_at = ? WHERE id = ?",
                (holder, at + ttl, run_id),
            )
            job = _one_job(tx, job_id)
            schedule = parse(job["schedule"], timezone=job["timezone"], now=job["created_at"])
            if schedule.kind != "once":
                following = schedule.next_after(
                    at, anchor=job["created_at"], timezone=job["timezone"]
                )
                tx.run("UPDATE cron_jobs SET next_run_at = ? WHERE id = ?", (following, job_id))
            return True

        claimed = self._write(claim)
        if claimed:
            self._changed()
        return claimed

    def start_execution(self, run_id: str) -> dict[str, Any] | None:
        """A claimed run started (once); None: it is not a claimed one."""

        def start(tx: Tx) -> dict[str, Any] | None:
            changed = tx.run(
                "UPDATE cron_runs SET status = 'started' WHERE id = ? AND status = 'claimed'",
                (run_id,),
            )
            return _one_run(tx, run_id) if changed else None

        started = self._write(start)
        if started is not None:
            self._changed()
        return started

    def finish_execution(
        self, run_id: str, error: str | None, now: float | None = None
    ) -> dict[str, Any] | None:
        """A claimed or started run ended: failed with ``error``, else completed, counted
        as ``finish`` counts a gateway's run. Once only: None when it had ended already."""
        now = time.time() if now is None else now

        def end(tx: Tx) -> dict[str, Any] | None:
            changed = tx.run(
                "UPDATE cron_runs SET status = ?, error = ?, finished_at = ?"
                " WHERE id = ? AND status IN ('claimed', 'started')",
                ("failed" if error else "completed", error, now, run_id),
            )
            if not changed:
                return None
            run = _one_run(tx, run_id)
            tx.run("UPDATE cron_jobs SET last_run_at = ? WHERE id = ?", (now, run["job_id"]))
            _count_run(tx, run["job_id"])
            return run

        ended = self._write(end)
        if ended is not None:
            self._changed()
        return ended

    def recover_executions(self, now: float | None = None) -> int:
        """Claimed or started runs whose holder died on this host are ``unknown`` (whether
        their work was done is not known, so none is run again); how many."""
        now = time.time() if now is None else now
        why = (
            "The process running this job ended before it recorded how the run ended;"
            " whether its work was done is unknown."
        )

        def recover(tx: Tx) -> int:
            rows = tx.all("SELECT id, holder FROM cron_runs WHERE status IN ('claimed', 'started')")
            dead = [r["id"] for r in rows if lease.holder_is_dead(r["holder"] or "")]
            return sum(
                tx.run(
                    "UPDATE cron_runs SET status = 'unknown', finished_at = ?, error = ?"
                    " WHERE id = ? AND status IN ('claimed', 'started')",
                    (now, why, run_id),
                )
                for run_id in dead
            )

        changed = self._write(recover)
        if changed:
            self._changed()
        return changed

    def claim_dispatch(self, job_id: str) -> bool:
        """0.19's ``claim_dispatch``: count a finite one-shot's run before it runs. False
        when its count is reached already (a run claimed, then lost): the job is removed,
        as 0.19 removes it. Any other job, or none: True, nothing written."""

        def claim(tx: Tx) -> str:
            job = tx.one(f"SELECT {_JOB_COLUMNS} FROM cron_jobs WHERE id = ?", (job_id,))
            if job is None or not _finite_oneshot(job):
                return "free"
            if _spent(job):
                tx.run("DELETE FROM cron_jobs WHERE id = ?", (job_id,))
                return "spent"
            _claim_dispatch(tx, job_id)
            return "claimed"

        outcome = self._write(claim)
        if outcome != "free":
            self._changed()
        return outcome != "spent"

    def finished_runs(self) -> dict[str, int]:
        """How many of each job's stored runs have finished (a job's ``completed`` is
        0.19's count, kept as its runs are made)."""
        rows = self._read(
            lambda tx: tx.all(
                "SELECT job_id, COUNT(*) AS n FROM cron_runs"
                " WHERE status IN ('completed', 'failed') GROUP BY job_id"
            )
        )
        return {row["job_id"]: int(row["n"]) for row in rows}

    def latest_answers(self, job_ids: Sequence[str]) -> dict[str, str]:
        """The answer of each job's latest completed run that gave one (a job with none
        is left out), in the order asked: what a ``context_from`` job is given."""

        def latest(tx: Tx) -> dict[str, str]:
            answers = {}
            for job_id in job_ids:
                row = tx.one(
                    "SELECT output FROM cron_runs WHERE job_id = ? AND status = 'completed'"
                    " AND output IS NOT NULL ORDER BY finished_at DESC LIMIT 1",
                    (job_id,),
                )
                if row is not None and row["output"]:
                    answers[job_id] = str(row["output"])
            return answers

        return self._read(latest) if job_ids else {}

    def release(self, run_id: str, holder: str) -> bool:
        """Give a run this holder will not finish back to the others (a shutdown)."""

        def release(tx: Tx) -> bool:
            return (
                tx.run(
                    "UPDATE cron_runs SET status = 'due', holder = NULL, lease_expires_at = NULL"
                    " WHERE id = ? AND holder = ? AND status = 'running'",
                    (run_id, holder),
                )
                > 0
            )

        return self._write(release)

    def runs(self, job_id: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """Newest first, each with its delivery (``delivery``: None when there is none)."""
        where, params = ("WHERE r.job_id = ?", (job_id,)) if job_id else ("", ())
        columns = ", ".join(f"r.{c.strip()}" for c in _RUN_COLUMNS.split(","))
        rows = self._read(
            lambda tx: tx.all(
                f"SELECT {columns}, o.status AS delivery, o.attempts AS delivery_attempts,"
                " o.last_error AS delivery_error, o.target AS target,"
                " o.created_at AS delivery_created_at"
                f" FROM cron_runs r LEFT JOIN cron_outbox o ON o.run_id = r.id {where}"
                f" ORDER BY r.due_at DESC, r.created_at DESC LIMIT {int(limit)}",
                params,
            )
        )
        return [dict(row) for row in rows]

    def ledger_runs(self, finished: int) -> list[dict[str, Any]]:
        """Every run not yet ended, and the newest ``finished`` ended ones (0.19's ledger,
        hermes.cron.ledger)."""
        ended = "('completed', 'failed', 'skipped', 'unknown')"

        def read(tx: Tx) -> list[Row]:
            open_runs = tx.all(f"SELECT {_RUN_COLUMNS} FROM cron_runs WHERE status NOT IN {ended}")
            newest = tx.all(
                f"SELECT {_RUN_COLUMNS} FROM cron_runs WHERE status IN {ended}"
                f" ORDER BY due_at DESC, id DESC LIMIT {int(finished)}"
            )
            return [*open_runs, *newest]

        return [dict(row) for row in self._read(read)]

    # -- the outbox ---------------------------------------------------------------------

    def take_delivery(
        self, holder: str, platforms: Sequence[str], ttl: float, now: float | None = None
    ) -> dict[str, Any] | None:
        """Lease the oldest pending delivery to one of ``platforms`` that is due."""
        now = time.time() if now is None else now

        def candidates(tx: Tx) -> list[Row]:
            rows = tx.all(
                f"SELECT {_OUTBOX_COLUMNS} FROM cron_outbox WHERE status = 'pending'"
                " AND next_attempt_at <= ? ORDER BY created_at LIMIT 50",
                (now,),
            )
            return [r for r in rows if _deliverable(r, platforms, now)]

        # take_run's steps (a read first, then claim the first candidate in one write), each
        # with its own table, columns and claim: one helper would take three callbacks.
        if not self._read(candidates):
            return None

        def take(tx: Tx) -> dict[str, Any] | None:
            for row in candidates(tx):
                taken = tx.run(
                    "UPDATE cron_outbox SET holder = ?, lease_expires_at = ?, attempts = attempts + 1"
                    " WHERE run_id = ? AND attempts = ? AND status = 'pending'",
                    (holder, now + ttl, row["run_id"], row["attempts"]),
                )
                if taken:
                    found = tx.one(
                        f"SELECT {_OUTBOX_COLUMNS} FROM cron_outbox WHERE run_id = ?",
                        (row["run_id"],),
                    )
                    return dict(found) if found else None
            return None

        return self._write(take)

    def sent(self, run_id: str, holder: str) -> bool:
        def mark(tx: Tx) -> bool:
            return (
                tx.run(
                    "UPDATE cron_outbox SET status = 'sent', sent_at = ?, holder = NULL,"
                    " lease_expires_at = NULL, last_error = NULL WHERE run_id = ? AND holder = ?",
                    (time.time(), run_id, holder),
                )
                > 0
            )

        return self._write(mark)

    def retry_later(self, run_id: str, holder: str, error: str) -> str | None:
        """Put a failed delivery back with a backoff; its new status, or None if it was
        not this holder's."""
        now = time.time()

        def put_back(tx: Tx) -> str | None:
            row = tx.one(
                "SELECT attempts FROM cron_outbox WHERE run_id = ? AND holder = ?", (run_id, holder)
            )
            if row is None:
                return None
            status = "failed" if row["attempts"] >= MAX_ATTEMPTS else "pending"
            tx.run(
                "UPDATE cron_outbox SET status = ?, holder = NULL, lease_expires_at = NULL,"
                " last_error = ?, next_attempt_at = ? WHERE run_id = ? AND holder = ?",
                (status, error[:2000], now + backoff(row["attempts"]), run_id, holder),
            )
            return status

        return self._write(put_back)

    def waiting_deliveries(
        self, older_than: float, now: float | None = None
    ) -> list[dict[str, Any]]:
        """Deliveries still pending ``older_than`` seconds after their answer was made,
        oldest first: a platform no gateway serves, or one that keeps refusing."""
        since = (time.time() if now is None else now) - older_than
        rows = self._read(
            lambda tx: tx.all(
                f"SELECT {_OUTBOX_COLUMNS} FROM cron_outbox WHERE status = 'pending'"
                " AND created_at <= ? ORDER BY created_at",
                (since,),
            )
        )
        return [dict(row) for row in rows]

    def failed_deliveries(self) -> list[dict[str, Any]]:
        rows = self._read(
            lambda tx: tx.all(
                f"SELECT {_OUTBOX_COLUMNS} FROM cron_outbox WHERE status = 'failed' ORDER BY created_at"
            )
        )
        return [dict(row) for row in rows]


def _advance(tx: Tx, *, job: Row, now: float, missed: str) -> dict[str, Any] | None:
    """Move the job past ``now`` and write the run of its due time, if this call wins."""
    due = job["next_run_at"]
    if _spent(job):  # its runs are all made: it stops (0.19 would remove it)
        tx.run(
            "UPDATE cron_jobs SET next_run_at = NULL WHERE id = ? AND next_run_at = ?",
            (job["id"], due),
        )
        return None
    schedule = parse(job["schedule"], timezone=job["timezone"], now=job["created_at"])
    following = schedule.next_after(now, anchor=job["created_at"], timezone=job["timezone"])
    moved = tx.run(
        "UPDATE cron_jobs SET next_run_at = ? WHERE id = ? AND next_run_at = ?",
        (following, job["id"], due),
    )
    if not moved:
        return None  # another gateway wrote this due time's run
    status = "skipped" if missed == "skip" and now - due > MISSED_AFTER else "due"
    run_id = _insert_run(tx, job["id"], due, status, now)
    if run_id is None:
        return None
    return _one_run(tx, run_id)


def _finite_oneshot(job: Row) -> bool:
    """A one-shot with a count of runs to make (0.19 claims these before each run)."""
    if not job["repeat_times"] or job["completed"] is None:
        return False
    return parse(job["schedule"], timezone=job["timezone"], now=job["created_at"]).kind == "once"


def _spent(job: Row) -> bool:
    """The job made the runs its ``repeat_times`` allows."""
    times, completed = job["repeat_times"], job["completed"]
    return bool(times) and completed is not None and completed >= times


def _claim_dispatch(tx: Tx, job_id: str) -> None:
    """Count a finite one-shot's run before it runs (0.19's ``claim_dispatch``)."""
    job = tx.one(f"SELECT {_JOB_COLUMNS} FROM cron_jobs WHERE id = ?", (job_id,))
    if job is not None and _finite_oneshot(job):
        tx.run("UPDATE cron_jobs SET completed = completed + 1 WHERE id = ?", (job_id,))


def _fires(tx: Tx, job_id: str) -> list[Row]:
    """The job's claimed fires (``claim_fire``) not yet ended, oldest first."""
    return tx.all(
        "SELECT id, holder, created_at FROM cron_runs WHERE job_id = ?"
        " AND status IN ('claimed', 'started') AND lease_expires_at IS NOT NULL"
        " ORDER BY created_at",
        (job_id,),
    )


def _open_fire(tx: Tx, job_id: str, mine: str | None = None) -> Row | None:
    """The newest claimed fire of the job, only one claimed by ``mine``'s process if
    given (a run the claimer then records is that fire, not a second run)."""
    fires = _fires(tx, job_id)
    if mine is not None:
        process = mine.split(":agent=", 1)[0]
        fires = [f for f in fires if (f["holder"] or "").split(":agent=", 1)[0] == process]
    return fires[-1] if fires else None


def _count_run(tx: Tx, job_id: str) -> None:
    """After a run, as 0.19's ``mark_job_run``: one more in its count (not for a one-shot
    claimed before it ran), and no next run once the count is reached."""
    job = tx.one(f"SELECT {_JOB_COLUMNS} FROM cron_jobs WHERE id = ?", (job_id,))
    if job is None or job["completed"] is None:
        return  # a job that keeps no count
    if not (_finite_oneshot(job) and job["completed"] > 0):
        tx.run("UPDATE cron_jobs SET completed = completed + 1 WHERE id = ?", (job_id,))
    tx.run(
        "UPDATE cron_jobs SET next_run_at = NULL WHERE id = ? AND repeat_times > 0"
        " AND completed >= repeat_times",
        (job_id,),
    )


def _insert_run(tx: Tx, job_id: str, due: float, status: str, now: float) -> str | None:
    run_id = uuid.uuid4().hex
    inserted = tx.run(
        f"INSERT INTO cron_runs ({_RUN_COLUMNS}) VALUES"
        " (?, ?, ?, ?, NULL, NULL, 0, NULL, NULL, NULL, ?, ?) ON CONFLICT (job_id, due_at) DO NOTHING",
        (run_id, job_id, due, status, now, now if status == "skipped" else None),
    )
    return run_id if inserted else None


def _lapsed(row: Row, now: float) -> bool:
    """The lease of a run or delivery is free: expired, or its holder died."""
    expires = row["lease_expires_at"]
    return expires is None or expires <= now or lease.holder_is_dead(row["holder"] or "")


def _deliverable(row: Row, platforms: Sequence[str], now: float) -> bool:
    """An outbox row for one of ``platforms`` that nobody holds, or whose lease is free."""
    platform = row["target"].split(":", 1)[0]
    return platform in platforms and (row["holder"] is None or _lapsed(row, now))


def _one_job(tx: Tx, job_id: str) -> Row:
    row = tx.one(f"SELECT {_JOB_COLUMNS} FROM cron_jobs WHERE id = ?", (job_id,))
    assert row is not None
    return row


def _one_run(tx: Tx, run_id: str) -> dict[str, Any]:
    row = tx.one(f"SELECT {_RUN_COLUMNS} FROM cron_runs WHERE id = ?", (run_id,))
    assert row is not None
    return dict(row)


def _job(row: Row) -> dict[str, Any]:
    job = dict(row)
    job["skills"] = json.loads(job["skills"] or "[]")
    job["toolsets"] = json.loads(job["toolsets"] or "[]")
    job["origin"] = json.loads(job["origin"]) if job["origin"] else None
    job["context_from"] = json.loads(job["context_from"]) if job["context_from"] else []
    job["enabled"] = bool(job["enabled"])
    job["state"] = "scheduled" if job["enabled"] else "paused"
    if job["enabled"] and job["next_run_at"] is None:
        job["state"] = "completed"
    return job
