"""The gateway's errors, each a sentence a person can act on.

    GatewayError                 (a HermesError)
    ├── PlatformStartError       a platform could not start (.platform)
    │   └── MissingExtraError    its library is not installed (.extra)
    ├── NotConnected             a reply went to a platform that is not connected
    ├── GatewayClosed            the gateway is shutting down; the input was kept
    └── NotYourConversation      an API caller named a conversation that is not its own

The CLI turns any of them into one line on stderr and a non-zero exit.
"""

from __future__ import annotations

from hermes.errors import HermesError


class GatewayError(HermesError):
    """Something about the messaging gateway, explained in one sentence."""


class PlatformStartError(GatewayError):
    """A platform adapter could not start: bad token, port in use, bad settings."""

    def __init__(self, platform: str, reason: str) -> None:
        self.platform = platform
        self.reason = reason
        super().__init__(f"{platform}: {reason}")


class MissingExtraError(PlatformStartError):
    """The platform's library is not installed; the message says which extra to install."""

    def __init__(self, platform: str, extra: str, module: str) -> None:
        self.extra = extra
        self.module = module
        super().__init__(
            platform,
            f"the '{module}' library is not installed; "
            f"install it with: pip install 'hermes-agent-runtime[{extra}]'",
        )


class NotConnected(GatewayError):
    """A chat adapter was asked to send before it started or after it closed."""

    def __init__(self, platform: str) -> None:
        self.platform = platform
        super().__init__(
            f"{platform} is not connected (not started yet, or closed): nothing was sent."
        )


class GatewayClosed(GatewayError):
    """The gateway is shutting down; queued input is kept and answered after a restart."""

    def __init__(self) -> None:
        super().__init__(
            "The gateway is shutting down; your message is saved and will be answered "
            "when it is back."
        )


class NotYourConversation(GatewayError):
    """An API caller named a conversation that belongs to someone else: a chat
    platform's user, or (for an API principal) anyone but itself."""

    def __init__(self, session_id: str, source: str, principal: str | None = None) -> None:
        self.session_id = session_id
        self.source = source
        if principal is not None:
            # Said as for an id nobody holds: whose it is stays unsaid.
            super().__init__(
                f"No conversation of yours holds session '{session_id}'. Leave out "
                "X-Hermes-Session-Id to start a new one."
            )
            return
        super().__init__(
            f"Session '{session_id}' is a {source} conversation, which belongs to its "
            f"{source} user: the API can continue only its own conversations. Leave out "
            "X-Hermes-Session-Id to start a new one."
        )
