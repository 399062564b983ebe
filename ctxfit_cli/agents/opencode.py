"""OpenCode (sst's terminal agent), as its storage folder keeps it: `~/.local/share/opencode/storage`,
one JSON file per session (`session/<project>/<session>.json`), message and part.

- **Recognised** by a session file (`id`, `projectID`, `time`), or a message or part file
  (`sessionID` with a `role` or a `messageID`: refused with a hint by the reader).
- **Folders**: `$XDG_DATA_HOME/opencode/storage`; otherwise `~/.local/share/opencode/storage`. In
  a folder walk, a storage folder is read as its session files (each reads its messages and
  parts beside it).
- **Read** by `formats/opencode.py`: as Anthropic Messages for Claude models, else OpenAI Chat
  Completions.
- **Session**: its `id`, project `directory`, models: its calls' models, dates `time.created`,
  `time.updated`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .agent import Agent
from .session import SessionMeta, from_epoch_ms, member

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "opencode"
TITLE = "OpenCode"
LOOKS_LIKE = "an OpenCode session (from its storage folder)"
DATA_VARIABLE = "XDG_DATA_HOME"


def recognise(value: object) -> bool:
    """A session file (or a message or part file, refused with a hint by `read`)."""
    if not isinstance(value, dict) or not isinstance(value.get("id"), str) or "role" in value and "content" in value:
        return False
    session = "projectID" in value and isinstance(value.get("time"), dict)
    message = isinstance(value.get("sessionID"), str) and (
        value.get("role") in ("user", "assistant") or isinstance(value.get("messageID"), str)
    )
    return session or message


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    data = Path(environ[DATA_VARIABLE]).expanduser() if environ.get(DATA_VARIABLE) else home / ".local" / "share"
    return [data / "opencode" / "storage"]


def walk(folder: str, dirs: list[str], names: list[str]) -> list[str] | None:
    """A storage folder is read as its session files: each reads its own messages and parts."""
    if "session" in dirs and "message" in dirs and os.path.basename(folder) != "session":
        dirs[:] = ["session"]
        return []
    return None


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    sessions = []
    for record in records:
        value = record.value if isinstance(record.value, dict) else {}
        session = SessionMeta(str(value.get("id") or ""), TITLE, str(value.get("directory") or ""))
        times = member(value, "time")
        for key in ("created", "updated"):
            session.saw(from_epoch_ms(times.get(key)))
        sessions.append(session)
    return sessions


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats.opencode import read

    return read(name, records)


AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like=LOOKS_LIKE,
    recognise=recognise,
    describe=describe,
    read=read,
    folders=folders,
    document=True,
    variables=(DATA_VARIABLE,),
    where="~/.local/share/opencode/storage or $XDG_DATA_HOME/opencode/storage",
    walk=walk,
)
