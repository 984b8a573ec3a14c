"""`hermes config ...` and `hermes setup`, run as a user would."""

from __future__ import annotations

import json

import pexpect
import yaml

from tests.cli.helpers import FAKE_MODEL, assert_one_line_error, hermes_command, mode_of


def test_show_get_path(hermes, cli_env):
    shown = hermes("config", "show")
    assert shown.returncode == 0, shown.stderr
    tree = yaml.safe_load(shown.stdout)
    assert tree["model"]["base_url"] == cli_env.vars["HERMES_BASE_URL"]  # env overrides apply
    assert json.loads(hermes("config", "show", "--json").stdout)["agent.max_iterations"] == 30
    assert hermes("config").stdout == shown.stdout
    assert hermes("config", "get", "model.default").stdout.strip() == "fake-model"
    assert json.loads(hermes("config", "get", "model").stdout)["max_retries"] == 4
    assert hermes("config", "path").stdout.strip() == str(cli_env.home / "config.yaml")


def test_set_validates_then_writes(hermes, cli_env):
    result = hermes("config", "set", "agent.max_iterations", "12")
    assert result.returncode == 0, result.stderr
    assert hermes("config", "get", "agent.max_iterations").stdout.strip() == "12"
    assert hermes("config", "set", "agent.toolsets", "[terminal, files]").returncode == 0
    assert json.loads(hermes("config", "get", "agent.toolsets").stdout) == ["terminal", "files"]
    path = cli_env.home / "config.yaml"
    assert yaml.safe_load(path.read_text())["agent"] == {
        "max_iterations": 12, "toolsets": ["terminal", "files"],
    }  # fmt: skip
    assert mode_of(path) == 0o600


def test_unknown_key_gets_a_suggestion(hermes):
    assert_one_line_error(
        hermes("config", "set", "model.defualt", "x"), "Did you mean 'model.default'"
    )
    assert_one_line_error(hermes("config", "get", "compresion.threshold"), "compression.threshold")


def test_wrong_type_names_the_expected_type(hermes, cli_env):
    assert_one_line_error(hermes("config", "set", "agent.max_iterations", "many"), "a whole number")
    assert_one_line_error(
        hermes("config", "set", "compression.enabled", "perhaps"), "true or false"
    )
    assert_one_line_error(hermes("config", "set", "compression.threshold", "5"), "between 0 and 1")
    assert not (cli_env.home / "config.yaml").exists()  # nothing written on a refusal


def test_refused_value_keeps_the_file(hermes, cli_env):
    assert hermes("config", "set", "compression.threshold", "0.7").returncode == 0
    before = (cli_env.home / "config.yaml").read_text()
    assert hermes("config", "set", "compression.threshold", "7").returncode == 1
    assert (cli_env.home / "config.yaml").read_text() == before


def test_broken_config_is_one_sentence_with_its_line(hermes, cli_env):
    (cli_env.home / "config.yaml").write_text("model:\n  default: [unclosed\n")
    for args in (("config", "show"), ("sessions", "list"), ("chat", "-q", "hi")):
        assert_one_line_error(hermes(*args), "config.yaml", "line")
    (cli_env.home / "config.yaml").write_text("agent:\n  max_iterations: lots\n")
    assert_one_line_error(hermes("config", "show"), "agent.max_iterations", "line 2")


def test_setup_with_options_writes_config_and_a_private_key(hermes, cli_env):
    result = hermes("setup", "--base-url", "https://llm.example.com/v1", "--model", "big-model",
                    "--api-key", "sk-test-123456")  # fmt: skip
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load((cli_env.home / "config.yaml").read_text())
    assert config["model"] == {"base_url": "https://llm.example.com/v1", "default": "big-model"}
    env_file = cli_env.home / ".env"
    assert env_file.read_text() == "HERMES_API_KEY=sk-test-123456\n"
    assert mode_of(env_file) == 0o600
    assert "sk-test" not in result.stdout  # the key is never echoed back
    again = hermes("setup", "--api-key", "sk-other-654321")
    assert again.returncode == 0
    assert env_file.read_text() == "HERMES_API_KEY=sk-other-654321\n"


