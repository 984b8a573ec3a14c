"""Dispatch turns every model mistake into an "Error:" result; toolsets per surface."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes.config import load_config
from hermes.errors import ConfigError
from hermes.tools import Tool, ToolContext, ToolError, ToolRegistry, resolve_toolset
from tests.tools.helpers import write_config

ECHO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "times": {"type": "integer", "minimum": 1},
        "loud": {"type": "boolean"},
    },
    "required": ["text"],
    "additionalProperties": False,
}


def _echo(args: dict[str, Any], ctx: ToolContext) -> str:
    if args["text"] == "boom":
        raise RuntimeError("the handler broke")
    if args["text"] == "refuse":
        raise ToolError("this cannot work because reasons.")
    text = args["text"] * args.get("times", 1)
    return text.upper() if args.get("loud") else text


@pytest.fixture
def echo_registry() -> ToolRegistry:
    return ToolRegistry([Tool("echo", "Echo text.", ECHO_SCHEMA, _echo, ("test",))])


def test_builtin_schemas_are_openai_function_tools(registry: ToolRegistry) -> None:
    expected = {
        "terminal",
        "process",
        "read_file",
        "write_file",
        "patch",
        "search_files",
        "memory",
        "session_search",
        "recall",
        "skill_view",
        "skill_manage",
    }
    assert set(registry.names()) == expected
    for schema in registry.schemas():
        assert schema["type"] == "function"
        function = schema["function"]
        assert set(function) == {"name", "description", "parameters"}
        assert function["parameters"]["type"] == "object"
        assert set(function["parameters"]["required"]) <= set(function["parameters"]["properties"])
    assert [s["function"]["name"] for s in registry.schemas(["memory", "terminal"])] == [
        "memory",
        "terminal",
    ]


def test_dispatch_runs_the_handler(echo_registry: ToolRegistry, ctx: ToolContext) -> None:
    assert echo_registry.dispatch("echo", '{"text": "ab", "times": 2}', ctx) == "abab"


def test_unknown_tool_lists_the_available_ones(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = registry.dispatch("shell", "{}", ctx)
    assert result.startswith("Error: unknown tool 'shell'")
    assert "terminal" in result


def test_tool_outside_allowed_set_is_unknown(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = registry.dispatch("terminal", '{"command": "true"}', ctx, allowed=["memory"])
    assert result.startswith("Error: unknown tool 'terminal'")
    assert "Available tools: memory." in result


@pytest.mark.parametrize("bad", ['{"text": "a"', "{'text': 'a'}", "text=a"])
def test_malformed_json_is_an_error(
    echo_registry: ToolRegistry, ctx: ToolContext, bad: str
) -> None:
    result = echo_registry.dispatch("echo", bad, ctx)
    assert result.startswith("Error: the arguments for 'echo' are not valid JSON")
    assert "echo(text: string" in result


def test_non_object_json_is_an_error(echo_registry: ToolRegistry, ctx: ToolContext) -> None:
    result = echo_registry.dispatch("echo", '["a"]', ctx)
    assert result.startswith("Error: the arguments for 'echo' must be a JSON object")


def test_missing_required_argument(echo_registry: ToolRegistry, ctx: ToolContext) -> None:
    for arguments in ("{}", "", '{"text": null}'):
        result = echo_registry.dispatch("echo", arguments, ctx)
        assert result.startswith(
            "Error: invalid arguments for 'echo': missing required argument 'text'"
        )


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"text": 5}, "'text' must be a string, not 5"),
        ({"text": "a", "times": "many"}, "'times' must be a whole number"),
        ({"text": "a", "times": 0}, "'times' must be at least 1"),
        ({"text": "a", "loud": "yes"}, "'loud' must be true or false"),
        ({"text": "a", "colour": "red"}, "unknown argument 'colour'"),
    ],
)
def test_arguments_failing_the_schema(
    echo_registry: ToolRegistry, ctx: ToolContext, args: dict[str, Any], problem: str
) -> None:
    result = echo_registry.dispatch("echo", json.dumps(args), ctx)
    assert result.startswith("Error: invalid arguments for 'echo'")
    assert problem in result


def test_unambiguous_strings_are_coerced(echo_registry: ToolRegistry, ctx: ToolContext) -> None:
    assert (
        echo_registry.dispatch("echo", '{"text": "a", "times": "3", "loud": "true"}', ctx) == "AAA"
    )
    assert echo_registry.dispatch("echo", '{"text": "a", "times": null}', ctx) == "a"


def test_handler_exceptions_become_errors(echo_registry: ToolRegistry, ctx: ToolContext) -> None:
    crashed = echo_registry.dispatch("echo", '{"text": "boom"}', ctx)
    assert crashed.startswith("Error: tool 'echo' failed: RuntimeError: the handler broke")
    refused = echo_registry.dispatch("echo", '{"text": "refuse"}', ctx)
    assert refused == "Error: this cannot work because reasons."


def test_registering_a_name_twice_is_refused(echo_registry: ToolRegistry) -> None:
    with pytest.raises(ValueError, match="already registered"):
        echo_registry.register(Tool("echo", "again", ECHO_SCHEMA, _echo))


def test_default_toolsets_per_surface(home) -> None:
    config = load_config(home / "config.yaml")
    everything = [
        "terminal",
        "process",
        "read_file",
        "write_file",
        "patch",
        "search_files",
        "memory",
        "session_search",
        "recall",
        "skill_view",
        "skill_manage",
    ]
    assert resolve_toolset("cli", config) == everything
    assert resolve_toolset("gateway", config) == everything
    assert resolve_toolset("review", config) == ["memory", "skill_view", "skill_manage"]
    write_config(home, {"skills.review_may_edit": False})
    memory_only = load_config(home / "config.yaml")
    assert resolve_toolset("review", memory_only) == ["memory"]


def test_configured_toolsets_mix_tool_and_toolset_names(home) -> None:
    write_config(home, {"agent.toolsets": ["files", "memory", "process"]})
    config = load_config(home / "config.yaml")
    assert resolve_toolset("cli", config) == [
        "process",
        "read_file",
        "write_file",
        "patch",
        "search_files",
        "memory",
    ]
    assert resolve_toolset("review", config) == ["memory"]
    write_config(home, {"agent.toolsets": ["files"]})
    assert resolve_toolset("review", load_config(home / "config.yaml")) == []


def test_unknown_configured_toolset_is_a_config_error(home) -> None:
    write_config(home, {"agent.toolsets": ["terminal", "browser"]})
    with pytest.raises(ConfigError, match="'browser'"):
        resolve_toolset("cli", load_config(home / "config.yaml"))


def test_a_context_without_a_config_uses_defaults_not_the_file(home: Any, workdir: Any) -> None:
    """The tools room never reads config.yaml itself: the caller passes the Config."""
    write_config(home, {"terminal.timeout": 7})
    ctx = ToolContext(hermes_home=home, cwd=workdir)
    assert ctx.setting("terminal.timeout") == 180
    given = ToolContext(hermes_home=home, cwd=workdir, config=load_config(home / "config.yaml"))
    assert given.setting("terminal.timeout") == 7
