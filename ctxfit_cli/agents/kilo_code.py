"""Kilo Code (kilocode.kilo-code), Cline's fork: its tasks are Cline's, in its own folder of VS
Code's global storage, `globalStorage/kilocode.kilo-code/tasks/<id>/`, with the same two files
(`api_conversation_history.json`, read as Cline's; `ui_messages.json`, `cline_ui.py`).

So this module adds only where Kilo Code keeps them (for `sessions` and `watch` with no path):
its files are recognised and read as Cline's, and a session in its folder is named Kilo Code's
(`cline_ui.FORKS`). `--format kilo-code` reads a history as Cline's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .agent import Agent
from .session import SessionMeta

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "kilo-code"
TITLE = "Kilo Code"
EXTENSION = "kilocode.kilo-code"
#: VS Code and the forks whose global storage may hold Kilo Code's tasks (as for Cline's).
VSCODE_APPS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    return [
        root / app / "User" / "globalStorage" / EXTENSION / "tasks"
        for root in (home / ".config", home / "Library" / "Application Support")
        for app in VSCODE_APPS
    ]


def never(value: object) -> bool:
    """Kilo Code's files are Cline's: detection takes them as Cline's (named by their folder)."""
    return False


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats import cline

    for transcript in cline.read(name, records):
        transcript.format = NAME
        yield transcript


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    from . import BY_NAME

    cline = BY_NAME.get("cline")
    sessions = cline.describe(path, records) if cline is not None else [SessionMeta("", TITLE)]
    for session in sessions:
        session.agent = TITLE
    return sessions


AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like=f"a Kilo Code task history (globalStorage/{EXTENSION}/tasks/<id>/api_conversation_history.json)",
    recognise=never,
    describe=describe,
    read=read,
    folders=folders,
    document=True,
)
