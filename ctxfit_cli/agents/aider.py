"""aider (a terminal pair programmer): its chat history, `.aider.chat.history.md` in the
project folder — markdown, not JSON.

- **Recognised** by its first line, `# aider chat started at` (what no other input starts with),
  or by its file name.
- **Folders**: none: aider writes its history where the user works, so give the project folder
  (or its `.aider.chat.history.md`); a folder walk finds it by its name.
- **Read** by `formats/aider.py` into OpenAI Chat Completions, one transcript per run of aider.
- **Session**: `aider@` + the start time of each run (one session each), project the history's
  folder, model `> Model:` (or `Main model:`), date the `# aider chat started at` line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, BinaryIO

from .agent import Agent
from .session import SessionMeta

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.reading import Record

NAME = "aider"
TITLE = "aider"
LOOKS_LIKE = "an aider chat history (.aider.chat.history.md)"
FILE_NAME = ".aider.chat.history.md"
HEADER = "# aider chat started at "


def recognise(value: object) -> bool:
    """No JSON record is aider's: its history is markdown (`recognise_text`)."""
    return False


def recognise_text(name: str, head: bytes) -> bool:
    """The history's first line (past a byte-order mark and blank lines), or its file name."""
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(HEADER.encode()) or name.endswith(FILE_NAME)


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    sessions: list[SessionMeta] = []
    for record in records:
        line = record.value if isinstance(record.value, str) else ""
        if line.startswith(HEADER):
            started = line[len(HEADER) :].strip()
            sessions.append(SessionMeta(f"aider@{started}", TITLE, line=record.line))
            sessions[-1].saw(started.replace(" ", "T"))
        elif sessions and (model := re.match(r"> (?:Main model|Model): (\S+)", line)):
            sessions[-1].model(model[1])
    return sessions


def text_records(name: str, stream: BinaryIO) -> Iterable[Record]:
    from ..formats.aider import records

    return records(name, stream)


def read_text(name: str, stream: BinaryIO) -> Iterator[Transcript]:
    from ..formats.aider import read

    return read(name, stream)


AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like=LOOKS_LIKE,
    recognise=recognise,
    describe=describe,
    file_names=(FILE_NAME,),
    recognise_text=recognise_text,
    read_text=read_text,
    text_records=text_records,
)
