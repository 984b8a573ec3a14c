"""The scheduler every gateway runs: due runs made, taken, run and delivered once.

Each tick writes the runs of the jobs that came due (one per due time, whoever looks),
takes runs under a lease and runs each as a conversation of its own (``source='cron'``,
titled by the job) with the full tool loop and nobody to approve a dangerous command,
so such a command is refused. A run works in its job's folder (its ``workdir``, else
``<workspaces>/cron/<job id>/``: ``cron.workdir``), confined there like a gateway user. The answer and its outbox row are stored together; the
outbox is then sent through this gateway's adapters and marked sent once the platform
accepted it, or retried with a backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.agent.turn_options import TurnOptions
from hermes.cron.job_run import JobAgent, job_prompt, job_tools, with_context
from hermes.cron.store import CronStore
from hermes.cron.targets import home_chat, split_target
from hermes.cron.workdir import run_folder

if TYPE_CHECKING:
    from hermes.state.store import SessionDB

log = logging.getLogger(__name__)

# (platform, chat id, text, delivery id) -> sent; raises when the platform did not
# accept it. The delivery id (the run's) is the same on every retry, for a platform
# that can use it to drop a repeat.
Send = Callable[[str, str, str, str], Awaitable[None]]


class CronService:
    """Scheduled jobs on one gateway; ``serve`` until ``close``."""

    def __init__(
        self,
        db: SessionDB,
        *,
        holder: str,
        make_agent: Callable[..., JobAgent],
        send: Send,
        config: Any,
        home: Path,
        platforms: Callable[[], Sequence[str]],
        missed: str = "run_once",
        tick: float = 1.0,
        ttl: float = 120.0,
        limit: int = 2,
        on_change: Callable[[CronStore], None] | None = None,
        on_tick: Callable[[bool], None] | None = None,
    ) -> None:
        self.db = db
        self.store = CronStore(db.backend, read_only=db.read_only, on_change=on_change)
        self.holder = holder
        self.make_agent = make_agent
        self.send = send
        self.config = config  # with ``home``: where each job's runs work (cron.workdir)
        self.home = home
        self.platforms = platforms
        self.missed = missed
        self.tick = tick
        self.ttl = ttl
        self.limit = limit
        self.on_tick = on_tick  # told after each tick whether it went through
        self.closing = False
        self._running: dict[str, asyncio.Task[None]] = {}
        self._agents: dict[str, JobAgent] = {}

    async def serve(self) -> None:
        while not self.closing:
            ok = True
            try:
                await self.tick_once()
            except Exception:
                ok = False
                log.exception("cron: a scheduler tick failed")
            if self.on_tick is not None:
                self.on_tick(ok)
            await asyncio.sleep(self.tick)

    async def tick_once(self) -> None:
        made = await asyncio.to_thread(self.store.make_due_runs, time.time(), missed=self.missed)
        for run in made:
            if run["status"] == "skipped":
                log.info(
                    "cron: skipped the missed run of job %s due at %s (cron.missed: skip)",
                    run["job_id"],
                    time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["due_at"])),
                )
        while not self.closing and len(self._running) < self.limit:
            taken = await asyncio.to_thread(self._take_run)
            if taken is None:
                break
            task = asyncio.create_task(self._run(taken), name=f"cron-run-{taken['id']}")
            self._running[taken["id"]] = task
            task.add_done_callback(partial(self._forget, taken["id"]))
        await self._deliver_due()

    def _take_run(self) -> dict[str, Any] | None:
        return self.store.take_run(self.holder, self.ttl)

    def _forget(self, run_id: str, _: object) -> None:
        self._running.pop(run_id, None)

    async def close(self) -> None:
        """Stop taking work; interrupt this gateway's runs and give them back."""
        self.closing = True
        for agent in list(self._agents.values()):
            with contextlib.suppress(Exception):
                agent.interrupt()
        if self._running:
            await asyncio.gather(*self._running.values(), return_exceptions=True)

    # -- a run ----------------------------------------------------------------------------

    async def _run(self, run: dict[str, Any]) -> None:
        keeper = asyncio.create_task(self._keep_lease(run["id"]))
        try:
            await asyncio.to_thread(self._execute, run)
        except Exception:
            log.exception("cron: run %s failed", run["id"])
        finally:
            keeper.cancel()

    async def _keep_lease(self, run_id: str) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.store.refresh_run, run_id, self.holder, self.ttl)

    def _execute(self, run: dict[str, Any]) -> None:
        job = next((j for j in self.store.jobs() if j["id"] == run["job_id"]), None)
        if job is None:
            self.store.finish(
                run["id"], self.holder, output=None, error="the job was removed", deliver="local"
            )
            return
        session_id = self.db.create_session(
            source="cron", title=job["name"], session_key=f"cron:{job['id']}", model=job["model"]
        )
        self.store.set_run_session(run["id"], self.holder, session_id)
        answered = self._answer(run, job, session_id)
        if answered is None:
            return  # interrupted by this gateway's shutdown and given back
        output, error = answered
        if self.store.finish(
            run["id"], self.holder, output=output, error=error, deliver=job["deliver"]
        ):
            log.info("cron: job %s (%s) ran: %s", job["id"], job["name"], error or "answered")
        else:
            log.warning("cron: run %s was taken over before it finished here", run["id"])

    def _answer(
        self, run: dict[str, Any], job: dict[str, Any], session_id: str
    ) -> tuple[str | None, str | None] | None:
        """(answer, error) of the job's turn, run in the job's folder; None when the
        run was interrupted by this gateway's shutdown and given back."""
        folder, note = run_folder(
            job, config=self.config, hermes_home=self.home, store=self.store.backend
        )
        if note:
            log.warning("cron: job %s (%s): %s", job["id"], job["name"], note)
        # The job's folder is its working directory: the tools are confined to it
        # (workspaces.confined), never to where the gateway was started. As in 0.19, only
        # a workdir's context files (AGENTS.md ...) reach the prompt: one a run wrote into
        # the job's own folder must not instruct the runs after it.
        project = None if note or not job["workdir"] else folder
        options: dict[str, Any] = {
            "session_id": session_id,
            "source": "cron",
            "cwd": folder,
            "skip_context_files": project is None,
        }
        if job["model"]:
            options["model"] = job["model"]
        output, error = None, None
        try:
            agent = self.make_agent(**options)
            self._agents[run["id"]] = agent
            offered = job_tools(agent, job["toolsets"])
            chosen = TurnOptions(tools=None if offered is None else tuple(offered))
            prompt = job_prompt(agent, job["prompt"], job["skills"], project=project)
            prompt = with_context(prompt, self.store.latest_answers(job["context_from"]))
            result = agent.run(prompt, options=chosen)
            if result.interrupted and self.closing:
                self.store.release(run["id"], self.holder)
                return None
            output = result.answer
            error = None if output else "the agent gave no answer"
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        finally:
            self._agents.pop(run["id"], None)
        if note and output:
            output = f"[{note}]\n\n{output}"  # whoever reads the answer learns it too
        elif note and error:
            error = f"{note} {error}"
        return output, error

    # -- deliveries -------------------------------------------------------------------------

    async def _deliver_due(self) -> None:
        platforms = list(self.platforms())
        if not platforms:
            return
        while not self.closing:
            row = await asyncio.to_thread(
                self.store.take_delivery, self.holder, platforms, self.ttl
            )
            if row is None:
                return
            await self._deliver(row)

    async def _deliver(self, row: dict[str, Any]) -> None:
        platform, chat = split_target(row["target"])
        try:
            chat = chat or await asyncio.to_thread(home_chat, self.home, platform)
            await self.send(platform, chat, row["body"], row["run_id"])
        except Exception as exc:
            status = await asyncio.to_thread(
                self.store.retry_later, row["run_id"], self.holder, str(exc) or type(exc).__name__
            )
            level = logging.ERROR if status == "failed" else logging.WARNING
            log.log(
                level,
                "cron: delivery of run %s to %s failed (%s, attempt %d): %s",
                row["run_id"],
                row["target"],
                status,
                row["attempts"],
                exc,
            )
            return
        await asyncio.to_thread(self.store.sent, row["run_id"], self.holder)
        log.info("cron: delivered run %s to %s", row["run_id"], row["target"])
