"""Hermes Agent 0.19's `hermes config` handlers, whole-file writers and install helpers
(``hermes_cli.config``), called as 0.19's tools call them, on a real home: what each
writes is read back by hermes itself (``hermes.config``), and what each prints is what
0.19 prints, secrets masked as 0.19 masks them."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pytest
import yaml

from hermes import config as hermes_config


def namespace(command: str | None, **fields: object) -> argparse.Namespace:
    """What 0.19's parser gives ``config_command`` for `hermes config <command> ...`."""
    return argparse.Namespace(config_command=command, **fields)


def test_config_set_get_unset_as_0_19s_handlers(
    hermes_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hermes_cli.config import config_command

    path = hermes_home / "config.yaml"
    path.write_text("# mine\nmodel:\n  default: small  # the cheap one\n", encoding="utf-8")
    config_command(namespace("set", key="agent.max_turns", value="12", force=False))
    assert "✓ Set agent.max_turns = 12 in" in capsys.readouterr().out
    # hermes reads what was written (0.19's name for its key), the comment kept.
    assert hermes_config.load_config(path).get("agent.max_iterations") == 12
    assert "# the cheap one" in path.read_text(encoding="utf-8")

    # 0.19's reading of a value for a key only 0.19 has: text stays text for a text
    # default ("off" is not false), yes/no and numbers are typed.
    config_command(namespace("set", key="approvals.mode", value="off"))
    config_command(namespace("set", key="display.compact", value="yes"))
    config_command(namespace("set", key="custom_providers", value="x"))  # any key is kept
    written = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert written["approvals"]["mode"] == "off" and written["display"]["compact"] is True
    out = capsys.readouterr().out
    assert "not a recognized config key" not in out

    config_command(namespace("set", key="dispaly.compact", value="1"))
    assert "Did you mean: display" in capsys.readouterr().out
    config_command(namespace("set", key="dispaly.other", value="1", force=True))
    assert "not a recognized" not in capsys.readouterr().out

    config_command(namespace("get", key="agent.max_turns", json=False))
    assert capsys.readouterr().out == "12\n"
    config_command(namespace("get", key="display", json=True))
    assert '"compact": true' in capsys.readouterr().out

    config_command(namespace("unset", key="agent.max_turns"))
    assert "✓ Unset agent.max_turns from" in capsys.readouterr().out
    assert hermes_config.load_config(path).get("agent.max_iterations") == 30  # default again
    with pytest.raises(SystemExit) as exit_:
        config_command(namespace("unset", key="agent.max_turns"))
    assert exit_.value.code == 1
    assert capsys.readouterr().err == "Config key not set: agent.max_turns\n"
    with pytest.raises(SystemExit):
        config_command(namespace("get", key="nothing.here"))
    assert "Config key not set: nothing.here" in capsys.readouterr().err


def test_config_set_refuses_what_hermes_refuses_and_keeps_the_file(
    hermes_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hermes_cli.config import set_config_value

    path = hermes_home / "config.yaml"
    path.write_text("compression:\n  threshold: 0.5\n", encoding="utf-8")
    before = path.read_text(encoding="utf-8")
    for key, value in (("compression.threshold", "7"), ("model.defualt", "x")):
        with pytest.raises(SystemExit) as exit_:
            set_config_value(key, value)
        assert exit_.value.code == 1
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "model.default" in err  # the typo is told the key meant
    assert path.read_text(encoding="utf-8") == before


def test_api_keys_go_to_dotenv_and_secrets_are_masked_as_0_19_masks_them(
    hermes_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_cli.config import config_command, redact_config_value, redact_key

    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    config_command(namespace("set", key="OPENROUTER_API_KEY", value="sk-or-secret-123456"))
    assert capsys.readouterr().out == f"✓ Set OPENROUTER_API_KEY in {hermes_home / '.env'}\n"
    assert "OPENROUTER_API_KEY=sk-or-secret-123456" in (hermes_home / ".env").read_text()
    assert not (hermes_home / "config.yaml").exists()
    config_command(namespace("get", key="OPENROUTER_API_KEY"))
    assert capsys.readouterr().out == "sk-o...3456\n"

    config_command(namespace("set", key="custom_providers.0", value="placeholder"))
    (hermes_home / "config.yaml").write_text(
        "custom_providers:\n  - name: work\n    base_url: https://llm.example.com/v1\n",
        encoding="utf-8",
    )
    capsys.readouterr()
    config_command(namespace("set", key="custom_providers.0.api_key", value="cfut_abcdefghijkl"))
    assert "= cfut...ijkl in" in capsys.readouterr().out
    entries = yaml.safe_load((hermes_home / "config.yaml").read_text())["custom_providers"]
    assert entries == [
        {"name": "work", "base_url": "https://llm.example.com/v1", "api_key": "cfut_abcdefghijkl"}
    ]
    config_command(namespace("get", key="custom_providers", json=True))
    shown = capsys.readouterr().out
    assert "cfut_abcdefghijkl" not in shown and "cfut...ijkl" in shown

    assert redact_key("sk-proj-abcdef1234567890") == "sk-p...7890"
    assert redact_key("short") == "***"
    assert redact_key("") == "(not set)"
    assert redact_config_value(
        {"model": {"API_KEY": "sk-or-v1-abcdefghij", "token_count": 5, "name": "m"},
         "list": [{"password": "hunter2"}, "text"], "auth": ""}
    ) == {
        "model": {"API_KEY": "sk-o...ghij", "token_count": 5, "name": "m"},
        "list": [{"password": "***"}, "text"], "auth": "",
    }  # fmt: skip

    config_command(namespace("unset", key="OPENROUTER_API_KEY"))
    assert "OPENROUTER_API_KEY" not in (hermes_home / ".env").read_text()


def test_show_path_and_edit_as_0_19s_handlers(
    hermes_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_cli.config import config_command, edit_config, show_config

    path = hermes_home / "config.yaml"
    path.write_text(
        "model:\n  default: m\n  api_key: sk-in-the-file-123456\ndisplay:\n  skin: mono\n",
        encoding="utf-8",
    )
    show_config()
    out = capsys.readouterr().out
    assert f"Config:   {path}" in out and f"Secrets:  {hermes_home / '.env'}" in out
    assert "default: m" in out and "sk-in-the-file" not in out  # masked
    assert "display.skin" in out  # a key hermes does not use, listed as such
    config_command(namespace("path"))
    config_command(namespace("env-path"))
    assert capsys.readouterr().out == f"{path}\n{hermes_home / '.env'}\n"

    editor = Path(os.environ.get("TMPDIR", "/var/tmp")) / f"editor-{os.getpid()}.py"
    editor.write_text(
        "import sys\nopen(sys.argv[1], 'a').write('agent:\\n  max_turns: 9\\n')\n",
        encoding="utf-8",
    )
    try:
        monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
        edit_config()
    finally:
        editor.unlink()
    assert f"Opening {path} in" in capsys.readouterr().out
    assert hermes_config.load_config(path).get("agent.max_iterations") == 9

    monkeypatch.setenv("HERMES_MANAGED", "nix")
    edit_config()
    assert "Cannot edit configuration: this Hermes installation is managed by NixOS" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        config_command(namespace("bogus"))
    assert "Unknown config command: bogus" in capsys.readouterr().err


def test_print_config_warnings_says_the_layout_problems(
    hermes_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hermes_cli.config import print_config_warnings

    print_config_warnings({"model": {"default": "m"}})
    assert capsys.readouterr().err == ""
    (hermes_home / "config.yaml").write_text(
        "custom_providers:\n  work:\n    base_url: https://x/v1\n", encoding="utf-8"
    )
    print_config_warnings()
    err = capsys.readouterr().err
    assert err.startswith("⚠ Config issues detected in config.yaml:")
    assert "✗ custom_providers is a dict" in err and "hermes doctor" in err


def test_whole_file_writes_refuse_an_unreadable_config(hermes_home: Path) -> None:
    from hermes_cli.config import (
        atomic_config_write,
        require_readable_config_before_write,
        save_config,
    )

    path = hermes_home / "config.yaml"
    require_readable_config_before_write(path)  # none yet: nothing to lose
    atomic_config_write(path, {"model": {"default": "m"}, "b": 1}, extra_content="# end\n")
    assert path.read_text(encoding="utf-8") == "model:\n  default: m\nb: 1\n# end\n"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert not list(hermes_home.glob(".config.yaml.*"))  # no temporary file left

    path.unlink()
    path.mkdir()  # there, and no file a read can get anything from
    for write in (
        lambda: require_readable_config_before_write(path),
        lambda: atomic_config_write(path, {"a": 1}),
        lambda: save_config({"model": {"default": "m"}}),
    ):
        with pytest.raises(RuntimeError, match="Refusing to overwrite"):
            write()
    assert path.is_dir()


def test_missing_skill_config_vars_are_the_unset_settings_skills_declare(
    hermes_home: Path,
) -> None:
    from hermes_cli.config import get_missing_skill_config_vars

    assert get_missing_skill_config_vars() == []
    skill = hermes_home / "skills" / "wiki"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: wiki\ndescription: Reads the wiki.\nmetadata:\n  hermes:\n    config:\n"
        "      - key: wiki.url\n        description: The wiki's address\n"
        "      - key: wiki.user\n        description: Who reads it\n---\nRead it.\n",
        encoding="utf-8",
    )
    (hermes_home / "config.yaml").write_text(
        "skills:\n  config:\n    wiki:\n      url: https://wiki.example\n      user: '  '\n",
        encoding="utf-8",
    )
    assert get_missing_skill_config_vars() == [
        {"key": "wiki.user", "description": "Who reads it", "prompt": "Who reads it",
         "skill": "wiki"}
    ]  # fmt: skip


def test_install_helpers_answer_for_the_running_hermes(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import hermes_cli._install as install_helpers
    import hermes_cli.config as cfg

    from hermes.install import this_install

    # What hermes itself says of this install (hermes/install.py, `/update`).
    install = this_install()
    assert cfg.get_project_root() == Path(install.where)
    method = "git" if install.kind == "editable" else "pip"
    assert cfg.detect_install_method() == method
    assert cfg.recommended_update_command() == install.update
    assert cfg.recommended_update_command_for_method(method) == install.update
    other = "pip" if method == "git" else "git"
    assert cfg.recommended_update_command_for_method(other) != install.update
    assert "hermes-agent-runtime" in cfg.recommended_update_command_for_method("pip")
    assert not cfg.is_uv_tool_install()
    assert not cfg.is_unsupported_install_method("pip")  # hermes's ordinary install

    elsewhere = hermes_home / "site-packages"
    assert cfg.detect_install_method(elsewhere) == "pip"
    cfg.stamp_install_method("docker", elsewhere)
    assert cfg.detect_install_method(elsewhere) == "docker"  # beside the code: believed
    (hermes_home / ".install_method").write_text("docker\n")
    other = hermes_home / "other-tree"
    # A home a container shares with a host install: its docker stamp is the container's.
    monkeypatch.setattr(install_helpers, "is_container", lambda: True)
    assert cfg.detect_install_method(other) == "docker"
    monkeypatch.setattr(install_helpers, "is_container", lambda: False)
    assert cfg.detect_install_method(other) == "pip"

    assert not cfg.is_managed() and cfg.get_managed_update_command() is None
    (hermes_home / ".managed").touch()
    assert cfg.get_managed_system() == "NixOS" and cfg.is_managed()
    assert cfg.detect_install_method(other) == "nixos"
    monkeypatch.setenv("HERMES_MANAGED", "brew")
    assert cfg.recommended_update_command() == "brew upgrade hermes-agent-runtime"
    cfg.managed_error("set configuration values")
    assert capsys.readouterr().err.startswith(
        "Cannot set configuration values: this Hermes installation is managed by Homebrew"
    )

    assert cfg.get_container_exec_info() is None
    (hermes_home / ".container-mode").write_text("# set by NixOS\ncontainer_name=box\n")
    assert cfg.get_container_exec_info() == {
        "backend": "docker", "container_name": "box", "exec_user": "hermes",
        "hermes_bin": "/data/current-package/bin/hermes",
    }  # fmt: skip

    cfg.ensure_hermes_home()
    assert (hermes_home / "SOUL.md").read_text(encoding="utf-8") == cfg.DEFAULT_SOUL_MD


# `hermes config set` of keys only 0.19 has, then `get` of each, as a tool would call them.
SETS = [
    ("display.compact", "yes"),
    ("approvals.mode", "off"),
    ("agent.verify_on_stop", "false"),
    ("tts.provider", "edge"),
    ("my_tool.level", "12"),
    ("my_tool.ratio", "1.5"),
    ("my_tool.name", "007"),
]
SET_THEN_GET = """
import json, sys
from hermes_cli.config import get_config_value, set_config_value
for key, value in json.loads(sys.argv[1]):
    set_config_value(key, value, force=True)
for key, _ in json.loads(sys.argv[1]):
    get_config_value(key, as_json=True)
"""


def test_set_and_get_of_0_19s_keys_write_and_read_as_0_19s(
    hermes_home: Path, hermes_agent_python: Path, tmp_path: Path
) -> None:
    import json
    import subprocess

    from tests.cli.helpers import hermes_command

    theirs_home = tmp_path / "ha-home"
    theirs_home.mkdir()
    env = {**os.environ, "HERMES_HOME": str(theirs_home), "HOME": str(tmp_path)}
    theirs = subprocess.run(
        [str(hermes_agent_python), "-c", SET_THEN_GET, json.dumps(SETS)],
        env=env, capture_output=True, text=True, timeout=300, check=True,
    ).stdout  # fmt: skip
    python = Path(hermes_command()[0]).with_name("python")
    ours = subprocess.run(
        [str(python if python.exists() else sys.executable), "-c", SET_THEN_GET, json.dumps(SETS)],
        env={**os.environ, "HERMES_HOME": str(hermes_home)},
        capture_output=True, text=True, timeout=300, check=True,
    ).stdout  # fmt: skip
    assert ours.replace(str(hermes_home), "HOME") == theirs.replace(str(theirs_home), "HOME")
    written = yaml.safe_load((hermes_home / "config.yaml").read_text(encoding="utf-8"))
    assert written == yaml.safe_load((theirs_home / "config.yaml").read_text(encoding="utf-8"))


SESSION = Path(__file__).with_name("config_command_session.py")


def test_config_command_side_by_side_with_0_19(hermes_agent_python: Path, tmp_path: Path) -> None:
    """The same `hermes config` steps on a fresh home under a real 0.19 and under hermes:
    the same lines, statuses and files, but for the differences docs/hermes-agent.md names."""
    from tests.compat.hermes_agent import play_session

    theirs = play_session(hermes_agent_python, SESSION, tmp_path / "theirs")
    ours = play_session(sys.executable, SESSION, tmp_path / "ours")
    for their, our in zip(theirs["steps"], ours["steps"], strict=True):
        step = their["step"]
        assert our["code"] == their["code"], step
        if step["config_command"] == "bogus":  # hermes: one sentence on stderr, not the usage
            assert their["out"].startswith("Unknown config command: bogus")
            assert our["err"].startswith("Unknown config command: bogus. Use one of: show,")
            continue
        if step.get("key") == "OPENROUTER_API_KEY" and step["config_command"] == "get":
            assert (their["out"], our["out"]) == ("sk-or-v1-abcdefghijklmnop\n", "sk-o...mnop\n")
            continue  # hermes masks a secret it prints
        if step.get("key") == "model":  # a section in effect: hermes's defaults there too
            shown = [yaml.safe_load(side["out"]) for side in (their, our)]
            assert shown[0].items() <= shown[1].items() and shown[0], step
            continue
        assert our["out"] == their["out"], step
        # hermes notes once per change the keys it does not use (display.compact, ...).
        ours_err = "".join(
            line for line in our["err"].splitlines(keepends=True)
            if "hermes does not use, ignored" not in line
        )  # fmt: skip
        assert ours_err == their["err"], step
    assert ours["files"]["config.yaml"] == theirs["files"]["config.yaml"]
    # 0.19 mirrors terminal.* into .env for its terminal tool; hermes's reads config.yaml.
    assert theirs["files"][".env"] == ours["files"][".env"] + "TERMINAL_TIMEOUT=300\n"
