"""Start-up time of the `hermes` command: `hermes --help` and `hermes sessions list`.

Each command runs N times as a fresh subprocess (after one warm-up run) against a
throw-away HERMES_HOME holding a small store, and the median wall time is compared
with the 300 ms target. Bytecode is cached in a private folder
(``PYTHONPYCACHEPREFIX``), as it is for an installed package, even when the calling
environment sets PYTHONDONTWRITEBYTECODE; the source tree gets no ``__pycache__``.

    python -m benchmarks.bench_cli [--runs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TARGET_MS = 300.0
DEFAULT_RUNS = 15
SCENARIOS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("hermes --help", ("--help",)),
    ("hermes sessions list", ("sessions", "list")),
)


def _hermes() -> list[str]:
    script = Path(sys.executable).with_name("hermes")
    return [str(script)] if script.exists() else [sys.executable, "-m", "hermes"]


def _seed_store(home: Path, conversations: int = 20) -> None:
    """A store with a few conversations, one of them compressed, like a real one."""
    from hermes.state import SessionDB, make_holder

    with SessionDB(db_path=home / "state.db", synchronous="normal") as db:
        for n in range(conversations):
            sid = db.create_session(source="cli", title=f"conversation {n}")
            db.append_messages(sid, [{"role": "user", "content": f"question {n}"},
                                     {"role": "assistant", "content": f"answer {n}"}])  # fmt: skip
        holder = make_holder()
        if db.try_acquire_compression_lock(sid, holder):
            try:
                db.publish_compression_child(
                    sid, holder=holder, messages=[{"role": "user", "content": "summary"}],
                    watermark=db.last_message_id(sid),
                )  # fmt: skip
            finally:
                db.release_compression_lock(sid, holder)


def bytecode_cached(cache: Path, **extra: str) -> dict[str, str]:
    """This environment with bytecode cached under ``cache``, as for an installed package.

    Without it, an environment setting PYTHONDONTWRITEBYTECODE (this machine's does)
    would time compiling every module, not importing it.
    """
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(cache), **extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _environment(home: Path, cache: Path) -> dict[str, str]:
    env = bytecode_cached(cache, HERMES_HOME=str(home))
    for name in ("HERMES_STATE_URL", "HERMES_DEBUG"):
        env.pop(name, None)
    return env


def time_command(
    argv: Sequence[str], env: dict[str, str], runs: int
) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds of ``runs`` runs (after one warm-up); fails on an error.

    CPU time (user + system of the child) is printed too because it hardly moves when
    other work loads the machine, while wall time does.
    """
    command = [*_hermes(), *argv]
    subprocess.run(command, env=env, capture_output=True, check=True)
    wall, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       check=True)  # fmt: skip
        wall.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        cpu.append(used * 1000)
    return wall, cpu


def measure(runs: int = DEFAULT_RUNS) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="hermes-bench-cli-") as tmp:
        home, cache = Path(tmp) / "home", Path(tmp) / "pycache"
        home.mkdir(mode=0o700)
        _seed_store(home)
        env = _environment(home, cache)
        results = []
        for label, argv in SCENARIOS:
            wall, cpu = time_command(argv, env, runs)
            median = statistics.median(wall)
            results.append({"command": label, "runs": runs, "median_ms": median,
                            "min_ms": min(wall), "max_ms": max(wall),
                            "cpu_median_ms": statistics.median(cpu),
                            "target_ms": TARGET_MS, "ok": median < TARGET_MS})  # fmt: skip
        return results


def report(results: list[dict[str, Any]]) -> str:
    header = (f"{'command':<24}{'runs':>6}{'median':>10}{'min':>9}{'max':>9}{'cpu':>9}"
              f"{'target':>9}  result")  # fmt: skip
    lines = [header, "-" * len(header)]
    for r in results:
        lines.append(
            f"{r['command']:<24}{r['runs']:>6}{r['median_ms']:>8.0f}ms{r['min_ms']:>7.0f}ms"
            f"{r['max_ms']:>7.0f}ms{r['cpu_median_ms']:>7.0f}ms{r['target_ms']:>7.0f}ms  "
            f"{'ok' if r['ok'] else 'SLOW'}"
        )
    return "\n".join(lines)


def _runs_from(args: Any) -> int:
    if args is None:
        return DEFAULT_RUNS
    if isinstance(args, list | tuple):
        return _parse(args).runs
    return int(getattr(args, "runs", None) or DEFAULT_RUNS)


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_cli", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="runs per command (median)")
    return parser.parse_args(list(argv))


def run(args: Any = None) -> None:
    """Entry point for the benchmark runner: ``args`` is a namespace with ``runs``, an
    argv list, or None for the defaults. Prints the table."""
    results = measure(_runs_from(args))
    print("CLI start-up (subprocess wall time, bytecode cached)")
    print(report(results))


def main(argv: Sequence[str] | None = None) -> int:
    run(_parse(sys.argv[1:] if argv is None else argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
