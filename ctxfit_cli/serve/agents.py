"""The agents `ctxfit wrap` knows, and how each is pointed at the proxy: each agent's module says
what it reads its API's base URL from today (a variable, or a config option on its command line)
and the provider behind it, which depends on how it signs in (`Agent.wrap`, checked against each
agent's own code on the versions its module names). Wrap also notices when an agent sent nothing
through the proxy (`supervise.nothing_sent`): the agents ship weekly.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..agents import REGISTRY
from ..agents.wrap import Wrap

#: How wrap points an agent (kept as this module's name for it).
Agent = Wrap
#: The agents `ctxfit wrap NAME` runs, by their command.
AGENTS: dict[str, Wrap] = {agent.wrap.command: agent.wrap for agent in REGISTRY if agent.wrap is not None}
#: For `ctxfit wrap --env VAR -- COMMAND`: the provider a well-known variable points at, as the
#: first agent that reads it uses it (`ANTHROPIC_BASE_URL`: Claude Code's and the Anthropic SDKs'
#: form, without OpenCode's `/v1`).
KNOWN_VARIABLES = {agent.variable: agent for agent in reversed(AGENTS.values())}


def agent_named(name: str, environ: Mapping[str, str]) -> Wrap:
    """The agent `ctxfit wrap NAME` runs, as it is set up here (how it signs in)."""
    agent = AGENTS[name]
    signed_in = agent.signed_in(environ) if agent.signed_in is not None else None
    return signed_in or agent


def environment_for(agent: Wrap, environ: Mapping[str, str], folder: Path) -> dict[str, str]:
    """Variables the agent needs besides its base URL to use it (files go in `folder`)."""
    return agent.environment(environ, folder) if agent.environment is not None else {}


def agent_for_variable(variable: str, command: str) -> Wrap:
    """The agent description for `--env VAR -- COMMAND`."""
    known = KNOWN_VARIABLES.get(variable)
    return Wrap(command, variable, known.upstream if known else "", known.suffix if known else "")


def upstream_for(agent: Wrap, given: str | None, environ: Mapping[str, str]) -> str:
    """The provider to forward to: `--upstream`, else where the agent's variable pointed
    already (the user's own gateway, or the one its own config names), else the agent's provider."""
    if given:
        return given
    configured = agent.configured_base(environ) if agent.configured_base is not None else ""
    current = (configured or environ.get(agent.variable, "")).rstrip("/")
    if current:
        return current[: -len(agent.suffix)] if agent.suffix and current.endswith(agent.suffix) else current
    return agent.upstream
