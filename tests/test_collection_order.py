"""Files named on the command line from several folders keep their folders' fixtures.

pytest makes a second node for a folder named again after another folder's file, and
that node missed the fixtures of the folder's conftest ("fixture 'hermes_agent_python'
not found"); tests/conftest.py collects the named files folder by folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMES = "tests/compat/test_public_names.py"


def test_a_folder_named_again_after_another_keeps_its_conftest_fixtures() -> None:
    args = [
        f"{NAMES}::test_a_module_hermes_does_not_claim_says_so_on_import_and_no_other_does",
        "tests/test_layout.py",
        f"{NAMES}::test_every_public_name_of_a_claimed_module_is_there_or_listed_with_why",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n0", *args], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    assert "not found" not in run.stdout
