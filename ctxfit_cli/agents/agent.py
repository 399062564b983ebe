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
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, BinaryIO, Protocol

from .wrap import Wrap

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.reading import Record
    from ..formats.skipped import Skipped
    from .session import SessionMeta
    from .spend import Spend

#: (input's name, its records, what to count as skipped) -> its transcripts.
Reader = Callable[[str, Iterator["Record"], "Skipped"], Iterator["Transcript"]]
#: (input's path, its records) -> its sessions (`id` "" where the log names none).
Describer = Callable[[str, Iterable["Record"]], list["SessionMeta"]]


class Describing(Protocol):
    """Sessions described one record at a time: `add` each record, then `sessions()` (what a
    `Describer` gives of the same records)."""

    def add(self, record: Record) -> None: ...

    def sessions(self) -> list[SessionMeta]: ...


#: (the environment, the home folder) -> the folders the agent keeps its logs in, existing or not.
Folders = Callable[[Mapping[str, str], Path], list[Path]]
#: (input's name, its stream) -> its transcripts, for a log that is not JSON.
TextReader = Callable[[str, BinaryIO], Iterator["Transcript"]]
#: (a folder, its sub-folders, its file names) -> the files of it a folder walk reads, when the
#: folder is one of the agent's own (the sub-folders may be changed in place: those walked on);
#: None for any other folder.
Walker = Callable[[str, list[str], list[str]], "list[str] | None"]


def no_folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    """An agent that keeps its logs where the user works (aider): no default folder."""
    return []


def never_compacts(window: int) -> int | None:
    """An agent with no automatic compaction ctxfit knows of."""
    return None


def its_folder(path: PurePath) -> str:
    """A log's project, when the log names none: the folder it is in."""
    return path.parent.name


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
    #: `describe` one record at a time, as the records are read for the messages (the input's
    #: path -> a `Describing`): `sessions` then reads such a log once. None: read again for it.
    describing: Callable[[str], Describing] | None = None
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
    #: Whether a record is this agent's given also the input's path, for a log its records
    #: cannot tell yet (a Cline history cut before its first message is whole): tried after
    #: `recognise`.
    recognise_file: Callable[[str, object], bool] | None = None
    #: For a log that is not JSON (aider's markdown): whether an input is its log, from its
    #: name and its first bytes; and its reader, of the stream.
    recognise_text: Callable[[str, bytes], bool] | None = None
    read_text: TextReader | None = None
    #: For a log that is not JSON: its lines as records (what `describe` reads).
    text_records: Callable[[str, BinaryIO], Iterable[Record]] | None = None
    #: The environment variables the agent honours for where it keeps its logs.
    variables: tuple[str, ...] = ()
    #: Where it keeps its logs, as people write it (`--help`, the README): "~/.codex/sessions
    #: or $CODEX_HOME/sessions"; "" where it has no default folder.
    where: str = ""
    #: What a folder walk reads of one of the agent's own folders (a Cline task: its history only).
    walk: Walker | None = None
    #: (a folder, a file name in it) -> whether a folder walk leaves the file out, though it is
    #: named as logs are (Continue's index of its sessions).
    leaves_out: Callable[[str, str], bool] | None = None
    #: The project of a log that names none, from its path (default: the folder it is in).
    project_folder: Callable[[PurePath], str] = its_folder
    #: For a log that records what each call was billed: adds one record's to a `Spend`
    #: (`estimate` of one log adds it up as it reads the messages).
    billed: Callable[[Spend, object], None] | None = None
    #: Whether its reader gives one transcript per compaction, each read lazily with its recorded
    #: calls filled in as it goes: `estimate` streams it, a big log is measured in pieces
    #: (`formats/measures.py`), and `fit` takes the conversation since the last compaction.
    streamed: bool = False
    #: Whether its logs can name their model and record usage: read whole before the counter is
    #: chosen, so that it follows the model they name (`core/choice.py`).
    names_model: bool = True
    #: Its name in `sessions`' AGENT column ("": its title).
    short: str = ""
    #: How `ctxfit wrap` points it at a proxy (None: wrap does not run it).
    wrap: Wrap | None = None
    #: For an agent that keeps its sessions in a SQLite database (Goose's `sessions.db`, Crush's
    #: `crush.db`): the records of the database at a path, one JSON value per session, which
    #: `recognise`, `read` and `describe` then take as they take a JSON log's records; None when
    #: the file is not this agent's (by its name and its tables). Opened read-only
    #: (`formats/database.py` calls it, for any input whose first bytes are SQLite's).
    database: Callable[[str], Iterator[Record] | None] | None = None
