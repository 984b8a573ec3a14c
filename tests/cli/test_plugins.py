"""Plugins in real `hermes` processes: a Hermes-style plugin's tool is called by the model
and its hooks fire in order; a broken plugin is one warning; `hermes plugins`."""

from __future__ import annotations

import json

from tests.cli.chat_pty import PROMPT
from tests.fakes.llm_server import text, tool_call
from tests.plugins.helpers import (
    HELLO_INIT,
    HELLO_MANIFEST,
    TITLER_INIT,
    TITLER_MANIFEST,
    enable,
    install_plugin,
)


def test_a_plugin_tool_runs_and_its_hooks_fire_in_order(hermes, cli_env, fake_llm):
    plugin = install_plugin(cli_env.home, "hello-world", HELLO_MANIFEST, HELLO_INIT)
    enable(cli_env.home, "hello-world")
    fake_llm.enqueue(tool_call("hello_world", {"name": "Ada"}), text("Greeted Ada."))
    result = hermes("chat", "-q", "greet Ada")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Greeted Ada.\n"
    offered = [t["function"]["name"] for t in fake_llm.requests[0]["tools"]]
    assert "hello_world" in offered
    tool_result = fake_llm.requests[1]["messages"][-1]
    assert json.loads(tool_result["content"]) == {"success": True, "greeting": "Hello, Ada!"}
    fired = [line.split()[0] for line in (plugin / "fired.log").read_text().splitlines()]
    assert fired == [
        "on_session_start",
        "pre_llm_call",
        "pre_tool_call",
        "post_tool_call",
        "post_llm_call",
        "on_session_end",
    ]


def test_a_plugin_not_enabled_does_not_load(hermes, cli_env, fake_llm):
    plugin = install_plugin(cli_env.home, "hello-world", HELLO_MANIFEST, HELLO_INIT)
    result = hermes("chat", "-q", "hi")
    assert result.returncode == 0, result.stderr
    offered = [t["function"]["name"] for t in fake_llm.requests[0].get("tools") or []]
    assert "hello_world" not in offered
    assert not (plugin / "fired.log").exists()


