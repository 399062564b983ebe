"""How `ctxfit wrap` points an agent at the proxy, as plain data: what the agent reads its API's
base URL from (a variable, or a config option on its command line) and the provider behind it.
Each agent's module says its own (`Agent.wrap`); `serve/agents.py` runs it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Wrap:
    #: The command that runs the agent (`ctxfit wrap COMMAND`).
    command: str
    #: The variable the agent reads its API's base URL from (set for versions that still do).
    variable: str
    #: The provider it talks to when the variable is not set.
    upstream: str
    #: What follows the proxy's address in the variable (the OpenAI SDKs expect `/v1`).
    suffix: str = ""
    #: The variable of the API key the agent sends the provider, when it should be set.
    key: str = ""
    #: Arguments put before the agent's own: `{url}` is the base URL given to it.
    options: tuple[str, ...] = ()
    #: How the agent is set up here, when that changes how it is pointed (how it signs in): the
    #: environment -> another `Wrap`, or None for this one.
    signed_in: Callable[[Mapping[str, str]], Wrap | None] | None = None
    #: Where a user's own gateway is configured outside the variable: the environment -> the
    #: base URL it names, or "".
    configured_base: Callable[[Mapping[str, str]], str] | None = None
    #: Variables the agent needs besides its base URL to use it: (the environment, a private
    #: folder for files it needs) -> the variables.
    environment: Callable[[Mapping[str, str], Path], dict[str, str]] | None = None
    #: What wrap says when it runs the agent so (`{target}`: the provider it forwards to).
    says: str = ""

    def arguments(self, base_url: str) -> list[str]:
        """The options that point this agent at `base_url` on its command line."""
        return [option.replace("{url}", base_url) for option in self.options]

    def pointed_by(self) -> str:
        """How wrap pointed it, as the error line tells a user whose agent ignored it."""
        if not self.options:
            return self.variable
        given = " ".join(o for o in self.options if "{url}" in o).split("=", 1)[0]
        return f"{given} (-c) or {self.variable}"
