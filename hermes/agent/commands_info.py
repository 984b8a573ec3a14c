"""``/whoami`` and ``/profile``: who the chat acts for, and which hermes home answers.

In the terminal the person typing is the operator, who may run every command. A
messaging chat's gateway answers ``/whoami`` itself (it knows the sender and the
platform's admins: ``hermes.gateway.own_commands``); ``/profile`` there names the
profile but not its folder, which is the operator's business.
"""

from __future__ import annotations

import getpass
import os
from typing import TYPE_CHECKING

from hermes import profiles
from hermes.agent.commands import Reply, command, runs_on_the_gateway

if TYPE_CHECKING:
    from hermes.agent import AIAgent


@command("whoami", "/whoami", "Show who this chat acts for and what they may run.", category="Info")
def _whoami(agent: AIAgent, arg: str) -> Reply:
    return Reply(
        f"You are {_user()} at this terminal, the operator: every command works here (admin)."
    )


@command("profile", "/profile", "Show the hermes profile answering, and its home.", category="Info")
def _profile(agent: AIAgent, arg: str) -> Reply:
    name = profiles.current_name({**os.environ, "HERMES_HOME": str(agent.hermes_home)})
    if agent.source != "cli":  # a messaging chat: the operator's folders are not its business
        return Reply(f"Profile: {name}.")
    return Reply(f"Profile: {name}, home {agent.hermes_home}.")


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return f"uid {os.getuid()}"


# A messaging platform's first message (Telegram's Start button sends /start): the
# gateway answers it with /help's list (hermes.gateway.commands.ALIASES).
command(
    "start", "/start", "A platform's start ping: answered with the commands.", gateway_only=True
)(runs_on_the_gateway)
