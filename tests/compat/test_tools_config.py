"""Hermes Agent 0.19's ``hermes_cli.tools_config`` listings, as a tools page reads them:
hermes's toolsets in 0.19's shape (each key one ``enabled_toolsets`` takes, with its
tools), labels without their icon and the MCP servers a config switches on, as 0.19's."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from hermes.config import load_config
from hermes.tools.toolsets import builtin_tools, resolve_toolset

LABELS = ["💻 Terminal & Processes", "🔌 Hello World", "Plain", "  ", "👁️  Vision / Image", "A B"]
SERVERS = {
    "mcp_servers": {
        "on": {"command": "x"},
        "off": {"enabled": "off"},
        "unset": {"enabled": None},
        "zero": {"enabled": 0},
        "False": {"enabled": False},
        "odd": "not a table",
    }
}


def test_hermess_toolsets_as_0_19_lists_them(hermes_home: Path) -> None:
    from hermes_cli.tools_config import CONFIGURABLE_TOOLSETS

    keys = [key for key, _, _ in CONFIGURABLE_TOOLSETS]
    assert {"terminal", "files", "memory", "session_search", "skills"} <= set(keys)
    offered = {tool.name for tool in builtin_tools()}
    for key, label, described in CONFIGURABLE_TOOLSETS:
        (home := hermes_home / key).mkdir()
        (home / "config.yaml").write_text(f"agent:\n  toolsets: [{key}]\n", encoding="utf-8")
        chosen = resolve_toolset("cli", load_config(home / "config.yaml"))
        assert chosen and set(chosen) <= offered and described == ", ".join(chosen), key
        assert label and not label[0].isascii()  # an icon, then the title, as 0.19's
    assert dict((k, d) for k, _, d in CONFIGURABLE_TOOLSETS)["terminal"] == "terminal, process"


def test_labels_and_mcp_servers_read_as_0_19s(hermes_agent_python: Path, tmp_path: Path) -> None:
    from hermes_cli.tools_config import enabled_mcp_server_names, gui_toolset_label

    probe = (
        "import json, sys\n"
        "from hermes_cli.tools_config import enabled_mcp_server_names, gui_toolset_label\n"
        "labels, config = json.loads(sys.argv[1]), json.loads(sys.argv[2])\n"
        "print(json.dumps([[gui_toolset_label(x) for x in labels],"
        " sorted(enabled_mcp_server_names(config)), sorted(enabled_mcp_server_names({}))]))\n"
    )
    env = {**os.environ, "HERMES_HOME": str(tmp_path / "ha"), "HOME": str(tmp_path)}
    theirs = subprocess.run(
        [str(hermes_agent_python), "-c", probe, json.dumps(LABELS), json.dumps(SERVERS)],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    ours = [
        [gui_toolset_label(x) for x in LABELS],
        sorted(enabled_mcp_server_names(SERVERS)),
        sorted(enabled_mcp_server_names({})),
    ]
    assert ours == json.loads(theirs.stdout)
    assert ours[1] == ["on", "unset"]
