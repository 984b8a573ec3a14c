"""`hermes config edit`, and `config set`/`unset` of a list's item by its index, run as a
user would."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from tests.cli.helpers import assert_one_line_error, mode_of


def editor_writing(folder: Path, text: str) -> str:
    """An editor (a real program) that appends ``text`` to the file it is given."""
    script = folder / "append-editor.py"
    script.write_text(
        f"import sys\nwith open(sys.argv[1], 'a', encoding='utf-8') as f:\n    f.write({text!r})\n",
        encoding="utf-8",
    )
    return f"{sys.executable} {script}"


def test_edit_opens_config_in_the_editor_and_checks_what_was_saved(hermes, cli_env, tmp_path):
    cli_env.vars["EDITOR"] = editor_writing(tmp_path, "agent:\n  max_iterations: 7\n")
    result = hermes("config", "edit")
    assert result.returncode == 0, result.stderr
    path = cli_env.home / "config.yaml"
    assert yaml.safe_load(path.read_text())["agent"]["max_iterations"] == 7
    assert path.read_text().startswith("# hermes's settings")  # made when there was none
    assert mode_of(path) == 0o600
    assert hermes("config", "get", "agent.max_iterations").stdout.strip() == "7"

    cli_env.vars["EDITOR"] = editor_writing(tmp_path, "compression:\n  threshold: 7\n")
    broken = hermes("config", "edit")
    assert_one_line_error(broken, "compression.threshold", "hermes config edit")
    assert "threshold: 7" in path.read_text()  # the user's edit is kept to fix


def test_edit_without_an_editor_says_how_to_name_one(hermes, cli_env):
    cli_env.vars.pop("EDITOR", None)
    cli_env.vars.pop("VISUAL", None)
    cli_env.vars["PATH"] = str(cli_env.home)  # no nano, vim or vi to find
    assert_one_line_error(hermes("config", "edit"), "No editor found", "EDITOR")


LISTED = """\
# my endpoints
custom_providers:
  - name: local  # the box under the desk
    base_url: http://127.0.0.1:8080/v1
  - name: work
    base_url: https://llm.example.com/v1
"""


def test_set_and_unset_reach_a_lists_item_by_its_index(hermes, cli_env):
    path = cli_env.home / "config.yaml"
    path.write_text(LISTED)
    assert hermes("config", "set", "custom_providers.1.api_key", "sk-work-123").returncode == 0
    entries = yaml.safe_load(path.read_text())["custom_providers"]
    assert entries[1] == {
        "name": "work", "base_url": "https://llm.example.com/v1", "api_key": "sk-work-123",
    }  # fmt: skip
    assert entries[0]["name"] == "local"  # the list stays a list
    assert "# the box under the desk" in path.read_text()
    assert hermes("config", "unset", "custom_providers.1.api_key").returncode == 0
    assert path.read_text() == LISTED
    assert_one_line_error(
        hermes("config", "set", "custom_providers.5.api_key", "x"), "not an index", "2 items"
    )
    assert path.read_text() == LISTED