def test_a_broken_plugin_is_one_warning_and_hermes_answers(hermes, cli_env):
    install_plugin(cli_env.home, "broken", "name: broken\n", "import no_such_module_here\n")
    enable(cli_env.home, "broken")
    result = hermes("chat", "-q", "still there?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "echo: still there?\n"
    warnings = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1, result.stderr
    assert "broken" in warnings[0] and "no_such_module_here" in warnings[0]
    assert "Traceback" not in result.stderr


def test_plugins_list_enable_disable(hermes, cli_env):
    install_plugin(cli_env.home, "hello-world", HELLO_MANIFEST, HELLO_INIT)
    listed = hermes("plugins", "list")
    assert listed.returncode == 0, listed.stderr
    assert "hello-world" in listed.stdout and "not enabled" in listed.stdout
    enabled = hermes("plugins", "enable", "hello-world")
    assert enabled.returncode == 0, enabled.stderr
    assert "hello-world" in (cli_env.home / "config.yaml").read_text()
    listed = hermes("plugins", "list")
    assert "enabled" in listed.stdout and "not enabled" not in listed.stdout
    assert hermes("plugins", "disable", "hello-world").returncode == 0
    listed = hermes("plugins", "list")
    assert "disabled" in listed.stdout
    unknown = hermes("plugins", "enable", "nope")
    assert unknown.returncode == 1
    assert "nope" in unknown.stderr and "hermes plugins list" in unknown.stderr


def test_enable_and_disable_keep_the_users_comments(hermes, cli_env):
    install_plugin(cli_env.home, "hello-world", HELLO_MANIFEST, HELLO_INIT)
    path = cli_env.home / "config.yaml"
    path.write_text("# my setup\nplugins:\n  enabled: [old-one]  # from last year\n# the end\n")
    assert hermes("plugins", "enable", "hello-world").returncode == 0
    written = path.read_text()
    assert written.startswith("# my setup\nplugins:\n  enabled: [old-one, hello-world]")
    assert "# from last year" in written and written.endswith("# the end\n")
    assert hermes("plugins", "disable", "hello-world").returncode == 0
    assert path.read_text().startswith("# my setup\nplugins:\n  enabled: [old-one]")


# A status hook as agent-deck writes it into config.yaml (`hooks:`, 0.19's shell hooks):
# the command gets the event as JSON on stdin.
STATUS_HOOK = """\
import json, sys
from pathlib import Path
event = json.load(sys.stdin)
with Path(sys.argv[1]).open("a") as f:
    f.write(event["hook_event_name"] + " " + event["session_id"] + "\\n")
"""


def test_the_hooks_config_key_runs_its_commands(hermes, cli_env):
    import shlex
    import sys

    script, log = cli_env.home / "status_hook.py", cli_env.home / "status.log"
    script.write_text(STATUS_HOOK)
    command = shlex.join([sys.executable, str(script), str(log)])
    events = ("pre_llm_call", "post_llm_call", "on_session_start", "on_session_end")
    listed = "".join(f"  {e}:\n    - command: {command}\n" for e in events)
    (cli_env.home / "config.yaml").write_text(f"hooks:\n{listed}")
    result = hermes("chat", "-q", "status?", "--json")
    assert result.returncode == 0, result.stderr
    session = json.loads(result.stdout)["session_id"]
    fired = log.read_text().splitlines()
    assert fired == [f"{e} {session}" for e in
                     ("on_session_start", "pre_llm_call", "post_llm_call", "on_session_end")]  # fmt: skip


def test_a_plugin_from_an_installed_package_entry_point(hermes, cli_env, fake_llm, tmp_path):
    site = tmp_path / "site"
    package = site / "greeter_plugin"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        HELLO_INIT.replace("hello_world", "greet_entry").replace("fired.log", "entry.log")
    )
    info = site / "greeter_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: greeter-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[hermes_agent.plugins]\ngreeter = greeter_plugin\n")
    cli_env.vars["PYTHONPATH"] = str(site)
    listed = hermes("plugins", "list")
    assert "greeter" in listed.stdout and "entrypoint" in listed.stdout, listed.stderr
    assert hermes("plugins", "enable", "greeter").returncode == 0
    fake_llm.enqueue(tool_call("greet_entry", {"name": "Bo"}), text("Done."))
    result = hermes("chat", "-q", "greet Bo")
    assert result.returncode == 0, result.stderr
    assert json.loads(fake_llm.requests[1]["messages"][-1]["content"])["greeting"] == "Hello, Bo!"


API_HOOK_INIT = """
import json
from pathlib import Path

LOG = Path(__file__).with_name("requests.log")


def register(ctx):
    def note(**kw):
        with LOG.open("a") as f:
            f.write(json.dumps({k: kw[k] for k in ("api_call_count", "tool_count", "session_id")}))
            f.write("\\n")
    ctx.register_hook("pre_api_request", note)
"""


def test_pre_api_request_fires_before_each_model_request(hermes, cli_env, fake_llm):
    """0.19's ``pre_api_request`` (observability plugins such as langfuse's): once per
    model request, counted within the turn."""
    from hermes.plugins import VALID_HOOKS

    assert "pre_api_request" in VALID_HOOKS
    helper = install_plugin(cli_env.home, "hello-world", HELLO_MANIFEST, HELLO_INIT)
    plugin = install_plugin(cli_env.home, "api-watch", "name: api-watch\n", API_HOOK_INIT)
    enable(cli_env.home, "hello-world", "api-watch")
    fake_llm.enqueue(tool_call("hello_world", {"name": "Ada"}), text("Greeted Ada."))
    result = hermes("chat", "-q", "greet Ada")
    assert result.returncode == 0, result.stderr
    seen = [json.loads(line) for line in (plugin / "requests.log").read_text().splitlines()]
    assert [s["api_call_count"] for s in seen] == [1, 2]
    assert all(s["tool_count"] >= 1 and s["session_id"] for s in seen)
    assert len(fake_llm.requests) == 2 and helper.exists()


SLASH_INIT = """
import asyncio


async def whisper(raw_args):
    await asyncio.sleep(0)
    return raw_args.lower()


def register(ctx):
    ctx.register_command("shout", lambda raw_args: raw_args.upper())
    ctx.register_command("whisper-async", whisper)
"""


