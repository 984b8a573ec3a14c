"""One soak process: an agent running real turns, or a direct store writer.

    python -m benchmarks.soak.worker agent|writer|gateway --store LOC --conversation ID
        --logs DIR --until EPOCH [--base-url URL] [--seed N] [--no-ask]

Each acknowledged write is logged to ``DIR/<role>-<pid>.log`` (flushed and fsynced after
the call returned): ``turn <uid> <text>`` for a user message whose ``run``
returned, ``append <uid>`` for an append the store acknowledged, ``undo <epoch> <tags>``
for turns an agent undid (none of them may reach the model after that moment), ``refused
<reason>`` for an undo refused because its summary could not be made again, ``review
<epoch> <tags>`` for a background review's request about to go out: the moment its check
of the store began, and the turns it carries. An agent
writes ``DIR/status-<pid>`` = ``tool`` while a tool runs, so the killer can aim.

A ``gateway`` runs a real ``GatewayRunner`` (the HTTP API on a free port) and asks it,
over HTTP, one message after another in the conversation ``ID`` (``asked <tag>`` before,
``answered <tag>`` after), each under an ``Idempotency-Key``; some first tries give up
after half a second and are sent again to another gateway on the store (``retried
<tag>``), and some requests start a run instead (``run <id>``, ``POST /v1/runs``);
killed, the next one started in its place must answer the turn the kill cut off and
end its tool command. ``--no-ask`` only starts it (answering
what the last one left), waits until it is idle, and stops.

The process may be SIGKILLed at any moment; that is the point.
"""

from __future__ import annotations

import argparse
import os
import random
import threading
import time
import uuid
from pathlib import Path
from typing import Any, TextIO

from benchmarks.soak.model import TAG
from benchmarks.soak.store import open_db
from hermes.agent import AIAgent
from hermes.agent.errors import AgentError
from hermes.config import hermes_home, load_config
from hermes.state import SessionDB

NONCE = uuid.uuid4().hex[:8]  # pids are reused after kills; texts must stay unique
PADDING = "Some words so that the context grows and compression has work to do. " * 2


class AckLog:
    """An append-only log whose every line is on disk once ``write`` returns."""

    def __init__(self, path: Path) -> None:
        self.file: TextIO = path.open("a", encoding="utf-8")
        self.lock = threading.Lock()  # the review writes from its own thread

    def write(self, line: str) -> None:
        with self.lock:
            self.file.write(line + "\n")
            self.file.flush()
            os.fsync(self.file.fileno())


def _set_status(logs: Path, value: str) -> None:
    path = logs / f"status-{os.getpid()}"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(value)
    os.replace(tmp, path)


def run_agent(args: argparse.Namespace, db: SessionDB, log: AckLog) -> None:
    logs = Path(args.logs)
    rng = random.Random(args.seed)

    def on_event(kind: str, data: dict[str, Any]) -> None:
        if kind in ("tool_start", "tool_end"):
            _set_status(logs, "tool" if kind == "tool_start" else "idle")
        elif kind == "review_request":  # logged (on disk) before the request goes out
            tags = sorted(
                {t for m in data["messages"] for t in TAG.findall(f"{m.get('content')}.")}
            )
            log.write(f"review {data['checked_at']} {' '.join(tags)}")

    agent = AIAgent(
        api_key="k", base_url=args.base_url, model="fake-model", quiet_mode=True,
        session_db=db, session_id=args.conversation, skip_context_files=True,
        config=load_config(), event_callback=on_event, cwd=logs, tools=["terminal"],
    )  # fmt: skip
    for n in range(args.max_turns):
        if time.time() >= args.until:
            return
        text = f"user {NONCE}-{n}. {PADDING}"
        try:
            result = agent.run(text)
        except Exception as error:  # a refused or failed turn is not acknowledged
            log.write(f"error {type(error).__name__}: {str(error)[:200]!r}")
            time.sleep(0.2)
            continue
        uid = next(
            (m.get("message_uid", "") for m in result.messages if m.get("content") == text),
            "",
        )
        log.write(f"turn {uid} {text.split('.')[0]}")
        if rng.random() < UNDO_SHARE:
            take_back(agent, rng.randint(1, 5), log)


UNDO_SHARE = 0.1  # of an agent's turns, followed by an /undo of the last 1-5 turns


def take_back(agent: AIAgent, turns: int, log: AckLog) -> None:
    """Undo the last ``turns`` turns; log their tags and the moment it was done."""
    try:
        undone = agent.undo(turns)
    except AgentError as error:  # the summary could not be made again: nothing changed
        log.write(f"refused {str(error)[:120]!r}")
        return
    tags = sorted({tag for m in undone for tag in TAG.findall(f"{m.get('content')}.")})
    if tags:
        log.write(f"undo {time.time()} {' '.join(tags)}")


