"""What a log says about its session beside the conversation: id, project, agent, models, dates,
compactions, and the ids that tell a copied session from a new one. Each agent's module reads its
own (`Agent.describe`, `ctxfit_cli/agents/`), from the records it writes (plain data, no
messages built).

A log without an id is given one by the caller (a digest of its bytes, so that an exact copy is
still recognised), and so is a log whose id names its task rather than the run (`unique` false:
a SWE-agent trajectory names the instance it worked on, which every run of it shares).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePath

from ..agents import BY_NAME
from ..agents.session import SessionMeta, from_epoch_ms, utc  # noqa: F401 (re-exported)
from ..formats.reading import Record


def agent_title(format: str) -> str:
    """The name of the agent that writes logs of `format` (the format's name if none does)."""
    agent = BY_NAME.get(format)
    return agent.title if agent is not None else format


def describe(path: str, format: str, records: Iterable[Record]) -> list[SessionMeta]:
    """The sessions of one input; `id` is "" where the log names none.

    >>> [s] = describe("runs/x.traj", "swe-agent", [Record(1, {"history": []}, b"")])
    >>> s.agent, s.id, s.project
    ('SWE-agent', '', 'runs')
    """
    agent = BY_NAME.get(format)
    sessions = agent.describe(path, records) if agent is not None else []
    if not sessions:
        sessions = [SessionMeta("", agent_title(format))]
    for session in sessions:
        if not session.project and path not in ("-", "<stdin>"):
            session.project = agent.project_folder(PurePath(path)) if agent is not None else PurePath(path).parent.name
    return sessions
