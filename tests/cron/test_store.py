"""The cron tables on both backends: one run per due time however many gateways look, a
run leased to one holder, the answer and its outbox row stored together, deliveries
retried and then marked failed where people see them."""

from __future__ import annotations

import platform
import threading

import pytest

from hermes.cron import CronStore, parse
from hermes.cron.store import MAX_ATTEMPTS, MISSED_AFTER
from hermes.state.lease import make_holder
from tests.state.helpers import StoreSpec

T0 = 1_800_000_000.0


@pytest.fixture
def cron(store: StoreSpec, make_db) -> CronStore:
    return CronStore(make_db().backend)


def _job(cron: CronStore, schedule: str = "every 10s", deliver: str = "telegram:42") -> str:
    made = cron.create_job(name="j", schedule=parse(schedule, now=T0), prompt="p",
                           deliver=deliver, now=T0)  # fmt: skip
    return str(made["id"])


def test_racing_schedulers_make_one_run_per_due_time(store: StoreSpec, make_db) -> None:
    cron = CronStore(make_db().backend)
    job = _job(cron)
    others = [CronStore(make_db().backend) for _ in range(4)]
    for due in (T0 + 10, T0 + 20, T0 + 30):
        barrier = threading.Barrier(len(others))
        made: list[dict] = []

        threads = [
            threading.Thread(target=_look, args=(s, barrier, made, due + 0.5)) for s in others
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [r["due_at"] for r in made] == [due]
    assert sorted(r["due_at"] for r in cron.runs(job)) == [T0 + 10, T0 + 20, T0 + 30]


def _look(store: CronStore, barrier: threading.Barrier, made: list, now: float) -> None:
    barrier.wait()
    made.extend(store.make_due_runs(now))


def test_missed_due_times_become_one_run_or_one_skip(cron: CronStore) -> None:
    job = _job(cron)
    late = T0 + 10 + MISSED_AFTER + 100  # eleven due times passed meanwhile
    assert [r["status"] for r in cron.make_due_runs(late)] == ["due"]
    assert cron.make_due_runs(late) == []
    assert cron.job(job)["next_run_at"] > late  # type: ignore[index]
    later = late + MISSED_AFTER + 100
    assert [r["status"] for r in cron.make_due_runs(later, missed="skip")] == ["skipped"]


def test_a_run_is_one_holders_until_its_lease_lapses(cron: CronStore) -> None:
    _job(cron)
    cron.make_due_runs(T0 + 10)
    first = cron.take_run("elsewhere:pid=1:agent=a", ttl=30, now=T0 + 10)
    assert first is not None and first["attempts"] == 1
    assert cron.take_run("elsewhere:pid=2:agent=b", ttl=30, now=T0 + 20) is None
    second = cron.take_run("elsewhere:pid=2:agent=b", ttl=30, now=T0 + 41)  # lease lapsed
    assert second is not None and second["id"] == first["id"] and second["attempts"] == 2
    assert not cron.finish(first["id"], "elsewhere:pid=1:agent=a", output="late", error=None,
                           deliver="telegram:42")  # fmt: skip
    assert cron.finish(second["id"], "elsewhere:pid=2:agent=b", output="answer", error=None,
                       deliver="telegram:42")  # fmt: skip
    [run] = cron.runs()
    assert (run["status"], run["output"], run["delivery"]) == ("completed", "answer", "pending")


def test_a_dead_holder_on_this_host_is_taken_over_at_once(cron: CronStore) -> None:
    import platform

    _job(cron)
    cron.make_due_runs(T0 + 10)
    dead = f"{platform.node()}:pid=999999999:agent=gone"
    assert cron.take_run(dead, ttl=3600, now=T0 + 10) is not None
    assert cron.take_run("elsewhere:pid=2:agent=b", ttl=30, now=T0 + 11) is not None


def test_a_delivery_retries_then_fails_visibly(cron: CronStore) -> None:
    _job(cron)
    cron.make_due_runs(T0 + 10)
    run = cron.take_run("h", ttl=30, now=T0 + 10)
    assert run is not None
    cron.finish(run["id"], "h", output="answer", error=None, deliver="telegram:42")
    assert cron.take_delivery("h", ["slack"], ttl=30) is None  # not a platform this gateway has
    statuses = []
    for _ in range(MAX_ATTEMPTS):
        row = cron.take_delivery("h", ["telegram"], ttl=30, now=2 * T0)
        assert row is not None and row["body"] == "answer"
        statuses.append(cron.retry_later(row["run_id"], "h", "Internal Server Error"))
    assert statuses == ["pending"] * (MAX_ATTEMPTS - 1) + ["failed"]
    assert cron.take_delivery("h", ["telegram"], ttl=30, now=3 * T0) is None
    [failed] = cron.failed_deliveries()
    assert (failed["attempts"], failed["last_error"]) == (MAX_ATTEMPTS, "Internal Server Error")
    assert cron.runs()[0]["delivery"] == "failed"


def test_a_local_job_stores_its_answer_and_delivers_nothing(cron: CronStore) -> None:
    _job(cron, deliver="local")
    cron.make_due_runs(T0 + 10)
    run = cron.take_run("h", ttl=30, now=T0 + 10)
    assert run is not None
    assert cron.finish(run["id"], "h", output="kept", error=None, deliver="local")
    assert cron.take_delivery("h", ["telegram", "slack", "discord"], ttl=30) is None
    assert cron.runs()[0]["output"] == "kept" and cron.runs()[0]["delivery"] is None


def test_a_cron_expression_keeps_its_wall_clock_across_a_dst_change() -> None:
    schedule = parse("0 9 * * *", timezone="Europe/Berlin")
    before = 1_774_656_000.0  # 2026-03-28 00:00 UTC, the day before the change
    first = schedule.next_after(before, anchor=before, timezone="Europe/Berlin")
    second = schedule.next_after(first or 0, anchor=before, timezone="Europe/Berlin")
    assert first is not None and second is not None
    assert second - first == 23 * 3600  # 09:00 CET, then 09:00 CEST


def test_a_run_its_caller_made_is_recorded_finished(store: StoreSpec, make_db) -> None:
    """0.19's ``mark_job_run``: a run made outside the gateways is stored finished, with a
    failed delivery where people see them; concurrent callers each get their own run, and
    the scheduler never takes one to run again."""
    cron = CronStore(make_db().backend)
    job = _job(cron)
    assert cron.record_run(job, None, None, now=T0 + 1) is not None
    failed = cron.record_run(job, "timeout", "telegram down", now=T0 + 2)
    assert cron.record_run("no-such-job", None, None) is None
    latest = cron.runs(job)[0]
    assert (latest["id"], latest["status"], latest["error"]) == (failed, "failed", "timeout")
    assert (latest["delivery"], latest["delivery_error"]) == ("failed", "telegram down")
    assert [d["last_error"] for d in cron.failed_deliveries()] == ["telegram down"]
    assert cron.job(job)["last_run_at"] == T0 + 2  # type: ignore[index]

    others = [CronStore(make_db().backend) for _ in range(4)]
    barrier = threading.Barrier(len(others))

    def mark(other: CronStore) -> None:
        barrier.wait()
        other.record_run(job, None, None, now=T0 + 3)  # the same instant for all four

    threads = [threading.Thread(target=mark, args=(other,)) for other in others]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert cron.finished_runs() == {job: 6}
    assert cron.take_run("gateway-1", ttl=60, now=T0 + 4) is None


def test_a_job_keeps_its_origin_and_the_jobs_it_reads(cron: CronStore) -> None:
    source = _job(cron)
    made = cron.create_job(
        name="digest", schedule=parse("every 1h", now=T0), prompt="sum up",
        deliver="telegram:123", origin={"platform": "telegram", "chat_id": "123"},
        context_from=[source], now=T0,
    )  # fmt: skip
    again = cron.job(made["id"])
    assert again is not None
    assert again["origin"] == {"platform": "telegram", "chat_id": "123"}
    assert again["context_from"] == [source]
    assert cron.update_job(made["id"], context_from=[], origin=None)["context_from"] == []  # type: ignore[index]
    assert cron.job(made["id"])["origin"] is None  # type: ignore[index]


def test_a_reading_job_is_given_the_latest_answer_of_each_job_it_reads(cron: CronStore) -> None:
    news, quiet = _job(cron), _job(cron)
    for n, answer in enumerate(("old news", "new news")):
        cron.run_now(news, now=T0 + n)
        run = cron.take_run("me", 60, now=T0 + n)
        assert run is not None
        assert cron.finish(run["id"], "me", output=answer, error=None, deliver="local")
    assert cron.latest_answers([quiet, news]) == {news: "new news"}


def test_a_store_from_before_the_cron_job_fields_upgrades_with_its_jobs(
    store: StoreSpec, make_db
) -> None:
    made = CronStore(make_db().backend)
    job = _job(made)
    # The store as the migration before these fields left it, its job still in it
    # (migration 21's columns go too: migrations run from the highest version recorded).
    for column in ("origin", "context_from", "repeat_times", "completed"):
        store.execute(f"ALTER TABLE cron_jobs DROP COLUMN {column}")
    store.execute("DELETE FROM schema_version WHERE version >= 20")  # migration 20 added them
    upgraded = CronStore(make_db().backend)
    kept = upgraded.job(job)
    assert kept is not None and kept["origin"] is None and kept["context_from"] == []


def _run_once(cron: CronStore, job: str, now: float, *, error: str | None = None) -> None:
    cron.run_now(job, now=now)
    run = cron.take_run("me", 60, now=now)
    assert run is not None
    assert cron.finish(run["id"], "me", output="ok", error=error, deliver="local")


def test_a_store_of_schema_20_upgrades_with_its_jobs_counts(store: StoreSpec, make_db) -> None:
    made = CronStore(make_db().backend)
    recurring, once = _job(made), _job(made, schedule="in 30m")
    _run_once(made, recurring, T0 + 1)
    _run_once(made, recurring, T0 + 2, error="boom")  # a failed run counts too, as in 0.19
    # The store as migration 20 left it, its jobs and their runs still in it.
    for column in ("repeat_times", "completed"):
        store.execute(f"ALTER TABLE cron_jobs DROP COLUMN {column}")
    store.execute("DELETE FROM schema_version WHERE version >= 21")
    upgraded = CronStore(make_db().backend)
    kept = {job["id"]: (job["repeat_times"], job["completed"]) for job in upgraded.jobs()}
    assert kept == {recurring: (None, 2), once: (1, 0)}


def test_a_one_shot_is_counted_when_first_taken_and_not_again(cron: CronStore) -> None:
    job = _job(cron, schedule="in 30m")
    [run] = cron.make_due_runs(T0 + 1800)
    taken = cron.take_run("me", 60, now=T0 + 1800)
    assert taken is not None and taken["id"] == run["id"]
    assert cron.job(job)["completed"] == 1  # type: ignore[index]  # before it ran
    # Its holder died: another takes the run over, and it is not counted again.
    again = cron.take_run("other", 60, now=T0 + 1900)
    assert again is not None and again["id"] == run["id"]
    assert cron.finish(run["id"], "other", output="done", error=None, deliver="local")
    assert (cron.job(job)["completed"], cron.job(job)["state"]) == (1, "completed")  # type: ignore[index]


def test_a_recurring_job_stops_at_its_repeat_times(cron: CronStore) -> None:
    made = cron.create_job(name="j", schedule=parse("every 10s", now=T0), prompt="p",
                           repeat_times=2, now=T0)  # fmt: skip
    job, ran = made["id"], []
    for now in (T0 + 10, T0 + 20, T0 + 30, T0 + 40):
        for run in cron.make_due_runs(now):
            taken = cron.take_run("me", 60, now=now)
            assert taken is not None
            assert cron.finish(taken["id"], "me", output="ok", error=None, deliver="local")
            ran.append(run["due_at"])
    assert ran == [T0 + 10, T0 + 20]
    assert (cron.job(job)["completed"], cron.job(job)["state"]) == (2, "completed")  # type: ignore[index]


def test_a_raised_repeat_count_gives_a_completed_job_its_next_runs(cron: CronStore) -> None:
    made = cron.create_job(name="j", schedule=parse("every 10s", now=T0), prompt="p",
                           repeat_times=1, now=T0)  # fmt: skip
    job = made["id"]
    _run_all_due(cron, T0 + 10)
    assert cron.job(job)["state"] == "completed"  # type: ignore[index]
    raised = cron.update_job(job, repeat_times=3, now=T0 + 15)
    assert raised is not None and raised["state"] == "scheduled"
    ran = [_run_all_due(cron, now) for now in (T0 + 25, T0 + 35, T0 + 45, T0 + 55)]
    assert ran == [1, 1, 0, 0]
    assert (cron.job(job)["completed"], cron.job(job)["state"]) == (3, "completed")  # type: ignore[index]


def test_a_count_set_on_a_job_that_kept_none_starts_from_zero(cron: CronStore) -> None:
    made = cron.create_job(name="j", schedule=parse("every 10s", now=T0), prompt="p",
                           completed=None, now=T0)  # fmt: skip
    changed = cron.update_job(made["id"], repeat_times=1, now=T0 + 5)
    assert changed is not None and (changed["repeat_times"], changed["completed"]) == (1, 0)
    assert [_run_all_due(cron, now) for now in (T0 + 15, T0 + 25)] == [1, 0]


def _run_all_due(cron: CronStore, now: float) -> int:
    """Make, take and finish every run due by ``now``; how many ran."""
    ran = 0
    for _ in cron.make_due_runs(now):
        taken = cron.take_run("me", 60, now=now)
        assert taken is not None
        assert cron.finish(taken["id"], "me", output="ok", error=None, deliver="local")
        ran += 1
    return ran


def test_a_job_that_keeps_no_count_is_never_counted(cron: CronStore) -> None:
    made = cron.create_job(name="j", schedule=parse("every 10s", now=T0), prompt="p",
                           completed=None, now=T0)  # fmt: skip
    _run_once(cron, made["id"], T0 + 1)
    assert cron.job(made["id"])["completed"] is None  # type: ignore[index]
    assert cron.claim_dispatch(made["id"]) is True


def test_a_run_its_caller_makes_itself_is_never_taken_and_ends_once(cron: CronStore) -> None:
    """0.19's ``cron.executions``: claimed, started, ended once, counted as a run; the
    scheduler takes none of it, and one whose holder died is ``unknown``, not run again."""
    job = _job(cron, deliver="local")
    mine = cron.claim_execution(job, make_holder(), now=T0)
    twin = cron.claim_execution(job, make_holder(), now=T0)  # the same instant: both kept
    assert (mine["status"], twin["due_at"] > mine["due_at"]) == ("claimed", True)
    assert cron.take_run("gateway", ttl=60, now=T0 + 1) is None
    started = cron.start_execution(mine["id"])
    assert started is not None and started["status"] == "started"
    assert cron.start_execution(mine["id"]) is None
    assert cron.take_run("gateway", ttl=60, now=T0 + 1) is None
    ended = cron.finish_execution(mine["id"], "boom", now=T0 + 2)
    assert ended is not None and (ended["status"], ended["error"]) == ("failed", "boom")
    assert cron.finish_execution(mine["id"], None) is None
    assert cron.job(job)["last_run_at"] == T0 + 2  # type: ignore[index]

    lost = cron.claim_execution(job, "elsewhere:pid=1:agent=x", now=T0 + 3)  # another host's
    dead = cron.claim_execution(job, f"{platform.node()}:pid=999999999:agent=x", now=T0 + 4)
    assert cron.recover_executions(now=T0 + 5) == 1  # the twin's holder (this process) lives
    statuses = {r["id"]: r["status"] for r in cron.runs(job)}
    assert statuses[dead["id"]] == "unknown" and statuses[twin["id"]] == "claimed"
    assert statuses[lost["id"]] == "claimed"  # on another host: only that host can tell
    assert cron.take_run("gateway", ttl=60, now=T0 + 6) is None


def test_racing_claimers_of_one_fire_get_one_claim(store: StoreSpec, make_db) -> None:
    """0.19's ``claim_job_for_fire`` on both engines: of claimers racing for the same fire,
    one wins, on PostgreSQL too (the job's row is taken first); the claim then stands."""
    cron = CronStore(make_db().backend)
    job = _job(cron)
    others = [CronStore(make_db().backend) for _ in range(4)]
    for n in range(3):
        now = T0 + 1000 * n
        barrier = threading.Barrier(len(others))
        won: list[bool] = []

        threads = [
            threading.Thread(target=_claim, args=(s, barrier, won, job, now)) for s in others
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(won) == [False, False, False, True]
        assert cron.claim_fire(job, "late", 300, now=now + 299) is False
    statuses = sorted(run["status"] for run in cron.ledger_runs(1000))
    assert statuses == ["claimed", "unknown", "unknown"]  # each stale claim closed


def _claim(
    store: CronStore, barrier: threading.Barrier, won: list[bool], job: str, now: float
) -> None:
    barrier.wait()
    won.append(store.claim_fire(job, make_holder("execution:fire"), 300, now=now))