def run_writer(args: argparse.Namespace, db: SessionDB, log: AckLog) -> None:
    rng = random.Random(args.seed)
    stop = threading.Event()
    threading.Thread(target=_neighbours, args=(args, rng.randrange(10**6), stop, log),
                     daemon=True).start()  # fmt: skip
    try:
        _append_until(args, db, log, rng)
    finally:
        stop.set()


def _neighbours(args: argparse.Namespace, seed: int, stop: threading.Event, log: AckLog) -> None:
    """What else a library caller's process opens beside its writer (issue 53): read-only
    handles, some kept open a while, some closed at once; Hermes Agent's ``cron.jobs``
    facade (it opens the home's store read-only) and its ``hermes_state.SessionDB``.
    (``tools.process_registry`` is left to tests/state/test_foreign_descriptors.py:
    polled here, the gateways answered nothing in a short soak; the cause is not found.) Each one done is logged as ``neighbour <what>``."""
    from cron.jobs import list_jobs

    import hermes_state
    from benchmarks.soak.store import is_postgres

    rng = random.Random(seed)
    kept: list[SessionDB] = []

    def read_only() -> None:
        where = {"url": args.store} if is_postgres(args.store) else {"db_path": args.store}
        handle = SessionDB(read_only=True, **where)
        handle.get_session(args.conversation)
        if rng.random() < 0.5:
            kept.append(handle)  # closed a few rounds later
        else:
            handle.close()

    def agents_session_db() -> None:
        handle = hermes_state.SessionDB()  # the home's store, as a plugin opens it
        handle.get_session(args.conversation)
        handle.close()

    actions = {
        "read_only": read_only,
        "cron_jobs": list_jobs,
        "hermes_state": agents_session_db,
    }
    while not stop.wait(rng.uniform(0.3, 1.0)):
        what = rng.choice(sorted(actions))
        try:
            actions[what]()
        except Exception as error:  # noqa: BLE001 - a locked store: said, and tried again
            log.write(f"neighbour_error {what} {type(error).__name__}: {str(error)[:120]!r}")
            continue
        log.write(f"neighbour {what}")
        while len(kept) > 2 or (kept and rng.random() < 0.3):
            kept.pop(0).close()


def _append_until(args: argparse.Namespace, db: SessionDB, log: AckLog, rng: random.Random) -> None:
    for n in range(args.max_turns * 10):
        if time.time() >= args.until:
            return
        uid = f"soak-append-{NONCE}-{n}"
        content = f"[background event] process {NONCE} event {n} finished"
        try:
            db.append_message(args.conversation, "user", content, message_uid=uid)
        except Exception as error:  # not acknowledged: nothing is promised
            log.write(f"error {type(error).__name__}: {str(error)[:200]!r}")
        else:
            log.write(f"append {uid}")
        time.sleep(rng.uniform(0.2, 1.0))


def run_gateway(args: argparse.Namespace, db: SessionDB, log: AckLog) -> None:
    import asyncio

    asyncio.run(_gateway(args, db, log))


async def _gateway(args: argparse.Namespace, db: SessionDB, log: AckLog) -> None:
    import asyncio

    import httpx

    from hermes.gateway.runner import GatewayRunner
    from hermes.gateway.settings import ApiServerSettings

    runner = GatewayRunner(
        load_config(), db=db, api=ApiServerSettings(host="127.0.0.1", port=0),
        agent_options={"api_key": "k", "base_url": args.base_url, "model": "fake-model",
                       "tools": ["terminal"], "skip_context_files": True, "skip_memory": True,
                       "cwd": args.logs},
    )  # fmt: skip
    await runner.start()
    api = runner.adapters["api_server"]
    # Other gateways send retries here: every gateway on the store shares one key.
    _set_url(Path(args.logs), api.url + "/v1", api.api.key)
    headers = {"Authorization": f"Bearer {api.api.key}", "X-Hermes-Session-Id": args.conversation}
    model = str(runner.config.get("model.default"))  # the one model the gateway offers
    rng = random.Random(args.seed)
    try:
        async with httpx.AsyncClient(base_url=api.url + "/v1", headers=headers, timeout=60) as http:
            for n in range(0 if args.no_ask else args.max_turns):
                if time.time() >= args.until:
                    break
                tag = f"{NONCE}-{n}"
                if n == 0 or rng.random() < RUN_SHARE:  # a run first: each start makes one
                    await _start_run(http, model, tag, log)
                    continue
                log.write(f"asked {tag}")
                body = {"model": model,
                        "messages": [{"role": "user", "content": f"gw {tag}. {PADDING}"}]}  # fmt: skip
                try:
                    reply = await _ask(http, body, tag, Path(args.logs), rng, log)
                except httpx.HTTPError as error:
                    log.write(f"error {tag} {type(error).__name__}")
                    await asyncio.sleep(0.5)
                    continue
                if reply.status_code == 200:
                    log.write(f"answered {tag}")
                else:  # a refusal (the summary model failing, a 503 at shutdown): said once
                    log.write(f"error {tag} {reply.status_code} {reply.text[:160]!r}")
                    await asyncio.sleep(0.5)
        while args.no_ask and runner.scheduler and runner.scheduler.lanes:
            if time.time() >= args.until:
                break
            await asyncio.sleep(0.2)
    finally:
        await runner.stop(grace=2)


