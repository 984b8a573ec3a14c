"""Hermes Agent 0.19's ``hermes_cli.plugins.get_bundled_plugins_dir`` (plugins shipped
inside the install, which hermes's loader scans too) and ``get_plugin_auxiliary_tasks``
(the side tasks plugins declared with ``register_auxiliary_task``), as a tool reads them
in a process of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.config import load_config
from hermes.plugins import PluginManager
from tests.plugins.helpers import install_plugin

SHIPPED = """\
name: shipped
version: "1.0"
"""
SHIPPED_INIT = """
def register(ctx):
    ctx.register_hook("on_session_start", lambda **kw: None)
"""
TASKS_INIT = """
def register(ctx):
    ctx.register_auxiliary_task("tasker_rank", display_name="Rank", description="rank hits",
                                defaults={"timeout": 30, "top_k": 5})
    ctx.register_auxiliary_task("tasker_clean", display_name="Clean", description="tidy")
"""
GREEDY_INIT = """
def register(ctx):
    ctx.register_auxiliary_task("vision", display_name="Mine", description="not mine")
"""

READ = """
import json
from hermes_cli.plugins import get_bundled_plugins_dir, get_plugin_auxiliary_tasks
from hermes_cli.plugins import get_plugin_manager
print(json.dumps({
    "bundled": str(get_bundled_plugins_dir()),
    "tasks": get_plugin_auxiliary_tasks(),
    "errors": {k: p.error for k, p in get_plugin_manager()._plugins.items()},
    "sources": {k: p.manifest.source for k, p in get_plugin_manager()._plugins.items()},
}))
"""


def read_as_a_tool(home: Path, **env: str) -> dict:
    ran = subprocess.run(
        [sys.executable, "-c", READ],
        env={**os.environ, "HERMES_HOME": str(home), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(ran.stdout.strip().splitlines()[-1])


def test_a_plugin_in_the_bundled_folder_loads_once_enabled(
    hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_cli.plugins import get_bundled_plugins_dir

    shipped_with_hermes = get_bundled_plugins_dir()
    assert shipped_with_hermes == Path(__file__).parents[2] / "hermes" / "plugins" / "bundled"
    assert (shipped_with_hermes / "README.md").is_file()
    # The package's folder may be read-only: a copy of it, as a packaged install names one.
    bundled = tmp_path / "bundled"
    shutil.copytree(shipped_with_hermes, bundled)
    (bundled / "shipped").mkdir()
    (bundled / "shipped" / "plugin.yaml").write_text(SHIPPED)
    (bundled / "shipped" / "__init__.py").write_text(SHIPPED_INIT)
    (hermes_home / "config.yaml").write_text("plugins:\n  enabled: [shipped]\n")

    seen = read_as_a_tool(hermes_home, HERMES_BUNDLED_PLUGINS=str(bundled))
    assert seen["bundled"] == str(bundled)
    assert seen["errors"] == {"shipped": None} and seen["sources"] == {"shipped": "bundled"}
    manager = PluginManager(hermes_home)
    monkeypatch.setenv("HERMES_BUNDLED_PLUGINS", str(bundled))
    manager.load(load_config(hermes_home / "config.yaml"))
    assert manager.plugins["shipped"].enabled and manager.has_hook("on_session_start")

    # The home's own plugin of that name replaces the shipped one.
    install_plugin(hermes_home, "shipped", SHIPPED, SHIPPED_INIT)
    seen = read_as_a_tool(hermes_home, HERMES_BUNDLED_PLUGINS=str(bundled))
    assert seen["sources"] == {"shipped": "user"}


def test_the_auxiliary_tasks_plugins_register_are_listed_in_0_19s_shape(
    hermes_home: Path,
) -> None:
    install_plugin(hermes_home, "tasker", "name: tasker\n", TASKS_INIT)
    install_plugin(hermes_home, "greedy", "name: greedy\n", GREEDY_INIT)
    (hermes_home / "config.yaml").write_text("plugins:\n  enabled: [tasker, greedy]\n")

    seen = read_as_a_tool(hermes_home)
    routing = {"provider": "auto", "model": "", "base_url": "", "api_key": "", "extra_body": {}}
    assert seen["tasks"] == [
        {
            "key": "tasker_clean",
            "display_name": "Clean",
            "description": "tidy",
            "defaults": {**routing, "timeout": 60},
            "plugin": "tasker",
        },
        {
            "key": "tasker_rank",
            "display_name": "Rank",
            "description": "rank hits",
            "defaults": {**routing, "timeout": 30, "top_k": 5},
            "plugin": "tasker",
        },
    ]
    # A built-in task's key is refused, as in 0.19: that plugin does not load.
    assert seen["errors"]["tasker"] is None
    assert "built-in task" in seen["errors"]["greedy"]
