"""The soak's short version, on both backends: real worker processes, real kills, the
strict fake model; zero violations, and proof that the faults really happened.

``make soak`` runs the long version; ``python -m benchmarks.soak --help`` explains it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.stores import pg_url

# ~45 s of faults per backend, each with six processes flat out: under -n the two run one
# after the other, or they starve each other of turns and too few faults happen to prove any.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("soak")]

ROOT = Path(__file__).resolve().parents[1]
# ~45 s of faults per backend, then reaping and the checker; on a loaded machine (fewer
# turns) the faults run on until two compressions happened, 2¼ minutes at the most.
MINUTES = "0.75"


def figures(output: str) -> dict[str, str]:
    """The ``key=value`` pairs of the soak's final figures line."""
    line = next(
        line for line in output.splitlines() if line.startswith("soak ") and "violations=" in line
    )
    return dict(re.findall(r"(\w+)=([^\s()]+)", line))


@pytest.mark.timeout(540)
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_short_soak_finds_no_violation_and_really_injected_faults(
    backend: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "HERMES_STATE_URL"}
    if backend == "postgres":
        pg_url()  # skips without a server (fails under CI)
    command = [sys.executable, "-m", "benchmarks.soak", "--backend", backend,
               "--minutes", MINUTES, "--until-rotations", "2", "--workers", "4", "--writers", "2",
               "--seed", "11",
               "--workdir", str(tmp_path / "soak")]  # fmt: skip
    # One soak at a time (the module's xdist group, tests/test_xdist_groups.py): a soak
    # counts every machine-wide `sleep 600.` tool left at its end as its own orphan.
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    report = done.stdout + done.stderr[-3000:]
    got = figures(done.stdout)
    # The faults happened, so zero violations means something.
    assert int(got["kills"]) > 0, report
    assert int(got["lease"]) + int(got["tool"]) > 0, report
    assert int(got["rotations"]) > 0, report
    assert int(got["acked_appends"]) > 0 and int(got["acked_turns"]) > 0, report
    assert int(got["summary_faults"]) > 0, report
    assert got["coverage"] != "not", report  # the store can check coverage
    assert int(got["masked_requests"]) > 0, report  # the invariants held with masking on
    # The scheduler ran under the kills: each due run one run (the store's unique key) and
    # every run marked sent was delivered.
    assert int(got["cron_runs"]) > 0 and int(got["cron_delivered"]) > 0, report
    assert got["cron_undelivered_sent"] == "0", report
    assert got["cron_miscounted"] == "0", report  # each finish counted in its transaction
    # Runs and retries across the gateways ran under the kills: none stranded or lost,
    # no question answered twice.
    assert int(got["runs"]) > 0, report
    # Beside the writers ran read-only handles and facade calls in their own processes
    # and `hermes sessions list` processes, and a fresh process found every acknowledged
    # message (issue 53).
    assert int(got["neighbours"]) > 0 and int(got["cli_runs"]) > 0, report
    names = ("lost", "duplicated", "forks", "bad_tips", "orphan_writes", "invalid_contexts",
             "undone_resent", "unchecked_reviews", "unanswered", "doubled",
             "orphan_tools", "runs_stranded", "runs_lost", "double_answers",
             "acknowledged_missing")  # fmt: skip
    for name in names:
        assert got[name] == "0", f"{name}={got[name]}\n{report}"
    assert got["violations"] == "0", report
    assert done.returncode == 0, report
