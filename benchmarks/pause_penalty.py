"""What this machine charges Python code for running after a pause: the CPU time of the
same small piece of work (JSON, an SQLite insert, string and dict handling: what a
gateway turn is made of) run once every ``gap`` seconds, over its CPU time run back to
back.

A gateway at 10 requests/s sleeps ~100 ms between turns; meanwhile other processes
(other tenants, on a shared host) take the core's caches, so each turn starts cold and
the same code costs more CPU than at 100 requests/s, where turns follow each other. The
open-loop benchmark prints this ratio beside its CPU per turn, so a figure that grows as
the rate falls can be read as the machine's, not the gateway's.

    python -m benchmarks.pause_penalty [--gap 0.1] [--runs 40]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import time

_BODY = {"messages": [{"role": "user", "content": f"message {n} " + "x" * 300} for n in range(20)]}


def _work(db: sqlite3.Connection) -> None:
    for _ in range(8):
        text = json.dumps(_BODY)
        back = json.loads(text)
        db.execute("INSERT INTO t VALUES (?)", (back["messages"][0]["content"],))
    db.execute("DELETE FROM t")
    " ".join(f"{k}={v}" for k, v in enumerate(range(500)))


def _cpu(db: sqlite3.Connection) -> float:
    started = time.thread_time()
    _work(db)
    return time.thread_time() - started


def penalty(gap: float, runs: int = 40) -> float:
    """CPU of the work after ``gap`` s of sleep over its CPU run again at once (1.0: no
    penalty); each pair is measured together, so a drift of the machine hits both."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE TABLE t (text TEXT)")
        for _ in range(5):  # warm-up: caches, the allocator
            _cpu(db)
        cold, hot = [], []
        for _ in range(runs):
            time.sleep(gap)
            cold.append(_cpu(db))
            hot.append(_cpu(db))
    finally:
        db.close()
    return statistics.median(cold) / statistics.median(hot)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.pause_penalty", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between runs")
    parser.add_argument("--runs", type=int, default=40, help="runs measured each way")
    args = parser.parse_args(argv)
    if args.gap < 0 or args.runs < 1:
        parser.error("--gap must be >= 0 and --runs >= 1")
    ratio = penalty(args.gap, args.runs)
    print(f"the same work after {args.gap * 1000:g} ms pauses: {ratio:.2f}x its CPU back to back")


if __name__ == "__main__":
    main()
