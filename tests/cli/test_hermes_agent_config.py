"""A config.yaml written by a real Hermes Agent 0.19, and by the tools made for it, works.

Keys hermes does not use are one warning per process on stderr (naming each key and its
line), never a refusal; Hermes Agent's names for hermes's settings are read with their
meaning; a known key with a bad value is still a clear error.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.cli.helpers import assert_one_line_error

# What `hermes config set` of Hermes Agent 0.19 is asked to write, then what tools add.
HERMES_AGENT_SETS = (
    ("model.default", "fake-model"),
    ("model.provider", "custom"),
    ("display.compact", "true"),
    ("terminal.timeout", "240"),
    ("terminal.backend", "local"),
    ("terminal.env_passthrough", "[GITHUB_TOKEN]"),
    ("compression.threshold", "0.7"),
    ("compression.target_ratio", "0.3"),
    ("agent.max_turns", "60"),
    ("auxiliary.compression.model", "summary-model"),
    ("memory.memory_char_limit", "3000"),
)
TOOLS_ADD = """
hooks:
  pre_tool_call:
    - command: agent-deck-hook
mcp_servers:
  deja-vu:
    command: deja-vu
    args: [mcp]
plugins:
  enabled: [deja-vu, hermes-lcm]
context:
  engine: lcm
"""


def write_with_hermes_agent(python: Path, home: Path, base_url: str) -> Path:
    # As `python -m`: the venv's `hermes` script names the folder it was built in.
    hermes_agent = [str(python), "-m", "hermes_cli.main"]
    env = {**os.environ, "HERMES_HOME": str(home), "HERMES_DISABLE_LAZY_INSTALLS": "1"}
    for key, value in (*HERMES_AGENT_SETS, ("model.base_url", base_url)):
        done = subprocess.run([*hermes_agent, "config", "set", key, value], env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    path = home / "config.yaml"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(TOOLS_ADD)
    return path


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_hermes_agent_config_is_read_with_one_warning(
    hermes, cli_env, hermes_agent_venv_python, fake_llm
) -> None:
    del cli_env.vars["HERMES_BASE_URL"], cli_env.vars["HERMES_MODEL"]  # the file says them
    path = write_with_hermes_agent(hermes_agent_venv_python, cli_env.home, fake_llm.url)
    listed = hermes("sessions", "list")
    assert listed.returncode == 0, listed.stderr
    warning = [line for line in listed.stderr.splitlines() if line.strip()]
    assert len(warning) == 1, listed.stderr
    for key in ("display.compact", "terminal.backend", "compression.target_ratio"):
        assert f"{key} (line {line_of(path, key.split('.')[-1] + ':')}" in warning[0]
    # hermes's keys too: plugins load, a context engine is chosen, shell hooks run.
    for quiet in ("mcp_servers", "hooks", "plugins", "context.engine", "deja-vu", "max_turns",
                  "provider", "did you mean"):  # fmt: skip
        assert quiet not in warning[0]

    def get(key: str) -> str:
        done = hermes("config", "get", key)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert get("model.default") == "fake-model"
    assert get("model.base_url") == fake_llm.url
    assert get("terminal.timeout") == "240"
    # 0.19's `config set` wrote the list as the string "[GITHUB_TOKEN]", which it skips.
    assert get("terminal.pass_env") == "[]"
    assert "terminal.env_passthrough (line" in warning[0]
    assert get("compression.threshold") == "0.7"
    assert get("compression.summary_model") == "summary-model"
    assert get("agent.max_iterations") == "60" == get("agent.max_turns")
    assert get("memory.memory_char_limit") == "3000"
    assert get("display.compact") == "true"  # ignored, but readable
    shown = hermes("config", "show").stdout
    ignored = shown[shown.index("# Ignored") :]
    assert "display.compact: true" in ignored
    assert "mcp_servers" not in ignored and "plugins.enabled" not in ignored


def test_every_command_works_on_it_and_answers(hermes, cli_env, hermes_agent_venv_python, fake_llm):
    del cli_env.vars["HERMES_BASE_URL"], cli_env.vars["HERMES_MODEL"]
    write_with_hermes_agent(hermes_agent_venv_python, cli_env.home, fake_llm.url)
    fake_llm.script("hello from the fake")
    asked = hermes("chat", "-q", "hi")
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.strip() == "hello from the fake"
    assert fake_llm.requests[-1]["model"] == "fake-model"
    for args in (("doctor",), ("config", "show"), ("sessions", "list", "--source", "cli")):
        done = hermes(*args)
        assert "Unknown config key" not in done.stderr and "Traceback" not in done.stderr, args


def test_run_agent_builds_an_agent_on_it(cli_env, hermes_agent_venv_python, fake_llm) -> None:
    write_with_hermes_agent(hermes_agent_venv_python, cli_env.home, fake_llm.url)
    code = (
        "import run_agent; a = run_agent.AIAgent(quiet_mode=True, skip_memory=True);"
        "print(a.model, a.base_url, a.max_iterations)"
    )
    done = subprocess.run([sys.executable, "-c", code], env=cli_env.vars,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "60"
    assert done.stderr.count("hermes does not use") == 1


def test_a_tool_setting_a_key_hermes_does_not_use_breaks_nothing(hermes, cli_env) -> None:
    path = cli_env.home / "config.yaml"
    path.write_text("mcp_servers:\n  deja-vu:\n    command: deja-vu\nmodel:\n  default: m1\n")
    done = hermes("config", "set", "display.compact", "true")
    assert done.returncode == 0, done.stderr
    assert hermes("config", "get", "model.default").returncode == 0
    assert hermes("config", "set", "model.default", "m2").returncode == 0
    written = yaml.safe_load(path.read_text())
    assert written["display"] == {"compact": True}
    assert written["mcp_servers"] == {"deja-vu": {"command": "deja-vu"}}  # kept, untouched
    assert written["model"]["default"] == "m2"
    again = hermes("sessions", "list")
    assert again.returncode == 0 and "display.compact (line" in again.stderr


def test_a_known_key_with_a_bad_value_is_still_an_error(hermes, cli_env) -> None:
    (cli_env.home / "config.yaml").write_text(
        "display:\n  compact: true\nterminal:\n  timeout: soon\n"
    )
    assert_one_line_error(hermes("sessions", "list"), "terminal.timeout", "line 4", "number")
    (cli_env.home / "config.yaml").write_text("agent:\n  max_turns: lots\n")
    skipped = hermes("config", "get", "agent.max_iterations")  # as Hermes Agent skips it
    assert skipped.stdout.strip() == "30"
    assert "agent.max_turns (line 2; not a value agent.max_iterations can take)" in skipped.stderr
    (cli_env.home / "config.yaml").write_text("terminal: 5\n")
    assert_one_line_error(hermes("sessions", "list"), "'terminal'", "mapping")


def test_a_provider_chooses_the_endpoint_when_the_file_names_none(hermes, cli_env) -> None:
    del cli_env.vars["HERMES_BASE_URL"]
    (cli_env.home / "config.yaml").write_text("model:\n  provider: openai\n  default: gpt-4o\n")
    assert hermes("config", "get", "model.base_url").stdout.strip() == "https://api.openai.com/v1"
    (cli_env.home / "config.yaml").write_text("model:\n  provider: anthropic\n")
    done = hermes("config", "get", "model.base_url")
    assert done.stdout.strip() == "https://openrouter.ai/api/v1"
    assert "model.provider (line 2; no OpenAI-compatible endpoint" in done.stderr
