"""The store's memory of retried API requests, and runs that never stay queued.

Each test runs on SQLite and on PostgreSQL; "gateways" are holder strings with a
heartbeat on their own ``SessionDB`` (as two gateway processes or hosts would be), dead
ones real exited pids.
"""

from __future__ import annotations

import socket
import threading

from hermes.state import SessionDB, make_holder
from hermes.state.gateway.api_requests import ANSWERED, MINE, RUNNING, WINDOW, RequestStore
from hermes.state.gateway.api_runs import RunStore

from .helpers import StoreSpec
from .procs import dead_pid

TAKEOVER = 120.0


def requests_of(db: SessionDB) -> RequestStore:
    return RequestStore(db.backend)


def alive(db: SessionDB) -> str:
    """A gateway that runs: a holder with a fresh heartbeat."""
    holder = make_holder()
    db.gateway.gateway_heartbeat(holder)
    return holder


def dead() -> str:
    return f"{socket.gethostname()}:pid={dead_pid()}:agent=crashed"


def claim(db: SessionDB, holder: str, *, retry: bool = True, key: str = "k1") -> object:
    return requests_of(db).claim("", key, holder, retry=retry, takeover_after=TAKEOVER)


def test_one_try_wins_and_its_retries_get_its_answer(make_db) -> None:
    a_db, b_db = make_db(), make_db()
    a, b = alive(a_db), alive(b_db)
    first = claim(a_db, a)
    assert first.status == MINE and not first.taken_over
    waiting = claim(b_db, b)
    assert waiting.status == RUNNING and waiting.answer_uid == first.answer_uid
    assert requests_of(b_db).look("", "k1", TAKEOVER).status == RUNNING
    assert requests_of(a_db).settle("", "k1", first.token, {"text": "once"})
    answered = claim(b_db, b)
    assert (answered.status, answered.answer) == (ANSWERED, {"text": "once"})
    assert requests_of(b_db).look("", "k1", TAKEOVER).answer == {"text": "once"}
    # Another principal's request under the same key is another request.
    other = requests_of(b_db).claim("alice", "k1", b, retry=True, takeover_after=TAKEOVER)
    assert other.status == MINE


def test_a_request_that_ran_no_turn_is_run_again_by_its_retry(make_db) -> None:
    db = make_db()
    holder = alive(db)
    first = claim(db, holder)
    requests_of(db).forget("", "k1", first.token)
    assert requests_of(db).look("", "k1", TAKEOVER) is None
    again = claim(db, holder)
    assert again.status == MINE and again.user_uid != first.user_uid


def test_the_request_of_a_dead_gateway_is_taken_over_once(make_db) -> None:
    db = make_db()
    crashed = dead()
    db.gateway.gateway_heartbeat(crashed)
    first = claim(db, crashed)
    assert requests_of(db).look("", "k1", TAKEOVER) is None  # nobody runs it any more
    takers = [make_db() for _ in range(3)]
    got: list[object] = []
    threads = [threading.Thread(target=lambda d=d: got.append(claim(d, alive(d)))) for d in takers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    mine = [c for c in got if c.status == MINE]
    assert len(mine) == 1 and mine[0].taken_over
    # The taker finishes the same turn: the uids the first try stored under.
    assert (mine[0].user_uid, mine[0].answer_uid) == (first.user_uid, first.answer_uid)
    assert not requests_of(db).settle("", "k1", first.token, {"text": "late"})  # not its any more


def test_a_new_request_under_a_known_key_and_an_old_answer_start_afresh(
    make_db, store: StoreSpec
) -> None:
    db = make_db()
    holder = alive(db)
    first = claim(db, holder)
    requests_of(db).settle("", "k1", first.token, {"text": "old"})
    regenerated = claim(db, holder, retry=False)  # an unmarked identical body
    assert regenerated.status == MINE and regenerated.answer_uid != first.answer_uid
    requests_of(db).settle("", "k1", regenerated.token, {"text": "new"})
    store.execute("UPDATE api_requests SET updated_at = updated_at - ?", (WINDOW + 1,))
    assert claim(db, holder).status == MINE  # its answer is forgotten after the window


def test_a_run_and_its_queued_input_are_one_write(make_db) -> None:
    db = make_db()
    holder = alive(db)
    runs = RunStore(db.backend)
    run, made, queue_id = runs.create(
        "run_1", conversation_id="c", session_key="api_server:c", model="m",
        queued={"options": {"run_id": "run_1"}}, owner=holder,
    )  # fmt: skip
    assert made and run["owner"] == holder
    [waiting] = db.gateway.pending_gateway_inputs()
    assert waiting["id"] == queue_id and waiting["owner"] == holder


def test_a_queued_run_of_a_dead_gateway_fails_unless_its_input_waits(make_db) -> None:
    db = make_db()
    crashed, survivor = dead(), alive(db)
    runs = RunStore(db.backend)
    for run_id in ("run_kept", "run_lost"):
        runs.create(
            run_id, conversation_id="c", session_key="api_server:c", model="m",
            queued={"options": {"run_id": run_id}}, owner=crashed,
        )  # fmt: skip
    [lost] = [r for r in db.gateway.pending_gateway_inputs() if "run_lost" in str(r["payload"])]
    assert db.gateway.delete_gateway_input(lost["id"], owner=crashed)  # taken, never begun
    failed = runs.fail_orphans(survivor, TAKEOVER, "cut", "never began")
    assert failed == ["run_lost"]
    assert runs.get("run_lost")["status"] == "failed"
    assert runs.get("run_lost")["error"] == "never began"
    assert runs.get("run_kept")["status"] == "queued"  # whoever takes its input answers it
    assert [e["event"] for e in runs.events_after("run_lost", 0)] == ["run.failed"]


def test_a_lost_run_fails_though_other_waiting_input_names_it(make_db) -> None:
    """Only the run's own queued input keeps it queued: not a run whose id contains its
    id, nor a chat message quoting it (either would strand it, queued for ever)."""
    db = make_db()
    crashed, survivor = dead(), alive(db)
    runs = RunStore(db.backend)
    for run_id in ("run_1", "run_10"):
        runs.create(
            run_id, conversation_id="c", session_key="api_server:c", model="m",
            queued={"text": "hi", "options": {"run_id": run_id}}, owner=crashed,
        )  # fmt: skip
    waiting = db.gateway.pending_gateway_inputs()
    [lost] = [r for r in waiting if r["payload"]["options"]["run_id"] == "run_1"]
    assert db.gateway.delete_gateway_input(lost["id"], owner=crashed)
    db.gateway.enqueue_gateway_input("api_server:c", {"text": "why did run_1 stop?"})
    assert runs.fail_orphans(survivor, TAKEOVER, "cut", "never began") == ["run_1"]
    assert runs.get("run_10")["status"] == "queued"
