"""The soak's checker: reads the acknowledgement logs and the store, returns the figures.

Lost: acknowledged but no row with that uid. Duplicated: an original (non-compacted)
user row stored twice in its conversation. Forks: a parent with more than one compression
child. Bad tips: a conversation without exactly one live segment. Orphan writes:
non-compacted rows in a segment ended by compression with an id above its child's first
row. Coverage: ``SessionDB.coverage_violations()`` (invariant 14) where the store has it.
Undone resent: a model request received after an undo was acknowledged that still
carries one of its turns (invariant 16). A background review's request is judged by the
moment its check of the store began (the worker's ``review`` line), not by when it
arrived: a request that had left, or was leaving, when the undo committed cannot be
called back (``reviews_in_flight`` counts those, not a violation); the acknowledgement
stands for the undo's commit, a moment later. ``unchecked_reviews``: review requests the
model received beyond the checks logged, each one a request sent without a check. Gateway turns: in the
gateways' conversations, every standing question has exactly one answer (an answer, or
the sentence saying it was interrupted) after the last gateway start; ``unanswered`` and
``doubled`` count the others (invariant 16). Runs and retries: ``runs_stranded`` counts
runs (``POST /v1/runs``) still queued or running after the last start, and
``double_answers`` the gateway questions stored more than once as standing turns (a
retry, sent to another gateway after its first try gave up, that ran the turn again).
Orphan tools are counted by the runner.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.soak.store import open_db, query

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Acks:
    turns: set[str] = field(default_factory=set)
    appends: set[str] = field(default_factory=set)
    errors: int = 0
    undos: list[tuple[float, frozenset[str]]] = field(default_factory=list)
    refused_undos: int = 0
    reviews: list[tuple[float, frozenset[str]]] = field(default_factory=list)  # checks
    asked: int = 0
    answered: int = 0
    retried: int = 0
    runs: set[str] = field(default_factory=set)
    deliveries: dict[str, int] = field(default_factory=dict)  # run id -> times delivered
    neighbours: int = 0  # read-only handles and facade calls beside a writer


def read_acks(logs: Path) -> Acks:
    acks = Acks()
    for path in sorted(logs.glob("*.log")):
        for line in path.read_text(encoding="utf-8").splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "turn" and rest.split(" ", 1)[0]:
                acks.turns.add(rest.split(" ", 1)[0])
            elif kind == "append":
                acks.appends.add(rest.strip())
            elif kind == "error":
                acks.errors += 1
            elif kind == "undo":
                when, *tags = rest.split()
                acks.undos.append((float(when), frozenset(tags)))
            elif kind == "review":
                when, *tags = rest.split()
                acks.reviews.append((float(when), frozenset(tags)))
            elif kind == "refused":
                acks.refused_undos += 1
            elif kind in ("asked", "answered", "retried"):
                setattr(acks, kind, getattr(acks, kind) + 1)
            elif kind == "neighbour":
                acks.neighbours += 1
            elif kind == "run":
                acks.runs.add(rest.strip())
            elif kind == "delivered":
                acks.deliveries[rest.strip()] = acks.deliveries.get(rest.strip(), 0) + 1
    return acks


def stored_seen_afresh(location: str) -> set[str]:
    """The message uids a process that never opened the store before finds in it: what
    the next start of hermes would see (issue 53: commits into a deleted -wal were
    visible to their own process only)."""
    code = (
        "import json, sys\n"
        "from benchmarks.soak.store import query\n"
        "print(json.dumps([u for (u,) in query(sys.argv[1], 'SELECT message_uid FROM messages')]))"
    )
    done = subprocess.run([sys.executable, "-c", code, location], capture_output=True,
                          text=True, timeout=300, check=True, cwd=ROOT)  # fmt: skip
    return set(json.loads(done.stdout))


def undone_resent(
    undos: list[tuple[float, frozenset[str]]], seen: list[tuple[float, frozenset[str]]]
) -> int:
    """Requests (or review checks) after an undo was acknowledged that carry one of
    its turns."""
    return sum(1 for at, tags in seen if any(at > when and tags & undone for when, undone in undos))


def gateway_turns(location: str, conversations: list[str]) -> tuple[int, int]:
    """(unanswered, doubled) questions of the gateways' conversations."""
    db = open_db(location)
    unanswered = doubled = 0
    try:
        for conversation in conversations:
            if db.get_session(conversation) is None:
                continue
            answers: list[int] = []
            for row in db.get_conversation_messages(conversation):
                if row["undone"]:
                    continue
                if row["role"] == "user" and str(row["content"]).startswith("gw "):
                    answers.append(0)
                elif row["role"] == "assistant" and not row.get("tool_calls") and answers:
                    answers[-1] += 1
            unanswered += answers.count(0)
            doubled += sum(1 for n in answers if n > 1)
    finally:
        db.close()
    return unanswered, doubled


