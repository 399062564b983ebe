"""OpenHands (an open agent platform): an event list (JSON array), or evaluation output (JSON
Lines, one instance per line with its `history` of events, `metadata` and `metrics`).

- **Recognised** by an event (`source` and an `action` or `observation`) first in a list, or an
  object whose `history` is such a list (or that names its `instance_id`).
- **Folders**: none by default (it keeps its events where it is configured to).
- **Read** by `formats/openhands.py` into OpenAI Chat Completions, one transcript per instance;
  an event list is one document rewritten as it runs (read up to its last complete event).
- **Session**: `instance_id` (evaluation output, + its run's `start_time`), project
  `instance.repo` (or the dataset), models `llm_config.model` and responses' `model`, dates:
  events' `timestamp`; compactions: `condensation` actions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from .agent import Agent
from .session import SessionMeta, member

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "openhands"
TITLE = "OpenHands"
LOOKS_LIKE = "an OpenHands event list or evaluation output"


def is_event(value: object) -> bool:
    return isinstance(value, dict) and "source" in value and ("action" in value or "observation" in value)


def recognise(value: object) -> bool:
    """An event list, or one instance of evaluation output (`history` of events)."""
    if isinstance(value, list):
        return bool(value) and is_event(value[0])
    if isinstance(value, dict) and isinstance(value.get("history"), list):
        history = value["history"]
        return "instance_id" in value or (bool(history) and is_event(history[0]))
    return False


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    sessions = []
    for record in records:
        value = record.value
        events = value if isinstance(value, list) else value.get("history") if isinstance(value, dict) else None
        if not isinstance(events, list):
            continue
        session = SessionMeta("", TITLE, line=record.line)
        if isinstance(value, dict):
            metadata = member(value, "metadata")
            config = member(metadata, "llm_config")
            instance = member(value, "instance")
            run = metadata.get("start_time")
            session.id = str(value.get("instance_id") or "") + (f"@{run}" if run and value.get("instance_id") else "")
            session.project = str(instance.get("repo") or metadata.get("dataset") or "")
            session.model(config.get("model"))
        for event in events:
            if not isinstance(event, dict):
                continue
            session.saw(event.get("timestamp"))
            if event.get("action") == "condensation":
                session.compactions += 1
            response = member(event.get("tool_call_metadata"), "model_response")
            if response and "action" in event:
                session.model(response.get("model"))
                reply = response.get("id")
                if isinstance(reply, str) and reply not in session.message_ids[-1:]:
                    session.message_ids.append(reply)
        sessions.append(session)
    return sessions


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats.openhands import read

    return read(name, records)


AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like=LOOKS_LIKE,
    recognise=recognise,
    describe=describe,
    read=read,
    document=True,
    short="openhands",
)
