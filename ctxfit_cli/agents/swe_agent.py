"""SWE-agent (Princeton's issue-solving agent): its trajectories, `*.traj`, one JSON document per run.

- **Recognised** by an object whose `history` is a list of messages (objects with `role`)
  carrying SWE-agent's own marks (`trajectory` or `info` beside it, `agent` or `message_type` on
  the message).
- **Folders**: none by default (runs are written where they are configured to); a folder walk
  reads files ending `.traj`.
- **Read** by `formats/swe_agent.py` into OpenAI Chat Completions; a trajectory is one document
  rewritten as it runs (read up to its last complete step).
- **Session**: `replay_config.problem_statement.id` — the instance worked on, which every run of
  it shares (so a digest of the file is added); project: the repository a SWE-bench id names
  (`owner__repo-number`); model `replay_config.agent.model.name`; no dates in the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import orjson

from .agent import Agent
from .session import SessionMeta

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "swe-agent"
TITLE = "SWE-agent"
LOOKS_LIKE = "a SWE-agent trajectory (*.traj)"


def recognise(value: object) -> bool:
    """A trajectory: an object whose `history` is a list of messages (objects with `role`)."""
    if not isinstance(value, dict) or not isinstance(value.get("history"), list):
        return False
    history = value["history"]
    return (
        bool(history)
        and isinstance(history[0], dict)
        and "role" in history[0]
        and ("trajectory" in value or "info" in value or "agent" in history[0] or "message_type" in history[0])
    )


def model_name(trajectory: dict) -> str:
    """The model a trajectory names (`replay_config.agent.model.name`), or ""."""
    config = trajectory.get("replay_config")
    if isinstance(config, str):
        try:
            config = orjson.loads(config)
        except orjson.JSONDecodeError:
            return ""
    agent = config.get("agent") if isinstance(config, dict) else None
    model = agent.get("model") if isinstance(agent, dict) else None
    name = model.get("name") if isinstance(model, dict) else None
    return name if isinstance(name, str) else ""


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    sessions = []
    for record in records:
        value = record.value if isinstance(record.value, dict) else {}
        session = SessionMeta("", TITLE, line=0)
        config = value.get("replay_config")
        try:
            config = orjson.loads(config) if isinstance(config, str) else config
        except orjson.JSONDecodeError:
            config = None
        problem = config.get("problem_statement") if isinstance(config, dict) else None
        if isinstance(problem, dict) and problem.get("id"):
            session.id = str(problem["id"])
        session.unique = False  # every run of this instance has the same id
        session.model(model_name(value))
        # SWE-bench instance ids are owner__repo-number.
        repo = re.fullmatch(r"(.+?)__(.+)-\d+", session.id)
        session.project = f"{repo[1]}/{repo[2]}" if repo else ""
        sessions.append(session)
    return sessions


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats.swe_agent import read

    return read(name, records)


AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like=LOOKS_LIKE,
    recognise=recognise,
    describe=describe,
    read=read,
    document=True,
    names_model=False,
    short="swe-agent",
)
