"""What ctxfit knows about one agent, as one value (DESIGN §14): each agent's module in this
package builds one `Agent`, and the registry (`__init__.py`) lists them.

An agent's module holds everything about it: how its files are recognised (a test of one
record, tried on each of an input's first records), where it keeps them (default folders, from
the environment variables it honours), how its records become a `Transcript` (or, for a file
that records usage only, where its conversation is), what a session is (`describe`), when it
compacts on its own, and whether its log is one document rewritten as it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.reading import Record
    from ..formats.skipped import Skipped
    from .session import SessionMeta

#: (input's name, its records, what to count as skipped) -> its transcripts.
Reader = Callable[[str, Iterator["Record"], "Skipped"], Iterator["Transcript"]]
#: (input's path, its records) -> its sessions (`id` "" where the log names none).
Describer = Callable[[str, Iterable["Record"]], list["SessionMeta"]]
#: (the environment, the home folder) -> the folders the agent keeps its logs in, existing or not.
Folders = Callable[[Mapping[str, str], Path], list[Path]]


def no_folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    """An agent that keeps its logs where the user works (aider): no default folder."""
    return []


def never_compacts(window: int) -> int | None:
    """An agent with no automatic compaction ctxfit knows of."""
    return None


@dataclass(frozen=True)
class Agent:
    #: The `--format` name: lower case, dashes ("copilot-cli").
    name: str
    #: The agent's name as users write it ("GitHub Copilot CLI").
    title: str
    #: What its log looks like, for messages ("a GitHub Copilot CLI session (~/.copilot/…)").
    looks_like: str
    #: Whether one record (a parsed JSON value: a line of a JSONL file, or a whole document) is
    #: this agent's. Tried on each of an input's first records, before the plain shapes (a chat
    #: message, a request): a test must not take a plain message or request for its own.
    recognise: Callable[[object], bool]
    #: The sessions of one input (`SessionMeta`, with its recorded spend).
    describe: Describer
    #: Its transcripts; None for a file that records usage only (`conversation_elsewhere` says
    #: where the conversation is).
    read: Reader | None = None
    conversation_elsewhere: str = ""
    folders: Folders = no_folders
    #: File names found by name in a folder walk, beside those ending .jsonl/.json/.traj.
    file_names: tuple[str, ...] = ()
    #: The prompt size at which the agent compacts on its own, for a model window.
    compaction_at: Callable[[int], int | None] = never_compacts
    #: Whether its log is one JSON document rewritten whole as the agent runs (read up to its
    #: last complete element when cut short), rather than records appended.
    document: bool = False
    #: For an agent that keeps its sessions in a SQLite database (Goose's `sessions.db`, Crush's
    #: `crush.db`): the records of the database at a path, one JSON value per session, which
    #: `recognise`, `read` and `describe` then take as they take a JSON log's records; None when
    #: the file is not this agent's (by its name and its tables). Opened read-only
    #: (`formats/database.py` calls it, for any input whose first bytes are SQLite's).
    database: Callable[[str], Iterator[Record] | None] | None = None
