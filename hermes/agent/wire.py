"""The context as it crosses the wire: each message encoded once, checked once.

Before every model call the agent needs the request body and to know the context is
well-formed (invariant 15). Both used to walk the whole history on every call, so a
turn's cost grew with the conversation. ``WireContext`` keeps each message's encoded
JSON and the well-formedness checker's state for the messages it has seen; ``sync``
then encodes and checks only what was added since. A list that is not the old one
plus new messages at its end (a compression, a repair, another conversation) is
encoded again from the start, once. With a ``MaskPolicy`` the old tool results are
encoded as their stubs (``masking.py``); a message whose stub the plan adds is encoded
again, alone. ``ToolWire`` does the same for the tool schemas offered with every call
(~7 KB of JSON for the built-in tools).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hermes.agent.masking import MaskPolicy, Planner, masked
from hermes.agent.model.client import encode_message
from hermes.state.context.message import wire_form
from hermes.state.context.wellformed import Checker

if TYPE_CHECKING:  # `import run_agent` leaves the tools (and sockets) for later
    from hermes.tools.registry import Tool, ToolRegistry


class WireContext:
    """The wire form of the messages last ``sync``-ed, and whether they are well-formed;
    ``masking`` (None: off) says which old tool results are sent as stubs."""

    def __init__(self, masking: MaskPolicy | None = None) -> None:
        self.masking = masking
        self._reset()

    def _reset(self) -> None:
        self._messages: list[Mapping[str, Any]] = []
        self._pieces: list[bytes] = []
        self._planner = Planner(self.masking) if self.masking is not None else None
        self._checker = Checker()

    def sync(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Follow ``messages``: encode and check only those after the known prefix."""
        known = len(self._messages)
        # List equality looks at identity first, so an unchanged prefix is a C loop.
        if len(messages) < known or list(messages[:known]) != self._messages:
            self._reset()  # not the old list grown: start again from nothing
            known = 0
        for message in messages[known:]:
            self._messages.append(message)
            self._pieces.append(encode_message(wire_form(message)))
            self._checker.add(message)
        if self._planner is not None:
            # The plan only adds stubs while the list grows: encode those messages again.
            for index in self._planner.update(self._messages):
                text = self._planner.stubs[index]
                assert text is not None
                sent = masked(self._messages[index], text)
                self._pieces[index] = encode_message(wire_form(sent))

    @property
    def pieces(self) -> list[bytes]:
        """The encoded messages, in order (``ModelClient.complete(encoded=...)``)."""
        return self._pieces

    @property
    def well_formed(self) -> bool:
        return not self._checker.problems()

    @property
    def calls_open(self) -> bool:
        """The last message's tool calls still wait for results."""
        return self._checker.calls_open


class ToolWire:
    """Each registered tool's schema encoded once, kept while the registry holds the same
    ``Tool`` (frozen: the same object, the same schema); a caller's own tools (an HTTP
    request's) are encoded on every call, as they come with each request."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[Tool | None, bytes]] = {}

    def pieces(
        self,
        registry: ToolRegistry,
        names: Sequence[str],
        client_tools: Sequence[Mapping[str, Any]] = (),
    ) -> list[bytes]:
        """The encoded schemas of ``names`` (in order), then of ``client_tools``."""
        pieces = []
        schemas = registry.schemas(names)  # a KeyError for a name it does not hold
        for name, schema in zip(names, schemas, strict=True):
            tool = registry.get(name)
            known = self._known.get(name)
            if known is None or known[0] is not tool:
                known = self._known[name] = (tool, encode_message(schema))
            pieces.append(known[1])
        pieces.extend(encode_message(tool) for tool in client_tools)
        return pieces
