"""Plugins written as Hermes Agent's docs show them, placed in a test's HERMES_HOME."""

from __future__ import annotations

import textwrap
from pathlib import Path

# The "hello-world" plugin of Hermes Agent's plugin guide: a tool and hooks that write
# each firing, in order, to a file beside the plugin (so a test can read the order).
HELLO_MANIFEST = """\
name: hello-world
version: "1.0"
description: A minimal example plugin
provides_tools:
  - hello_world
provides_hooks:
  - post_tool_call
"""

HELLO_INIT = '''
"""Minimal Hermes plugin: registers a tool and hooks."""
import json
from pathlib import Path

LOG = Path(__file__).with_name("fired.log")


def _note(name, **kwargs):
    detail = kwargs.get("tool_name") or kwargs.get("session_id") or ""
    with LOG.open("a") as f:
        f.write(f"{name} {detail}\\n")


def register(ctx):
    schema = {
        "name": "hello_world",
        "description": "Returns a friendly greeting for the given name.",
        "parameters": {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Name to greet"}},
            "required": ["name"],
        },
    }

    def handle_hello(params, **kwargs):
        del kwargs
        return json.dumps({"success": True, "greeting": f"Hello, {params.get('name')}!"})

    ctx.register_tool(name="hello_world", toolset="hello_world", schema=schema,
                      handler=handle_hello, description="Return a friendly greeting.")
    for hook in ("on_session_start", "pre_llm_call", "pre_tool_call", "post_tool_call",
                 "post_llm_call", "on_session_end"):
        ctx.register_hook(hook, lambda hook=hook, **kw: _note(hook, **kw))
'''


def install_plugin(home: Path, folder: str, manifest: str, init: str) -> Path:
    plugin = home / "plugins" / folder
    plugin.mkdir(parents=True, exist_ok=True)
    (plugin / "plugin.yaml").write_text(manifest)
    (plugin / "__init__.py").write_text(textwrap.dedent(init))
    return plugin


def enable(home: Path, *names: str, extra: str = "") -> None:
    listed = "".join(f"    - {name}\n" for name in names)
    (home / "config.yaml").write_text(f"plugins:\n  enabled:\n{listed}{extra}")


# A context-engine plugin as Hermes Agent's context-engine guide shows one: a
# ContextEngine subclass registered by register(ctx), selected by context.engine. It keeps
# the first message and the last two, and puts one summary message between; each call is
# written to calls.log beside it.
ENGINE_MANIFEST = """\
name: tiny-engine
version: "0.1"
description: Keeps the ends, summarises the middle
"""

ENGINE_INIT = """
from pathlib import Path

from agent.context_engine import ContextEngine

LOG = Path(__file__).with_name("calls.log")


class TinyEngine(ContextEngine):
    @property
    def name(self):
        return "tiny"

    def update_from_response(self, usage):
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)

    def should_compress(self, prompt_tokens=None):
        return (prompt_tokens or 0) >= self.threshold_tokens > 0

    def compress(self, messages, current_tokens=None, focus_topic=None):
        with LOG.open("a") as f:
            f.write(f"compress {len(messages)}\\n")
        middle = messages[1:-2]
        words = " | ".join(str(m.get("content") or "")[:20] for m in middle)
        summary = {"role": "assistant", "content": f"[tiny summary of {len(middle)}] {words}"}
        return [messages[0], summary, *messages[-2:]]


def register(ctx):
    ctx.register_context_engine(TinyEngine())
"""


# What the engine hears of its conversations: 0.19's lifecycle hooks, each on one line.
LIFECYCLE = """

def _said(*words):
    with LOG.open("a") as f:
        f.write(" ".join(str(w) for w in words) + "\\n")


TinyEngine.on_session_start = lambda self, session_id, **kw: _said("start", session_id)
TinyEngine.on_session_end = lambda self, session_id, messages: _said(
    "end", session_id, [m.get("content") for m in messages]
)
TinyEngine.on_session_reset = lambda self: _said("reset")
"""


# What the engine is told of the model: 0.19's update_model, each call on one line.
MODEL_TOLD = """

def _update_model(self, model, context_length, base_url="", api_key="", provider="",
                  api_mode=""):
    with LOG.open("a") as f:
        f.write(f"model {model} {context_length} {base_url} {bool(api_key)} {api_mode}\\n")
    ContextEngine.update_model(self, model, context_length, base_url, api_key, provider,
                               api_mode)


TinyEngine.update_model = _update_model
"""


def told_models(plugin: Path) -> list[str]:
    said = (plugin / "calls.log").read_text().splitlines()
    return [line for line in said if line.startswith("model ")]


# A titling plugin registered as hermes-session-titler registers itself (on_session_start,
# pre_command for /quit and /exit, on_session_finalize): at the end of a conversation it
# titles it through 0.19's SessionDB, as that plugin does once its model has answered.
TITLER_MANIFEST = """\
name: titler
version: "0.1"
description: Titles a conversation when it ends
"""

TITLER_INIT = """
from pathlib import Path

LOG = Path(__file__).with_name("fired.log")


def _note(*words):
    with LOG.open("a") as f:
        f.write(" ".join(str(w) for w in words) + "\\n")


def _on_finalize(**kw):
    _note("finalize", kw.get("session_id"), kw.get("platform"), kw.get("reason"))
    from hermes_state import SessionDB

    db = SessionDB()
    try:
        db.set_auto_title_if_empty(kw["session_id"], "Titled " + kw["session_id"])
    finally:
        db.close()


def register(ctx):
    ctx.register_hook("on_session_start", lambda **kw: _note("start", kw.get("session_id")))
    ctx.register_hook("pre_command", lambda **kw: _note("pre_command", kw.get("command")))
    ctx.register_hook("on_session_finalize", _on_finalize)
"""
