"""Hermes Agent 0.19's ``cron.scheduler``: running a job now, over the gateways' scheduler.

In hermes every running gateway runs the jobs, each run once under a lease
(hermes.cron.service). ``run_job`` therefore does not run the agent in the caller's
process: it asks for a run now, as ``hermes cron run`` does, waits for a gateway to
finish it and answers 0.19's ``(success, document, final_response, error)``. The gateway
also delivered the answer, so ``_deliver_result`` delivers nothing more.
"""

from __future__ import annotations

import time
from typing import Any

from cron import _store
from hermes.cron import files
from hermes.gateway.state_file import read_status

__all__ = ["SILENT_MARKER", "run_job"]

SILENT_MARKER = "[SILENT]"
_KNOWN_DELIVERY_PLATFORMS = frozenset({"telegram", "discord", "slack"})
RUN_WAIT_SECONDS = 900.0  # a job's turn may take minutes; 0.19's callers wait as long
_POLL_SECONDS = 0.5


def run_job(job: dict[str, Any], **_: Any) -> tuple[bool, str, str, str | None]:
    """Run ``job`` now on a gateway of this home and wait for its answer."""
    job_id = str(job.get("id") or "")
    name = str(job.get("name") or job_id)
    if not read_status(_store.home()).running:
        return _failed(
            job,
            "No gateway is running on this home to run the job: start one "
            "with `hermes gateway run`, then run the job again.",
        )
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        run_id = store.run_now(job_id)
    if run_id is None:
        return _failed(job, f"There is no job {job_id!r} (see `hermes cron list`).")
    deadline = time.monotonic() + RUN_WAIT_SECONDS
    while time.monotonic() < deadline:
        with _store.cron_store(read_only=True) as store:
            assert store is not None
            run = next((r for r in store.runs(job_id, limit=20) if r["id"] == run_id), None)
            held = store.job(job_id)
        if run is not None and run["status"] in ("completed", "failed") and held is not None:
            files.note_gateway_run(_store.home(), job_id, run_id)
            document = files.run_document(held, run)
            if run["status"] == "failed":
                return False, document, "", run["error"]
            return True, document, run["output"] or "", None
        time.sleep(_POLL_SECONDS)
    return _failed(
        job,
        f"The run of job {name!r} did not finish within {RUN_WAIT_SECONDS:.0f} "
        "s; it goes on on the gateway (see `hermes cron runs`).",
    )


def _failed(job: dict[str, Any], error: str) -> tuple[bool, str, str, str | None]:
    document = (
        f"# Cron Job: {job.get('name') or job.get('id')} (FAILED)\n\n"
        f"**Job ID:** {job.get('id')}\n\n## Error\n\n```\n{error}\n```\n"
    )
    return False, document, "", error


def _deliver_result(job: dict[str, Any], content: str, *_: Any, **__: Any) -> str | None:
    """The gateway that ran the job delivered its answer (once, from the outbox)."""
    return None
