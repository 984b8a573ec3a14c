"""A job as Hermes Agent 0.19 writes it (``cron/jobs.json``, ``/api/jobs``), and back."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hermes.cron.schedule import Schedule, parse, zone


def as_019(job: dict[str, Any]) -> dict[str, Any]:
    """0.19's job record of one of ours: ``repeat`` only when the job keeps a count (one
    saved through 0.19's ``save_jobs`` without it keeps none); a job whose runs are over
    is not ``enabled``, as 0.19 says of it."""
    schedule = parse(job["schedule"], timezone=job["timezone"], now=job["created_at"])
    shape = schedule_019(schedule)
    record = {
        "id": job["id"],
        "name": job["name"],
        "prompt": job["prompt"],
        "skills": job["skills"],
        "skill": job["skills"][0] if job["skills"] else None,
        "model": job["model"],
        "schedule": shape,
        "schedule_display": shape["display"],
        "repeat": {"times": job["repeat_times"], "completed": job["completed"]},
        "enabled": job["state"] == "scheduled",
        "state": job["state"],
        "paused_at": None,
        "paused_reason": job["paused_reason"],
        "created_at": _iso(job["created_at"], job["timezone"]),
        "next_run_at": _iso(job["next_run_at"], job["timezone"]),
        "last_run_at": _iso(job["last_run_at"], job["timezone"]),
        "deliver": "origin" if job["deliver"] == origin_target(job["origin"]) else job["deliver"],
        "origin": job["origin"],
        "context_from": job["context_from"] or None,
        "enabled_toolsets": job["toolsets"] or None,
        "workdir": job["workdir"],
    }
    if job["completed"] is None:
        del record["repeat"]
    return record


def origin_target(origin: dict[str, Any] | None) -> str | None:
    """The target of 0.19's ``deliver: origin``: the chat the job was made from (None:
    no chat)."""
    if not origin or not origin.get("platform") or not origin.get("chat_id"):
        return None
    return f"{origin['platform']}:{origin['chat_id']}"


def schedule_019(schedule: Schedule) -> dict[str, Any]:
    if schedule.kind == "interval":
        minutes = (schedule.seconds or 0) / 60
        count = int(minutes) if minutes.is_integer() else minutes
        # 0.19 says an interval in minutes (``every 120m``) whatever unit it was given in.
        return {"kind": "interval", "minutes": count, "display": f"every {count}m"}
    if schedule.kind == "cron":
        return {"kind": "cron", "expr": schedule.text, "display": schedule.display}
    return {"kind": "once", "run_at": schedule.text, "display": schedule.display}


def schedule_text(value: Any) -> str:
    """Our schedule text for 0.19's schedule (its dict, or the string it was given)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        return ""
    kind = value.get("kind")
    if kind == "interval":
        return f"every {value.get('minutes')}m"
    if kind == "cron":
        return str(value.get("expr") or "")
    if kind == "once":
        return str(value.get("run_at") or "")
    return str(value.get("display") or "")


def _iso(stamp: float | None, timezone: str | None) -> str | None:
    if stamp is None:
        return None
    return datetime.fromtimestamp(stamp, zone(timezone)).isoformat()
