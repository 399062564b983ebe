"""What a log says about its session beside the conversation: id, project, agent, models, dates,
compactions, and the ids that tell a copied session from a new one. Each agent's module reads its
own (`Agent.describe`, `ctxfit_cli/agents/`), from the records it writes (plain data, no
messages built).

A log without an id is given one by the caller (a digest of its bytes, so that an exact copy is
still recognised), and so is a log whose id names its task rather than the run (`unique` false:
a SWE-agent trajectory names the instance it worked on, which every run of it shares).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import PurePath

from ..agents import BY_NAME
from ..agents.agent import Describing
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
    return described(path, format, agent.describe(path, records) if agent is not None else [])


def described(path: str, format: str, sessions: list[SessionMeta]) -> list[SessionMeta]:
    """The sessions an agent described (`describe`, or `Reading.sessions`), each with a project."""
    agent = BY_NAME.get(format)
    if not sessions:
        sessions = [SessionMeta("", agent_title(format))]
    for session in sessions:
        if not session.project and path not in ("-", "<stdin>"):
            session.project = agent.project_folder(PurePath(path)) if agent is not None else PurePath(path).parent.name
    return sessions


class Reading:
    """Describes an input's sessions as its records are read for its messages (a `RecordWatch`
    of `formats.read_transcripts`), where its agent describes one record at a time
    (`Agent.describing`): the input is then read once. `sessions` is None unless every record
    was seen (read it again with `describe`)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.format = ""
        self._describing: Describing | None = None
        self._whole = False

    def __call__(self, format: str, records: Iterator[Record]) -> Iterator[Record]:
        agent = BY_NAME.get(format)
        if agent is None or agent.describing is None or self._describing is not None:
            return records
        self.format, self._describing = format, agent.describing(self.path)
        return self._fed(self._describing, records)

    def _fed(self, describing: Describing, records: Iterator[Record]) -> Iterator[Record]:
        add = describing.add
        for record in records:
            add(record)
            yield record
        self._whole = True

    def sessions(self) -> list[SessionMeta] | None:
        if not self._whole or self._describing is None:
            return None
        return described(self.path, self.format, self._describing.sessions())
