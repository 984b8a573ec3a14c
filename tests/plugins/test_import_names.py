"""The import names tools written for Hermes Agent use for plugins, hooks and engines."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.plugins.helpers import HELLO_INIT, HELLO_MANIFEST, enable, install_plugin


def test_hermes_cli_plugins_as_tools_use_it(hermes_home: Path) -> None:
    plugin = install_plugin(hermes_home, "hello-world", HELLO_MANIFEST, HELLO_INIT)
    enable(hermes_home, "hello-world")
    from hermes_cli.plugins import (
        VALID_HOOKS,
        PluginManager,
        discover_plugins,
        get_plugin_manager,
        invoke_hook,
    )

    discover_plugins(force=True)
    [info] = get_plugin_manager().list_plugins()
    assert (info["name"], info["enabled"], info["tools"], info["error"]) == (
        "hello-world", True, 1, None
    )  # fmt: skip
    assert invoke_hook("on_session_start", session_id="s1", model="m", platform="cli") == []
    assert (plugin / "fired.log").read_text() == "on_session_start s1\n"
    assert "pre_tool_call" in VALID_HOOKS
    manager = PluginManager()
    manager.discover_and_load()
    assert [p["key"] for p in manager.list_plugins()] == ["hello-world"]


def test_the_manager_as_hermes_webuis_plugins_panel_reads_it(hermes_home: Path) -> None:
    """webui calls ``discover_and_load`` and reads ``_plugins`` with 0.19's names."""
    install_plugin(hermes_home, "hello-world", HELLO_MANIFEST, HELLO_INIT)
    enable(hermes_home, "hello-world")
    from hermes_cli.plugins import get_plugin_manager

    manager = get_plugin_manager()
    manager.discover_and_load(force=False)
    [(key, loaded)] = manager._plugins.items()
    assert key == "hello-world" and loaded.manifest.name == "hello-world"
    assert loaded.enabled and loaded.error is None
    assert len(loaded.tools_registered) == 1
    assert "on_session_start" in loaded.hooks_registered
    assert [p["key"] for p in manager.list_plugins()] == ["hello-world"]  # hermes's names too


def test_a_plugins_tools_reach_a_chat_that_names_the_clis_toolsets(
    hermes_home: Path, fake_llm
) -> None:
    """hermes-webui passes ``_get_platform_tools(cfg, "cli")`` on as ``enabled_toolsets``:
    the enabled plugin's tool is among what the agent then offers."""
    install_plugin(hermes_home, "hello-world", HELLO_MANIFEST, HELLO_INIT)
    enable(hermes_home, "hello-world")
    from hermes_cli.plugins import discover_plugins
    from hermes_cli.tools_config import _get_platform_tools

    from hermes.plugins import current
    from run_agent import AIAgent

    discover_plugins(force=True)
    [hello] = [tool.name for tool in current().tools()]
    named = _get_platform_tools({}, "cli")
    assert {"terminal", "read_file", hello} <= named
    agent = AIAgent(base_url=fake_llm.url, model="fake-model", enabled_toolsets=sorted(named),
                    skip_context_files=True, skip_memory=True)  # fmt: skip
    try:
        assert hello in agent.tool_names() and "terminal" in agent.tool_names()
    finally:
        agent.client.close()


def test_agent_context_engine_and_gateway_hooks(hermes_home: Path) -> None:
    from agent.context_engine import ContextEngine
    from gateway.hooks import HookRegistry

    assert {
        "compress",
        "should_compress",
        "update_from_response",
    } <= ContextEngine.__abstractmethods__
    folder = hermes_home / "hooks" / "note"
    folder.mkdir(parents=True)
    (folder / "HOOK.yaml").write_text("name: note\nevents: [agent:start]\n")
    (folder / "handler.py").write_text(
        "from pathlib import Path\n"
        "def handle(event_type, context):\n"
        "    Path(__file__).with_name('seen').write_text(event_type)\n"
    )
    registry = HookRegistry()
    registry.discover_and_load()
    assert [h["name"] for h in registry.loaded_hooks] == ["note"]
    asyncio.run(registry.emit("agent:start", {"platform": "cli"}))
    registry.close_and_wait()
    assert (folder / "seen").read_text() == "agent:start"
