"""Hermes Agent 0.19's jobs API over the store's scheduled jobs.

``/api/jobs`` (GET list, POST create), ``/api/jobs/{job_id}`` (GET, PATCH, DELETE) and
``/api/jobs/{job_id}/pause|resume|run``, with 0.19's bodies: ``{"jobs": [...]}``,
``{"job": {...}}``, ``{"ok": true}`` and ``{"error": "..."}``. Every gateway on the
store serves the same jobs; whichever gateway's scheduler takes a run, it runs once.
A job may name its toolsets (``enabled_toolsets``, the field 0.19's jobs carry, or
``toolsets``): hermes's toolsets, tool names or MCP servers; an unknown name is a 400.
``workdir`` (create and update; ``""`` or null clears it) is the folder its runs work
in, checked as ``hermes cron --workdir`` checks it: a refused one is a 400.
Jobs are the operator's: an API principal (``gateway.api_keys``) gets a 403 here.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from hermes.cron import CronStore, check_target, parse
from hermes.cron.shape import as_019, schedule_text
from hermes.cron.workdir import check_workdir
from hermes.errors import HermesError
from hermes.gateway.http import caller
from hermes.gateway.http.guard import Handler
from hermes.tools.toolsets import check_names

if TYPE_CHECKING:
    from hermes.config import Config

_JOB_ID = re.compile(r"[a-f0-9]{12}")
_UPDATABLE = {
    "name",
    "schedule",
    "prompt",
    "deliver",
    "skills",
    "skill",
    "enabled",
    "enabled_toolsets",
    "toolsets",
    "workdir",
    "repeat",
}
MAX_NAME = 200
MAX_PROMPT = 5000


def add_routes(app: web.Application, store: CronStore, config: Config | None, home: Path) -> None:
    api = _JobsApi(store, config, home)
    app.router.add_get("/api/jobs", _operator_only(api.list))
    app.router.add_post("/api/jobs", _operator_only(api.create))
    app.router.add_get("/api/jobs/{job_id}", _operator_only(api.get))
    app.router.add_patch("/api/jobs/{job_id}", _operator_only(api.update))
    app.router.add_delete("/api/jobs/{job_id}", _operator_only(api.delete))
    app.router.add_post("/api/jobs/{job_id}/pause", _operator_only(api.pause))
    app.router.add_post("/api/jobs/{job_id}/resume", _operator_only(api.resume))
    app.router.add_post("/api/jobs/{job_id}/run", _operator_only(api.run))


def _operator_only(handler: Handler) -> Handler:
    """Scheduled jobs run as the operator and reach any chat: no principal's business."""

    async def only(request: web.Request) -> web.StreamResponse:
        if request.get(caller.REQUEST_ITEM) is not None:
            return _error(
                403, "Scheduled jobs are the operator's: use the operator's key (gateway.api_key)."
            )
        return await handler(request)

    return only


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise HermesError("The body must be a JSON object.") from None
    if not isinstance(body, dict):
        raise HermesError("The body must be a JSON object.")
    return body


