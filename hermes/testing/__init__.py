"""Models for testing hermes, and your own agent, without a real endpoint.

Two ways, both shipped with the package (neither needs pytest):

- ``ScriptedModel`` (``hermes.testing.scripted``): an in-process model answering from a
  script of replies, tool calls, failures and functions, recording each request. Hand
  it to an agent, ``AIAgent(session_db=db, model_client=ScriptedModel([...]))``, or to a
  gateway, ``GatewayRunner(make_model=lambda: ScriptedModel(...))``. No HTTP, no
  threads of its own: the fastest way to test a tool, a prompt or a conversation.
- ``FakeLLMServer`` (``hermes.testing.llm_server``): a local OpenAI-compatible HTTP
  server with a script of its own (faults included: rate limits, hangs, dropped
  connections). Point ``model.base_url`` at ``server.url`` to test the whole path: the
  real HTTP client, retries, streaming, a gateway in another process, or another
  program's OpenAI client. hermes's own test suite and benchmarks use it.

Nothing in hermes's runtime imports this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes.testing.scripted import (
    ModelRequest,
    Scripted,
    ScriptedModel,
    ScriptExhausted,
    context_length_exceeded,
    text,
    tool_call,
    tool_calls,
)

if TYPE_CHECKING:
    from hermes.testing.llm_server import FakeLLMServer


def __getattr__(name: str) -> Any:
    # Imported when first asked for, so `python -m hermes.testing.llm_server` runs the
    # module once (imported here as well, Python warns it may misbehave).
    if name == "FakeLLMServer":
        from hermes.testing.llm_server import FakeLLMServer

        return FakeLLMServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FakeLLMServer",
    "ModelRequest",
    "ScriptExhausted",
    "Scripted",
    "ScriptedModel",
    "context_length_exceeded",
    "text",
    "tool_call",
    "tool_calls",
]