def test_a_plugins_slash_command_runs_in_the_terminal_chat(hermes_home, fake_llm):
    """The terminal chat's dispatcher runs a plugin's ``/name`` as 0.19's CLI does."""
    from hermes.agent import AIAgent
    from hermes.agent import commands as chat_commands
    from hermes.state import SessionDB

    install_plugin(hermes_home, "shouter", "name: shouter\n", SLASH_INIT)
    enable(hermes_home, "shouter")
    with SessionDB(db_path=hermes_home / "state.db") as db:
        agent = AIAgent(base_url=fake_llm.url, model="fake-model", session_db=db, source="cli",
                        skip_context_files=True, skip_memory=True)  # fmt: skip
        try:
            reply = chat_commands.dispatch(agent, "/shout make it loud")
            unknown = chat_commands.dispatch(agent, "/whisper")
        finally:
            agent.client.close()
    assert (reply.ok, reply.text) == (True, "MAKE IT LOUD")
    assert not unknown.ok and "Unknown command /whisper" in unknown.text
    from hermes_cli.plugins import get_plugin_command_handler, get_plugin_commands

    assert get_plugin_commands()["shout"]["plugin"] == "shouter"
    assert get_plugin_command_handler("shout")("hey") == "HEY"


def test_plugin_commands_as_hermes_webui_runs_them(hermes_home):
    """hermes-webui's ``/name`` for a plugin: ``get_plugin_command_handler`` and
    ``resolve_plugin_command_result(handler(args))`` (imported together), a coroutine
    awaited whether or not the caller's thread runs an event loop."""
    import asyncio

    from hermes_cli.plugins import get_plugin_command_handler, resolve_plugin_command_result

    install_plugin(hermes_home, "shouter", "name: shouter\n", SLASH_INIT)
    enable(hermes_home, "shouter")
    assert resolve_plugin_command_result(get_plugin_command_handler("shout")("hey")) == "HEY"
    handler = get_plugin_command_handler("whisper-async")
    assert handler is not None
    assert resolve_plugin_command_result(handler("QUIET PLEASE")) == "quiet please"

    async def from_a_server_handler() -> str:
        return str(resolve_plugin_command_result(handler("INSIDE A LOOP")))

    assert asyncio.run(from_a_server_handler()) == "inside a loop"


def _titles(hermes) -> dict[str, str | None]:
    listed = json.loads(hermes("sessions", "list", "--json").stdout)
    return {row["tip_id"]: row["title"] for row in listed}


def test_a_titling_plugin_titles_each_conversation_the_chat_leaves(chat, hermes, cli_env):
    """hermes-session-titler's way: ``on_session_finalize`` as 0.19's terminal chat fires
    it (``/new``: ``session_boundary``; the chat closed: ``shutdown``), and the plugin
    titles the conversation through 0.19's ``set_auto_title_if_empty``."""
    plugin = install_plugin(cli_env.home, "titler", TITLER_MANIFEST, TITLER_INIT)
    enable(cli_env.home, "titler")
    session = chat()
    session.say("how do I feed a starter", "echo: how do I feed a starter")
    session.expect(PROMPT)
    session.command("/new", "Started a new conversation")
    session.say("and the levain?", "echo: and the levain?")
    session.expect(PROMPT)
    assert session.leave() == 0
    fired = (plugin / "fired.log").read_text().splitlines()
    finals = [line.split() for line in fired if line.startswith("finalize")]
    assert [(platform, reason) for _, _, platform, reason in finals] == [
        ("cli", "session_boundary"),
        ("cli", "shutdown"),
    ]
    titles = _titles(hermes)
    assert titles == {sid: f"Titled {sid}" for _, sid, _, _ in finals} and len(titles) == 2
    assert not [line for line in fired if line.startswith("pre_command")]  # 0.19 has none


def test_one_question_ends_its_conversation_for_the_plugins(hermes, cli_env, fake_llm):
    plugin = install_plugin(cli_env.home, "titler", TITLER_MANIFEST, TITLER_INIT)
    enable(cli_env.home, "titler")
    result = hermes("chat", "-q", "how do I feed a starter")
    assert result.returncode == 0, result.stderr
    [final] = [line.split() for line in (plugin / "fired.log").read_text().splitlines()
               if line.startswith("finalize")]  # fmt: skip
    assert final[2:] == ["cli", "shutdown"]
    assert _titles(hermes) == {final[1]: f"Titled {final[1]}"}
