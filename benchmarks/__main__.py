"""The benchmark runner: every scenario, or the ones named by ``--only``, each printing
its table.

    python -m benchmarks                        # everything
    python -m benchmarks --only store --quick   # the state store, small sizes
    python -m benchmarks --only store --backend sqlite
    bash scripts/with-postgres .venv/bin/python -m benchmarks --only store   # + PostgreSQL

A scenario is any module ``benchmarks/bench_<name>.py`` with ``run(args)`` and,
optionally, ``add_arguments(parser)`` for its own flags; the runner finds them itself.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

FIRST = (
    "store",
    "agent",
    "transport",
    "gateway",
    "cli",
)  # the order of the tables in docs/benchmarks.md
SCENARIOS = tuple(
    sorted(
        (p.stem.removeprefix("bench_") for p in Path(__file__).parent.glob("bench_*.py")),
        key=lambda name: (FIRST.index(name) if name in FIRST else len(FIRST), name),
    )
)
# What --quick means for scenarios that have no flag of their own for it.
QUICK_DEFAULTS = {
    "agent": {"messages": 2_000, "turns": 5},
    "cli": {"runs": 5},
    "tokens": {"tokens_turns": 40},
}


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"benchmarks.bench_{name}")


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[ModuleType]]:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run hermes benchmarks and print their tables.",
        conflict_handler="resolve",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=SCENARIOS,
        help="run only this scenario (repeatable); default: all of them",
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgres", "all"),
        default="all",
        help="state store backends (PostgreSQL needs HERMES_TEST_PG_URL); default: all",
    )
    parser.add_argument("--runs", type=int, default=None, help="cli: runs per command")
    modules = [_load(name) for name in SCENARIOS]
    for module in modules:
        if hasattr(module, "add_arguments"):
            module.add_arguments(parser)
    args = parser.parse_args(list(argv))
    chosen = args.only or list(SCENARIOS)
    if args.quick:
        for name in chosen:
            for key, value in QUICK_DEFAULTS.get(name, {}).items():
                if getattr(args, key, None) in (None, parser.get_default(key)):
                    setattr(args, key, value)
    return args, [m for name, m in zip(SCENARIOS, modules, strict=True) if name in chosen]


def main(argv: Sequence[str] | None = None) -> int:
    args, modules = parse(sys.argv[1:] if argv is None else argv)
    for module in modules:
        started = time.perf_counter()
        module.run(args)
        print(f"({module.__name__}: {time.perf_counter() - started:.0f} s)\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
