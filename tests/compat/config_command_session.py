"""`hermes config` as Hermes Agent 0.19's tools drive it (``hermes_cli.config.config_command``
with the argparse Namespace 0.19's parser makes), played through whichever
``hermes_cli.config`` this python finds (hermes's, or Hermes Agent 0.19's own). Each step's
printed lines, error lines and exit status, then the home's config.yaml and .env, are
printed as JSON with the home's path replaced, so two runs can be compared.

Usage: python config_command_session.py   (HERMES_HOME names the home to use)
"""

import argparse
import contextlib
import io
import json
import os

from hermes_cli.config import config_command

STEPS = [
    {"config_command": "set", "key": "agent.max_turns", "value": "12"},
    {"config_command": "set", "key": "model.default", "value": "gpt-5-mini"},
    {"config_command": "set", "key": "model.context_length", "value": "128000"},
    {"config_command": "set", "key": "OPENROUTER_API_KEY", "value": "sk-or-v1-abcdefghijklmnop"},
    {"config_command": "set", "key": "display.compact", "value": "yes"},
    {"config_command": "set", "key": "approvals.mode", "value": "off"},
    {"config_command": "set", "key": "terminal.timeout", "value": "300"},
    {"config_command": "get", "key": "agent.max_turns"},
    {"config_command": "get", "key": "model"},
    {"config_command": "get", "key": "model", "json": True},
    {"config_command": "get", "key": "display.compact"},
    {"config_command": "get", "key": "OPENROUTER_API_KEY"},
    {"config_command": "get", "key": "no.such.key"},
    {"config_command": "unset", "key": "display.compact"},
    {"config_command": "unset", "key": "no.such.key"},
    {"config_command": "path"},
    {"config_command": "env-path"},
    {"config_command": "bogus"},
]


def play(step):
    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            config_command(argparse.Namespace(**step))
        except SystemExit as exc:
            code = exc.code
    return {"step": step, "out": out.getvalue(), "err": err.getvalue(), "code": code}


def main():
    home = os.environ["HERMES_HOME"]
    shown = {"steps": [play(step) for step in STEPS], "files": {}}
    for name in ("config.yaml", ".env"):
        path = os.path.join(home, name)
        with contextlib.suppress(FileNotFoundError), open(path, encoding="utf-8") as file:
            shown["files"][name] = file.read()
    print(json.dumps(shown).replace(home, "HOME"))


main()
