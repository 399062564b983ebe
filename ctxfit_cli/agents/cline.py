"""Cline (a VS Code extension and a CLI) and Roo Code (its fork, the same task histories):
`tasks/<id>/api_conversation_history.json`.

- **Recognised** by a list of messages (objects with `role`) carrying the agent's own keys
  (`AGENT_KEYS`); or any list in a file of its name (a history cut short before its first message
  is whole has none yet).
- **Folders**: `tasks` of `$CLINE_DATA_DIR`, else of `$CLINE_DIR/data`, else of `~/.cline/data`
  (the CLI); and `globalStorage/<extension>/tasks` of VS Code and its forks (Code, Code -
  Insiders, VSCodium, Cursor, Windsurf; the user folder is `~/.config/<app>/User` on Linux and
  `~/Library/Application Support/<app>/User` on macOS), Cline's extension
  `saoudrizwan.claude-dev` and Roo Code's `rooveterinaryinc.roo-cline`. In a folder walk, a task
  folder is read as its history (not its other files: the agent's bookkeeping).
- **Read** by `formats/cline.py` into Anthropic messages; the file is one document rewritten whole
  as the agent runs (read up to its last complete message when cut short).
- **Session**: the task folder's name (the agent's task id), project the `# Current Working
  Directory` of the first prompt, models `modelInfo.modelId`, dates `ts`; a history under Roo
  Code's or Kilo Code's folder is theirs (`FORKS`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from .agent import Agent
from .session import SessionMeta, from_epoch_ms

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "cline"
TITLE = "Cline"
LOOKS_LIKE = "a Cline / Roo Code task history (api_conversation_history.json)"
#: The file Cline and Roo Code keep a task's history in.
FILE_NAME = "api_conversation_history.json"
#: Keys of a stored message that mark it as Cline's or Roo Code's (never sent).
AGENT_KEYS = ("ts", "modelInfo", "metrics", "isSummary", "condenseId", "condenseParent")
#: The file beside it that records the task's usage (`cline_ui.py`).
UI_FILE_NAME = "ui_messages.json"
#: Roo Code's and Kilo Code's folders in VS Code's global storage: their task histories are
#: Cline's format (Kilo Code's module adds its folders).
ROO_CODE_FOLDER = "rooveterinaryinc.roo-cline"
KILO_CODE_FOLDER = "kilocode.kilo-code"
#: Which agent wrote a task folder, by the VS Code extension folder it is in (Cline's otherwise).
FORKS = {ROO_CODE_FOLDER: "Roo Code", KILO_CODE_FOLDER: "Kilo Code"}
#: The VS Code extensions whose global storage holds such tasks here: Cline's, Roo Code's.
EXTENSIONS = ("saoudrizwan.claude-dev", ROO_CODE_FOLDER)
#: VS Code and the forks whose global storage may hold Cline's (or its forks') tasks.
VSCODE_APPS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")


def recognise(value: object) -> bool:
    """A list of messages (objects with `role`) carrying Cline's own keys."""
    if not isinstance(value, list) or not value or not isinstance(value[0], dict) or "role" not in value[0]:
        return False
    return any(isinstance(m, dict) and any(k in m for k in AGENT_KEYS) for m in value[:3])


def recognise_file(name: str, value: object) -> bool:
    """Any list in a file of Cline's name."""
    return isinstance(value, list) and name.replace("\\", "/").rsplit("/", 1)[-1] == FILE_NAME


#: The variables the Cline CLI's data folder follows (`cli_data`).
CLI_VARIABLES = ("CLINE_DATA_DIR", "CLINE_DIR")


def cli_data(environ: Mapping[str, str], home: Path) -> Path:
    """The Cline CLI's data folder: `$CLINE_DATA_DIR`, else `$CLINE_DIR/data`, else `~/.cline/data`."""
    if environ.get("CLINE_DATA_DIR"):
        return Path(environ["CLINE_DATA_DIR"]).expanduser()
    return (Path(environ["CLINE_DIR"]).expanduser() if environ.get("CLINE_DIR") else home / ".cline") / "data"


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    cli = cli_data(environ, home)
    return [cli / "tasks"] + [tasks for extension in EXTENSIONS for tasks in vscode_tasks(home, extension)]


def vscode_tasks(home: Path, extension: str) -> list[Path]:
    """The task folders of a VS Code extension, in the global storage of VS Code and its forks."""
    return [
        root / app / "User" / "globalStorage" / extension / "tasks"
        for root in (home / ".config", home / "Library" / "Application Support")
        for app in VSCODE_APPS
    ]


def agent_of(path: str) -> str:
    """Cline, or the fork whose extension folder holds the task."""
    parts = PurePath(path).parts
    return next((title for folder, title in FORKS.items() if folder in parts), TITLE)


def walk(folder: str, dirs: list[str], names: list[str]) -> list[str] | None:
    """A task folder is read as its history and its usage (`cline_ui.py`: one session with the
    history's, `fleet/combine.py`): its other files are the agent's bookkeeping."""
    if FILE_NAME not in names and UI_FILE_NAME not in names:
        return None
    found = (os.path.join(folder, name) for name in (FILE_NAME, UI_FILE_NAME) if name in names)
    return [path for path in found if os.path.isfile(path)]


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    session = SessionMeta("", TITLE)
    for record in records:
        history = record.value if isinstance(record.value, list) else []
        for message in history:
            if not isinstance(message, dict):
                continue
            session.saw(from_epoch_ms(message.get("ts")))
            info = message.get("modelInfo")
            if isinstance(info, dict):
                session.model(info.get("modelId"))
            if not session.project and message.get("role") == "user":
                session.project = _working_directory(message.get("content"))
    if path not in ("-", "<stdin>"):  # the task id is the name of the folder holding the history
        session.id = session.id or PurePath(path).parent.name
        session.agent = agent_of(path)  # Roo Code's and Kilo Code's folders: theirs
    return [session]


def _working_directory(content: object) -> str:
    """The folder Cline names in the environment details of a prompt."""
    blocks = content if isinstance(content, list) else [{"text": content}] if isinstance(content, str) else []
    for block in blocks:
        text = block.get("text") if isinstance(block, dict) else None
        found = re.search(r"# Current Working Directory \((.+?)\)", text) if isinstance(text, str) else None
        if found:
            return found[1]
    return ""


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats.cline import read

    return read(name, records)


AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like=LOOKS_LIKE,
    recognise=recognise,
    recognise_file=recognise_file,
    describe=describe,
    read=read,
    folders=folders,
    document=True,
    variables=CLI_VARIABLES,
    where="Cline's and Roo Code's tasks (~/.cline/data/tasks, VS Code's globalStorage)",
    walk=walk,
)