class _JobsApi:
    def __init__(self, store: CronStore, config: Config | None, home: Path) -> None:
        self.store = store
        self.config = config
        self.home = home

    def _workdir(self, value: Any) -> str | None:
        return check_workdir(value, hermes_home=self.home, store=self.store.backend)

    async def _job(self, request: web.Request) -> dict[str, Any] | web.Response:
        job_id = request.match_info["job_id"]
        if not _JOB_ID.fullmatch(job_id):
            return _error(400, "Invalid job ID format")
        job = await asyncio.to_thread(self.store.job, job_id)
        if job is None or job["id"] != job_id:
            return _error(404, "Job not found")
        return job

    async def list(self, request: web.Request) -> web.Response:
        everything = request.query.get("include_disabled", "").lower() in {"true", "1"}
        jobs = await asyncio.to_thread(self.store.jobs, include_disabled=everything)
        return web.json_response({"jobs": [as_019(j) for j in jobs]})

    async def create(self, request: web.Request) -> web.Response:
        try:
            body = await _body(request)
            name = str(body.get("name") or "").strip()
            schedule = schedule_text(body.get("schedule")).strip()
            prompt = str(body.get("prompt") or "")
            if not name:
                return _error(400, "Name is required")
            if len(name) > MAX_NAME:
                return _error(400, f"Name must be ≤ {MAX_NAME} characters")
            if not schedule:
                return _error(400, "Schedule is required")
            if len(prompt) > MAX_PROMPT:
                return _error(400, f"Prompt must be ≤ {MAX_PROMPT} characters")
            parsed = parse(schedule)
            target = check_target(body.get("deliver"))
            skills = _skills(body)
            toolsets = _toolsets(body, self.config)
            workdir = self._workdir(body.get("workdir"))
            repeat = _repeat(body.get("repeat"), forever_ok=False)
            job = await asyncio.to_thread(
                lambda: self.store.create_job(
                    name=name,
                    schedule=parsed,
                    prompt=prompt,
                    deliver=target,
                    skills=skills,
                    toolsets=toolsets,
                    workdir=workdir,
                    repeat_times=repeat,
                )
            )
        except HermesError as exc:
            return _error(400, str(exc))
        return web.json_response({"job": as_019(job)})

    async def get(self, request: web.Request) -> web.Response:
        job = await self._job(request)
        return job if isinstance(job, web.Response) else web.json_response({"job": as_019(job)})

    async def update(self, request: web.Request) -> web.Response:
        job = await self._job(request)
        if isinstance(job, web.Response):
            return job
        try:
            body = await _body(request)
            given = {k: v for k, v in body.items() if k in _UPDATABLE}
            if not given:
                return _error(400, "No valid fields to update")
            fields = _fields(given, self.config)
            if "workdir" in given:
                fields["workdir"] = self._workdir(given["workdir"])
        except HermesError as exc:
            return _error(400, str(exc))
        return await self._updated(job, fields)

    async def delete(self, request: web.Request) -> web.Response:
        job = await self._job(request)
        if isinstance(job, web.Response):
            return job
        await asyncio.to_thread(self.store.remove_job, job["id"])
        return web.json_response({"ok": True})

    async def pause(self, request: web.Request) -> web.Response:
        return await self._set(request, enabled=0, next_run_at=None)

    async def resume(self, request: web.Request) -> web.Response:
        return await self._set(request, enabled=1)

    async def _set(self, request: web.Request, **fields: Any) -> web.Response:
        job = await self._job(request)
        if isinstance(job, web.Response):
            return job
        return await self._updated(job, fields)

    async def _updated(self, job: dict[str, Any], fields: dict[str, Any]) -> web.Response:
        """The job as it stands once ``fields`` are written to it."""
        updated = await asyncio.to_thread(lambda: self.store.update_job(job["id"], **fields))
        return web.json_response({"job": as_019(updated or job)})

    async def run(self, request: web.Request) -> web.Response:
        job = await self._job(request)
        if isinstance(job, web.Response):
            return job
        await asyncio.to_thread(self.store.run_now, job["id"])
        return web.json_response({"job": as_019(job)})


def _skills(body: dict[str, Any]) -> list[str]:
    skills = body.get("skills") or ([body["skill"]] if body.get("skill") else [])
    if not isinstance(skills, list) or not all(isinstance(s, str) for s in skills):
        raise HermesError("'skills' must be a list of skill names.")
    return skills


def _toolsets(body: dict[str, Any], config: Config | None) -> list[str]:
    names = body.get("enabled_toolsets", body.get("toolsets")) or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise HermesError("'enabled_toolsets' must be a list of toolset or tool names.")
    return check_names(names, config)


def _repeat(value: Any, *, forever_ok: bool) -> int | None:
    """0.19's ``repeat``: how many runs the job makes (an integer, or ``{"times": N}`` as
    a job shows it); None: as many as its schedule gives (on a change: null or 0)."""
    times = value.get("times") if isinstance(value, dict) else value
    if times is None or (forever_ok and times == 0):
        return None
    if isinstance(times, bool) or not isinstance(times, int) or times < 1:
        raise HermesError("Repeat must be a positive integer")
    return times


def _fields(given: dict[str, Any], config: Config | None) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if "name" in given:
        name = str(given["name"] or "").strip()
        if not name or len(name) > MAX_NAME:
            raise HermesError(f"Name must be 1 to {MAX_NAME} characters")
        fields["name"] = name
    if "prompt" in given:
        if len(str(given["prompt"])) > MAX_PROMPT:
            raise HermesError(f"Prompt must be ≤ {MAX_PROMPT} characters")
        fields["prompt"] = str(given["prompt"])
    if "schedule" in given:
        fields["schedule"] = parse(schedule_text(given["schedule"])).text
    if "deliver" in given:
        fields["deliver"] = check_target(given["deliver"])
    if "skills" in given or "skill" in given:
        fields["skills"] = _skills(given)
    if "enabled_toolsets" in given or "toolsets" in given:
        fields["toolsets"] = _toolsets(given, config)
    if "repeat" in given:
        fields["repeat_times"] = _repeat(given["repeat"], forever_ok=True)
    if "enabled" in given:
        fields["enabled"] = 1 if given["enabled"] else 0
        if not given["enabled"]:
            fields["next_run_at"] = None
    return fields
