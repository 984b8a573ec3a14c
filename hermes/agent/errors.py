"""Errors of the agent and its model endpoint, each a sentence a person can act on.

    AgentError
    ├── ModelError               the endpoint or model failed (.model, .base_url, .status)
    │   ├── ModelAuthError         401/403: the API key was rejected
    │   ├── ModelNotFoundError     404: the endpoint has no such model
    │   ├── EndpointMismatchError  the base URL leads to no OpenAI API (no scheme, no /v1...)
    │   ├── ModelUnavailableError  retries exhausted (429, 5xx, timeouts, dropped connections)
    │   └── ContextLengthError     the request is longer than the model's context window
    ├── SummaryError             context compression could not produce a summary
    └── TurnInterrupted          the user (or the gateway) interrupted the running call

Every ``openai`` exception is translated into one of these at the client boundary
(``hermes.agent.model.client``), so nothing above it ever sees an ``openai`` class.
"""

from __future__ import annotations

from hermes.errors import HermesError
from hermes.redaction import redact

__all__ = [
    "AgentError",
    "ContextLengthError",
    "EndpointMismatchError",
    "ModelAuthError",
    "ModelError",
    "ModelNotFoundError",
    "ModelUnavailableError",
    "SummaryError",
    "TurnInterrupted",
]


def first_sentence(text: str) -> str:
    """The first sentence of a provider's message, without its full stop."""
    head, _, _ = text.strip().partition(". ")
    return head.strip().rstrip(".")


class AgentError(HermesError):
    """A problem in the agent or with its model endpoint."""


class ToolResultsError(AgentError):
    """Tool results a caller sent answer no open tool call of the conversation."""


class ModelError(AgentError):
    """The endpoint or the model failed; the message says which and what to do."""

    def __init__(
        self,
        message: str | None = None,
        *,
        model: str,
        base_url: str,
        status: int | None = None,
        detail: str | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.status = status
        self.detail = redact(detail) if detail else None
        super().__init__(message or self._default_message())

    def _status_part(self) -> str:
        return f" ({self.status})" if self.status else ""

    def _detail_part(self) -> str:
        """`` (reason)`` for the message: the status and the provider's first sentence;
        the whole text stays in ``.detail``."""
        reason = first_sentence(self.detail) if self.detail else ""
        if self.status:
            reason = f"HTTP {self.status}: {reason}" if reason else f"HTTP {self.status}"
        return f" ({reason})" if reason else ""

    # Each subclass writes its own message and reason in full, alike in shape: a shared template
    # would hide the sentence the user reads.
    def _default_message(self) -> str:
        return (
            f"The endpoint {self.base_url} failed for model {self.model}{self._detail_part()}; "
            "check the endpoint and model with `hermes doctor`."
        )

    @property
    def reason(self) -> str:
        """What went wrong as a clause about the model ("the model X <reason>")."""
        return f"failed at {self.base_url}{self._detail_part()}"


class ModelAuthError(ModelError):
    def _default_message(self) -> str:
        return (
            f"The endpoint {self.base_url} rejected the API key for model {self.model}"
            f"{self._status_part()}. Set HERMES_API_KEY or run `hermes setup`."
        )

    @property
    def reason(self) -> str:
        return f"was refused by {self.base_url}, which rejected the API key{self._status_part()}"


class ModelNotFoundError(ModelError):
    def _default_message(self) -> str:
        return (
            f"The endpoint {self.base_url} has no model {self.model}{self._status_part()}. "
            "Check the model name; `hermes doctor` lists the endpoint's models."
        )

    @property
    def reason(self) -> str:
        return f"does not exist at {self.base_url}{self._status_part()}"


class EndpointMismatchError(ModelError):
    """The base URL does not lead to an OpenAI-compatible API (it has no scheme, lacks
    its /v1, or is another kind of server): the message says what the endpoint answered."""

    @property
    def reason(self) -> str:
        return f"cannot be reached through {self.base_url}, which is not an OpenAI-compatible API"


class ModelUnavailableError(ModelError):
    """Transient failures outlasted every retry."""

    def __init__(
        self,
        message: str | None = None,
        *,
        model: str,
        base_url: str,
        status: int | None = None,
        detail: str | None = None,
        attempts: int = 1,
    ) -> None:
        self.attempts = attempts
        super().__init__(message, model=model, base_url=base_url, status=status, detail=detail)

    def _tries(self) -> str:
        return "1 attempt" if self.attempts == 1 else f"{self.attempts} attempts"

    def _default_message(self) -> str:
        if self.status:  # it answered, with a failure: it is reachable, the server failed
            return (
                f"The endpoint {self.base_url} failed for model {self.model} after "
                f"{self._tries()}{self._detail_part()}; the server has a problem, try again "
                "later or check its logs."
            )
        return (
            f"The endpoint {self.base_url} did not answer for model {self.model} after "
            f"{self._tries()}{self._detail_part()}; check that it is reachable, or try again later."
        )

    @property
    def reason(self) -> str:
        verb = "failed" if self.status else "did not answer"
        return f"{verb} at {self.base_url} after {self._tries()}{self._detail_part()}"


class ContextLengthError(ModelError):
    def _default_message(self) -> str:
        return (
            f"The conversation is too long for model {self.model} at {self.base_url}"
            f"{self._detail_part()}; run /compress or start a new session."
        )

    @property
    def reason(self) -> str:
        return f"was sent more than its context window holds{self._detail_part()}"


class SummaryError(AgentError):
    """Context compression failed; the conversation was left exactly as it was."""

    def __init__(self, model: str, reason: str) -> None:
        """``reason`` is a clause about the model: "returned an empty summary"."""
        self.model = model
        self.reason = redact(reason)
        super().__init__(
            f"Context compression failed: the summary model {model} {self.reason}; "
            "the conversation is unchanged."
        )


class TurnInterrupted(AgentError):
    """The running model call was interrupted on request; nothing was answered.

    Deliberately not an ``InterruptedError``: that is an ``OSError``, and code that
    catches ``OSError`` around file work must not swallow the user's interrupt.
    """

    def __init__(self, message: str = "The model call was interrupted before it finished.") -> None:
        super().__init__(message)
