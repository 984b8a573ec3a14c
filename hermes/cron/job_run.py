"""What a job's run is given besides its prompt: the toolsets it is limited to and the
skills it names, loaded into the prompt the way Hermes Agent 0.19's scheduler does."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hermes.tools.skills import INSTRUCTION, invocation, load_skills
from hermes.tools.toolsets import expand, known_toolsets

if TYPE_CHECKING:
    from hermes.agent.toolbox import Toolbox
    from hermes.agent.turn_options import TurnOptions
    from hermes.agent.turn_result import TurnResult
    from hermes.config import Config

log = logging.getLogger(__name__)


class JobAgent(Protocol):
    """What a job's run asks of its agent (``hermes.agent.AIAgent`` has this shape)."""

    config: Config
    hermes_home: Path
    source: str
    user_id: str | None

    @property
    def toolbox(self) -> Toolbox:
        """Every tool the agent can run (its ``registry``)."""

    def tool_names(self) -> list[str]:
        """The tools its turns offer (``agent.toolsets`` applied)."""

    def run(self, user_message: Any, *, options: TurnOptions | None = None) -> TurnResult:
        """One turn to its answer."""

    def interrupt(self) -> None:
        """Stop the running turn (the gateway is closing)."""


# The notes a job's prompt gets about its skills, worded after Hermes Agent's scheduler.
_SKIPPED_NOTICE = (
    "[IMPORTANT: The following skill(s) were listed for this job but could not be found and "
    "were skipped: {listed}. Start your response with a brief notice so the user is aware.]"
)


def job_tools(agent: JobAgent, names: Sequence[str]) -> list[str] | None:
    """The tools the run offers: the agent's own (``agent.toolsets`` applies) narrowed to
    the job's toolsets or tool names; None when the job names none. A name matching no
    tool is logged and offers nothing, so a job never gets more than it asked for."""
    if not names:
        return None
    offered = agent.tool_names()  # first: an MCP server that is up again joins here
    tools = agent.toolbox.registry.tools()
    groups = known_toolsets(agent.config, tools)
    wanted, unknown = expand(names, {tool.name for tool in tools}, groups)
    for name in unknown:
        log.warning("cron: toolset %r of a job names no tool here; it offers nothing", name)
    return [name for name in offered if name in wanted]


def job_prompt(agent: JobAgent, prompt: str, skills: Sequence[str], *, project: Path | None) -> str:
    """The prompt with each named skill's SKILL.md loaded before it; a skill not found
    here is skipped, and the answer is asked to say so. Only the ``project`` folder's
    skills (``.hermes/skills/`` of the job's workdir) are looked for beside the
    operator's: one an earlier run wrote into the job's own folder is not its operator's."""
    if not skills:
        return prompt
    found = load_skills(
        agent.hermes_home, project, agent.config, source=agent.source, user_id=agent.user_id
    )
    parts: list[str] = []
    skipped: list[str] = []
    for name in skills:
        skill = found.find(name)
        if skill is None:
            log.warning("cron: skill %r of a job was not found; the run goes without it", name)
            skipped.append(name)
            continue
        if parts:
            parts.append("")
        parts += invocation(name, skill)
    if skipped:
        listed = ", ".join(skipped)
        parts.insert(0, _SKIPPED_NOTICE.format(listed=listed))
    if prompt:
        parts += ["", INSTRUCTION.format(prompt=prompt)]
    return "\n".join(parts)


def with_context(prompt: str, answers: dict[str, str]) -> str:
    """The prompt after the latest answers of the jobs it reads (``context_from``), each
    under its job's id, as Hermes Agent 0.19's scheduler gives them."""
    if not answers:
        return prompt
    parts = [f"## Output from job '{job_id}'\n\n{answer}" for job_id, answer in answers.items()]
    return "\n\n".join([*parts, prompt])