def test_setup_without_a_terminal_or_options_changes_nothing(hermes, cli_env):
    result = hermes("setup")
    assert result.returncode == 0
    assert "Nothing changed" in result.stdout
    assert not (cli_env.home / "config.yaml").exists()


def test_setup_asks_in_a_terminal(cli_env, fake_llm):
    fake_llm.models[:] = ["big-model", "my-model"]
    child = pexpect.spawn(hermes_command()[0], [*hermes_command()[1:], "setup"],
                          env=cli_env.vars, encoding="utf-8", timeout=20)  # fmt: skip
    try:
        child.expect("Endpoint")
        child.sendline(fake_llm.url)
        child.expect("API key")
        child.sendline("sk-typed-999999")
        # The configured model is not offered there: the first one that is, is proposed.
        child.expect_exact("Model [big-model]")
        child.sendline("my-model")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert "sk-typed" not in (child.before or "")  # typed hidden
    assert "does not offer" not in (child.before or "")
    config = yaml.safe_load((cli_env.home / "config.yaml").read_text())
    assert config["model"]["default"] == "my-model"
    assert (cli_env.home / ".env").read_text() == "HERMES_API_KEY=sk-typed-999999\n"


def test_setup_warns_of_a_model_the_endpoint_does_not_offer(cli_env, fake_llm):
    child = pexpect.spawn(hermes_command()[0], [*hermes_command()[1:], "setup"],
                          env=cli_env.vars, encoding="utf-8", timeout=20)  # fmt: skip
    try:
        child.expect("Endpoint")
        child.sendline(fake_llm.url)
        child.expect("API key")
        child.sendline("")
        child.expect_exact(f"Model [{FAKE_MODEL}]")  # offered: proposed as it is
        child.sendline("fake-modle")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    said = child.before or ""
    assert f"does not offer fake-modle (did you mean {FAKE_MODEL}?)" in said, said


HAND_WRITTEN = """\
# hermes, tuned by hand
model:
  default: fake-model   # the cheap one
# the agent's limits
agent:
  toolsets: [terminal, files]
  max_iterations: 12

# plugins
plugins:
  enabled:
  - hello   # keep this one
"""


EDITED = """\
# hermes, tuned by hand
model:
  default: fake-model   # the cheap one
  context_length: 8000
# the agent's limits
agent:
  toolsets: [terminal, files, web]

# plugins
plugins:
  enabled:
  - hello   # keep this one
  - other
"""


def test_set_and_unset_keep_comments_order_and_list_style(hermes, cli_env):
    path = cli_env.home / "config.yaml"
    path.write_text(HAND_WRITTEN)
    assert hermes("config", "set", "model.context_length", "8000").returncode == 0
    assert hermes("config", "set", "agent.toolsets", "[terminal, files, web]").returncode == 0
    removed = hermes("config", "unset", "agent.max_iterations")
    assert removed.returncode == 0, removed.stderr
    assert "default applies: 30" in removed.stdout
    assert hermes("config", "set", "plugins.enabled", "[hello, other]").returncode == 0
    # The new key lands in its section, above the comment that heads the next one.
    assert path.read_text() == EDITED
    assert hermes("config", "get", "agent.max_iterations").stdout.strip() == "30"
    assert "is not set" in hermes("config", "unset", "agent.max_iterations").stdout
    assert hermes("config", "unset", "plugins.enabled").returncode == 0
    assert "plugins" not in yaml.safe_load(path.read_text())  # an emptied section goes too
    assert mode_of(path) == 0o600


def test_setup_checks_a_new_endpoint_before_saving_it(hermes, cli_env, fake_llm):
    no_scheme = hermes("setup", "--base-url", fake_llm.url.removeprefix("http://"))
    assert_one_line_error(no_scheme, "write it as http://")
    assert not (cli_env.home / "config.yaml").exists()
    root = fake_llm.url.removesuffix("/v1") + "/nothing-here"
    saved = hermes("setup", "--base-url", root, "--model", FAKE_MODEL)
    assert saved.returncode == 0  # a script's choice is saved, but not silently
    assert f"which answers at {fake_llm.url}" in saved.stderr, saved.stderr
    works = hermes("setup", "--base-url", fake_llm.url)
    assert works.returncode == 0 and works.stderr == "", works.stderr