_DUPLICATES = (
    "SELECT s.conversation_id, m.content FROM messages m JOIN sessions s ON s.id = m.session_id"
    " WHERE m.compacted = 0 AND m.role = 'user' GROUP BY s.conversation_id, m.content"
    " HAVING COUNT(*) > 1"
)
_STRANDED_RUNS = (
    "SELECT COUNT(*) FROM api_runs WHERE status NOT IN ('completed', 'failed', 'cancelled')"
)
# A gateway question ("gw <tag>. ...") standing more than once anywhere in the store.
_DOUBLE_ANSWERS = (
    "SELECT m.content FROM messages m WHERE m.compacted = 0 AND m.undone = 0"
    " AND m.role = 'user' AND m.content LIKE 'gw %' GROUP BY m.content HAVING COUNT(*) > 1"
)
# A recurring job whose count (0.19's ``repeat.completed``) is not its finished runs:
# the count goes up in the transaction that finishes a run, so no kill can part them.
_MISCOUNTED = (
    "SELECT COUNT(*) FROM cron_jobs j WHERE j.completed IS NOT NULL"
    " AND (j.schedule LIKE 'every %' OR j.schedule LIKE '% % %')"
    " AND j.completed <> (SELECT COUNT(*) FROM cron_runs r WHERE r.job_id = j.id"
    " AND r.status IN ('completed', 'failed'))"
)
_FORKS = (
    "SELECT parent_session_id FROM sessions WHERE lineage = 'compression'"
    " GROUP BY parent_session_id HAVING COUNT(*) > 1"
)
_BAD_TIPS = (
    "SELECT conversation_id FROM sessions GROUP BY conversation_id"
    " HAVING SUM(CASE WHEN ended_at IS NULL THEN 1 ELSE 0 END) <> 1"
)
_ORPHANS = (
    "SELECT COUNT(*) FROM sessions s"
    " JOIN sessions c ON c.parent_session_id = s.id AND c.lineage = 'compression'"
    " JOIN messages m ON m.session_id = s.id"
    " WHERE s.end_reason = 'compression' AND m.compacted = 0"
    " AND m.id > (SELECT MIN(x.id) FROM messages x WHERE x.session_id = c.id)"
)


def check(
    location: str,
    logs: Path,
    seen: list[tuple[float, frozenset[str]]] | None = None,
    gateways: list[str] | None = None,
    reviews: list[tuple[float, frozenset[str]]] | None = None,
) -> dict[str, object]:
    """Every figure of the final line except the fault counts, invalid contexts and
    orphaned tools; ``seen`` is the model's (time, turn tags) per request, ``reviews``
    the same for the agent workers' review requests."""
    acks = read_acks(logs)
    unanswered, doubled = gateway_turns(location, gateways or [])
    stored = {uid for (uid,) in query(location, "SELECT message_uid FROM messages")}
    figures: dict[str, object] = {
        "rotations": query(location, "SELECT COUNT(*) FROM sessions WHERE lineage = 'compression'")[
            0
        ][0],
        "acked_turns": len(acks.turns),
        "acked_appends": len(acks.appends),
        "unacked_errors": acks.errors,
        "lost": len((acks.turns | acks.appends) - stored),
        "acknowledged_missing": len((acks.turns | acks.appends) - stored_seen_afresh(location)),
        "neighbours": acks.neighbours,
        "duplicated": len(query(location, _DUPLICATES)),
        "forks": len(query(location, _FORKS)),
        "bad_tips": len(query(location, _BAD_TIPS)),
        "orphan_writes": query(location, _ORPHANS)[0][0],
        "undos": len(acks.undos),
        "undos_refused": acks.refused_undos,
        "undone_resent": undone_resent(acks.undos, [*(seen or []), *acks.reviews]),
        "review_requests": len(reviews or []),
        "reviews_in_flight": undone_resent(acks.undos, reviews or []),
        "unchecked_reviews": max(0, len(reviews or []) - len(acks.reviews)),
        "gateway_asked": acks.asked,
        "gateway_answered": acks.answered,
        "unanswered": unanswered,
        "doubled": doubled,
        "retried": acks.retried,
        "runs": query(location, "SELECT COUNT(*) FROM api_runs")[0][0],
        "runs_acked": len(acks.runs),
        "runs_answered": query(
            location, "SELECT COUNT(*) FROM api_runs WHERE status = 'completed'"
        )[0][0],
        "runs_stranded": query(location, _STRANDED_RUNS)[0][0],
        "runs_lost": len(acks.runs - {r for (r,) in query(location, "SELECT id FROM api_runs")}),
        "double_answers": len(query(location, _DOUBLE_ANSWERS)),
        # Each due run: one run (unique per job and due time in the store), one delivery.
        "cron_runs": query(location, "SELECT COUNT(*) FROM cron_runs")[0][0],
        "cron_delivered": len(acks.deliveries),
        # Sent again after a kill between the platform's accept and the mark: the one
        # window the outbox leaves (docs/operations.md, Cron). Reported, not a violation.
        "cron_redelivered": sum(1 for n in acks.deliveries.values() if n > 1),
        "cron_undelivered_sent": len(
            {r for (r,) in query(location, "SELECT run_id FROM cron_outbox WHERE status = 'sent'")}
            - set(acks.deliveries)
        ),
        "cron_miscounted": query(location, _MISCOUNTED)[0][0],
    }
    db = open_db(location)
    try:
        figures["store_invariants"] = db.invariant_violations()
        coverage = getattr(db, "coverage_violations", None)
        figures["coverage"] = None if coverage is None else coverage()
    finally:
        db.close()
    return figures


def violations(figures: dict[str, object], invalid_contexts: int, orphan_tools: int = 0) -> int:
    coverage = figures["coverage"]
    return (
        int(figures["lost"]) + int(figures["duplicated"]) + int(figures["forks"])
        + int(figures["bad_tips"]) + int(figures["orphan_writes"])
        + (len(coverage) if isinstance(coverage, list) else 0) + invalid_contexts
        + int(figures["undone_resent"]) + int(figures["unchecked_reviews"])
        + int(figures["unanswered"]) + int(figures["doubled"])
        + int(figures["runs_stranded"]) + int(figures["runs_lost"])
        + int(figures["double_answers"])
        + orphan_tools
        + int(figures["cron_undelivered_sent"])
        + int(figures["cron_miscounted"])
        + int(figures["acknowledged_missing"])
    )  # fmt: skip
