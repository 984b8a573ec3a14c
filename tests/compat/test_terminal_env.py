"""Hermes Agent 0.19's bridge of config.yaml's ``terminal`` section into TERMINAL_*
variables (``hermes_cli.config.apply_terminal_config_to_env``) and its warning about
MESSAGING_CWD/TERMINAL_CWD in .env, side by side with a real 0.19 on the same files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import io, json, sys
from hermes_cli.config import apply_terminal_config_to_env, warn_deprecated_cwd_env_vars
from hermes_cli.config import TERMINAL_CONFIG_ENV_MAP, terminal_config_env_var_for_key
err, sys.stderr = sys.stderr, io.StringIO()
warn_deprecated_cwd_env_vars()
warning, sys.stderr = sys.stderr.getvalue(), err
print(json.dumps({
    "filled": apply_terminal_config_to_env(env={"TERMINAL_TIMEOUT": "5", "TERMINAL_CWD": "/x"}),
    "map": TERMINAL_CONFIG_ENV_MAP,
    "keys": [terminal_config_env_var_for_key(k) for k in ("terminal.cwd", "terminal.nope", "x.cwd")],
    "warning": warning,
}))
"""

CONFIGS = {
    "none": "model:\n  default: m\n",
    "placeholder": "terminal:\n  cwd: auto\n  timeout: 60\n  docker_volumes: [a, b]\n",
    "folder": "terminal:\n  cwd: ~/project\n  backend: docker\n  docker_env: {A: '1'}\n",
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_bridge_and_the_warning_are_0_19s(
    name: str, hermes_home: Path, tmp_path: Path, hermes_agent_python: Path
) -> None:
    from hermes_cli.config import apply_terminal_config_to_env

    (hermes_home / "config.yaml").write_text(CONFIGS[name], encoding="utf-8")
    theirs_home = tmp_path / "theirs"
    shutil.copytree(hermes_home, theirs_home)
    env = {**os.environ, "MESSAGING_CWD": "/srv/chat", "TERMINAL_CWD": "/srv/old"}
    outcome = []
    for python, home in ((sys.executable, hermes_home), (str(hermes_agent_python), theirs_home)):
        ran = subprocess.run(
            [python, "-c", PROBE],
            env={**env, "HERMES_HOME": str(home), "HOME": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        found = json.loads(ran.stdout.strip().splitlines()[-1])
        # hermes's own line about the keys its config does not use is not 0.19's.
        said = [line for line in found["warning"].splitlines() if not line.startswith("hermes:")]
        found["warning"] = "\n".join(said).replace(str(home), "HOME")
        outcome.append(found)
    ours, theirs = outcome
    assert ours == theirs
    assert ours["keys"] == ["TERMINAL_CWD", None, None]
    assert "MESSAGING_CWD=/srv/chat found in .env" in ours["warning"]
    if name == "none":  # no terminal section: the defaults only fill what is unset
        assert ours["filled"]["TERMINAL_TIMEOUT"] == "5"
        assert ours["filled"]["TERMINAL_ENV"] == "local"
    if name == "placeholder":  # config.yaml's section wins; a placeholder cwd is left out
        assert ours["filled"]["TERMINAL_TIMEOUT"] == "60"
        assert ours["filled"]["TERMINAL_CWD"] == "/x"
        assert json.loads(ours["filled"]["TERMINAL_DOCKER_VOLUMES"]) == ["a", "b"]
        assert "TERMINAL_CWD=/srv/old" in ours["warning"]
    if name == "folder":  # a folder of its own: TERMINAL_CWD in .env is not warned about
        assert ours["filled"]["TERMINAL_CWD"] == str(tmp_path / "project")
        assert "TERMINAL_CWD=" not in ours["warning"]
    # In this process, os.environ by default.
    assert apply_terminal_config_to_env(env={}, config={"terminal": {"cwd": "."}}) == {}
