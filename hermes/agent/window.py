"""The context window: what the model is sent of a conversation, and how big it is.

``ContextWindow`` holds the compressor (the summariser, or a plugin's context engine),
the masking of old tool results, the encoded context kept between model calls
(``WireContext``), the provider's last prompt size and what the last compression did.
The turn and the compression path read and update it; the agent assembles it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes.agent.masking import MaskPolicy, masked_view
from hermes.agent.tokens import estimate_tokens
from hermes.agent.wire import WireContext
from hermes.state.context.message import Message

if TYPE_CHECKING:
    from hermes.agent.engine_compressor import EngineCompressor
    from hermes.agent.summariser import Summariser

    Compressor = Summariser | EngineCompressor


@dataclass
class CompressionOutcome:
    """What one compression attempt did, for the surfaces to report."""

    rotated: bool = False
    reason: str = ""  # why nothing happened, in words
    holder: str | None = None  # who holds the lease, when that was the reason
    parent_id: str | None = None
    child_id: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None


class ContextWindow:
    """The compressor, the masking and the encoded context of one agent."""

    def __init__(self, masking: MaskPolicy | None, *, compression_enabled: bool) -> None:
        self.masking = masking  # None: tool results are always sent whole
        self.compression_enabled = compression_enabled
        self.compressor: Any = None  # seated by the agent (it needs ``sent_as``)
        self.wire = WireContext(masking)  # the context's encoded messages, kept
        self.last_sent_count = 0  # messages in the last request, for token accounting
        self.last_compression: CompressionOutcome | None = None

    def estimate_tokens(self, messages: list[Message]) -> int:
        """The size of ``messages`` as the model is sent them (masked results as stubs)."""
        return estimate_tokens(self.sent_as(messages))

    def sent_as(self, messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """``messages`` as the model is sent them: masked tool results as their stubs."""
        return masked_view(messages, self.masking)

    def context_tokens(self, messages: list[Message]) -> int | None:
        """The provider's last prompt size plus an estimate of what was added since;
        None when unknown (the compressor then estimates the whole list)."""
        reported, sent = self.compressor.last_prompt_tokens, self.last_sent_count
        if not reported or sent > len(messages):
            return None
        return int(reported) + self.estimate_tokens(messages[sent:])

    def note_compression(self, outcome: CompressionOutcome | None) -> None:
        """What the last compression did (``/compress`` and the turn report it)."""
        self.last_compression = outcome

    def record_prompt_size(self, prompt_tokens: int, sent_messages: int) -> None:
        """The provider's prompt size for a request of the context's first
        ``sent_messages`` messages: the next threshold check starts from it."""
        self.last_sent_count = sent_messages
        if prompt_tokens:
            self.compressor.last_prompt_tokens = prompt_tokens

    def forget_prompt_size(self) -> None:
        """The provider's last figure was for another context (compressed, or left)."""
        self.compressor.last_prompt_tokens = 0

    def learn_context_window(self, window: int) -> None:
        """Believe a provider that says the model's window is smaller than our table."""
        if 0 < window < self.compressor.context_length:
            self.compressor.context_length = window
