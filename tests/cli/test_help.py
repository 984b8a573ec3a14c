"""Every command and subcommand has help, and the light commands stay light."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from hermes.cli.main import COMMANDS, cli

HEAVY = ("rich", "prompt_toolkit", "openai", "hermes.agent")


def _walk(command: click.Command, path: tuple[str, ...]):
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            yield from _walk(command.get_command(ctx, name), (*path, name))


def _all_commands():
    ctx = click.Context(cli)
    for name in sorted(COMMANDS):
        command = cli.get_command(ctx, name)
        if command is not None:  # a command another team has not built yet
            yield from _walk(command, (name,))


def test_every_command_and_subcommand_has_help():
    found = list(_all_commands())
    names = {" ".join(path) for path, _ in found}
    assert {"chat", "sessions list", "sessions show", "sessions search", "sessions export",
            "sessions lineage", "sessions rename", "sessions delete", "sessions prune",
            "config show", "config get", "config set", "config path", "setup",
            "doctor"} <= names  # fmt: skip
    for path, command in found:
        assert (command.help or "").strip(), f"`hermes {' '.join(path)}` has no help text"
        short = command.get_short_help_str().strip()
        assert short, f"`hermes {' '.join(path)}` has no summary"
        # click ends a summary at the first '. ': an "e.g." in the first line cuts it there.
        assert not short.endswith(("e.g.", "i.e.")), f"`hermes {' '.join(path)}`: {short!r}"
        for param in command.params:
            if isinstance(param, click.Option) and param.name != "help":
                assert (param.help or "").strip(), f"`hermes {' '.join(path)}` {param.opts}"


@pytest.mark.parametrize(
    "path", [("chat",), ("sessions", "export"), ("config", "set"), ("doctor",)]
)
def test_help_runs_as_a_user_would(hermes, path):
    result = hermes(*path, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Usage: hermes {' '.join(path)}")


def test_a_mistyped_command_gets_a_did_you_mean(hermes):
    result = hermes("confg")
    assert result.returncode == 2
    assert "No such command 'confg'. Did you mean 'config'?" in result.stderr


def test_top_level_help_lists_the_commands(hermes):
    out = hermes("--help").stdout
    for name in ("chat", "sessions", "config", "setup", "doctor"):
        assert f"  {name} " in out


@pytest.mark.parametrize(
    "argv", [["--help"], ["sessions", "list"], ["config", "get", "model.default"]]
)
def test_light_commands_do_not_import_the_heavy_modules(argv, cli_env, compressed):
    """Start-up speed by construction: the agent, openai, rich, prompt_toolkit stay out."""
    probe = (
        "import json, sys\n"
        "from hermes.cli.main import main\n"
        f"sys.argv = ['hermes', *{argv!r}]\n"
        "try:\n    main()\nfinally:\n"
        f"    heavy = sorted({{m.split('.')[0] if m.split('.')[0] != 'hermes' else 'hermes.agent'"
        f" for m in sys.modules if m.startswith({HEAVY!r})}})\n"
        "    print(json.dumps(heavy), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], env=cli_env.vars,
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stderr.strip().splitlines()[-1]) == []