RUN_SHARE = 0.15  # of a gateway worker's later requests: a run (POST /v1/runs) of its own
IMPATIENT_SHARE = 0.3  # of its questions: the first try gives up early and is retried
IMPATIENCE = 0.5  # seconds the first try of an impatient question waits


def _set_url(logs: Path, url: str, key: str) -> None:
    path = logs / f"url-{os.getpid()}"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{url} {key}")
    os.replace(tmp, path)


def _other_gateways(logs: Path) -> list[tuple[str, str]]:
    """(URL, key) of the other gateway workers that started (some may be dead now)."""
    found = []
    for path in logs.glob("url-*"):
        if path.name != f"url-{os.getpid()}" and path.suffix != ".tmp":
            url, _, key = path.read_text().partition(" ")
            found.append((url, key))
    return found


async def _ask(http: Any, body: dict[str, Any], tag: str, logs: Path, rng: random.Random,
               log: AckLog) -> Any:  # fmt: skip
    """One question under an Idempotency-Key; an impatient first try gives up early and
    is sent again to another gateway on the store (else to this one) until answered."""
    import httpx

    key = {"Idempotency-Key": f"soak-{tag}"}
    if rng.random() >= IMPATIENT_SHARE:
        return await http.post("/chat/completions", json=body, headers=key)
    try:
        return await http.post("/chat/completions", json=body, headers=key, timeout=IMPATIENCE)
    except httpx.TimeoutException:
        pass
    others = _other_gateways(logs)
    for url, secret in [*rng.sample(others, k=len(others)), ("", "")]:
        target = f"{url}/chat/completions" if url else "/chat/completions"
        retry = {**key, **({"Authorization": f"Bearer {secret}"} if url else {})}
        log.write(f"retried {tag}")
        try:
            return await http.post(target, json=body, headers=retry)
        except httpx.TransportError:
            continue  # that gateway was killed: the next one
    return await http.post("/chat/completions", json=body, headers=key)


async def _start_run(http: Any, model: str, tag: str, log: AckLog) -> None:
    """A run in a conversation of its own; its id logged once the gateway accepted it."""
    import httpx

    try:
        reply = await http.post("/runs", json={"model": model, "input": f"run {tag}"})
    except httpx.HTTPError as error:
        log.write(f"error {tag} {type(error).__name__}")
        return
    if reply.status_code == 202:
        log.write(f"run {reply.json()['run_id']}")


def run_cron(args: argparse.Namespace, db: SessionDB, log: AckLog) -> None:
    """A gateway's scheduler alone: it runs the due runs of the store's jobs and
    "delivers" each answer by logging ``delivered <run id>`` (the platform's accept)."""
    import asyncio

    from hermes.cron.service import CronService
    from hermes.state import make_holder

    def make_agent(**options: Any) -> AIAgent:
        return AIAgent(api_key="k", base_url=args.base_url, model="fake-model",
                       quiet_mode=True, session_db=db,
                       skip_memory=True, config=load_config(),
                       tools=["terminal"], **options)  # fmt: skip

    async def send(platform: str, chat: str, text: str, delivery: str) -> None:
        log.write(f"delivered {delivery}")

    async def serve() -> None:
        # Each job's runs work in its own folder under this HERMES_HOME (cron.workdir).
        service = CronService(db, holder=make_holder(), make_agent=make_agent, send=send,
                              config=load_config(), home=hermes_home(),
                              platforms=lambda: ["telegram"], tick=0.2, ttl=30)  # fmt: skip
        task = asyncio.create_task(service.serve())
        await asyncio.sleep(max(0.0, args.until - time.time()))
        await service.close()
        task.cancel()

    asyncio.run(serve())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak.worker")
    parser.add_argument("role", choices=("agent", "writer", "gateway", "cron"))
    parser.add_argument("--store", required=True)
    parser.add_argument("--conversation", required=True)
    parser.add_argument("--logs", required=True)
    parser.add_argument("--until", type=float, required=True, help="stop at this epoch time")
    parser.add_argument("--base-url", default="")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-turns", type=int, default=10_000, help="a bound on the loop")
    parser.add_argument("--no-ask", action="store_true", help="gateway: only start and drain")
    args = parser.parse_args(argv)
    log = AckLog(Path(args.logs) / f"{args.role}-{os.getpid()}.log")
    db = open_db(args.store)
    try:
        roles = {"agent": run_agent, "writer": run_writer, "gateway": run_gateway, "cron": run_cron}
        roles[args.role](args, db, log)
    finally:
        db.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
