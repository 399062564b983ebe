"""Where each agent compacts its own conversation, so a live view can say how many calls are left
before it does: each agent's module says its own threshold (`Agent.compaction_at`, looked up in
the agent's own code: the numbers move between versions). Other agents have no threshold here
(None): they compact on their own rules or not at all."""

from __future__ import annotations

from ..agents import BY_NAME


def compaction_at(format: str, window: int) -> int | None:
    """The prompt size at which the agent that wrote a log of `format` compacts it, or None."""
    agent = BY_NAME.get(format)
    return agent.compaction_at(window) if agent is not None else None
