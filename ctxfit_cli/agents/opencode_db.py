"""OpenCode's database: since 1.2 OpenCode keeps its sessions in one SQLite database, not in
`storage/` JSON files (which it migrates into it on first run).

Where (OpenCode's `Database.Path`): `$OPENCODE_DB` (a path, absolute or under the data folder),
else `<data>/opencode.db` (`opencode-<channel>.db` on a channel other than latest/beta), the data
folder being `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`. `opencode db path` prints it.

Its tables (`packages/opencode/src/session/session.sql.ts`), of which three are read:

    session (id, project_id, parent_id, slug, directory, title, version, cost, tokens_*, …,
             time_created, time_updated)
    message (id, session_id, time_created, time_updated, data)     data: the message's JSON, less id/sessionID
    part    (id, message_id, session_id, time_created, time_updated, data)   data: the part's, less its ids

A message's and a part's `data` are what OpenCode's storage and `opencode export` hold, so each
session is read as an export is (`opencode_export.conversation`, OpenCode's own request
builder) and described the same way (its recorded tokens and dollars per assistant message).
One database holds every session: each is numbered by its place (oldest first), which is the
`line` its transcripts carry, so that `sessions` gives each its row.

The database is opened read-only (`mode=ro`): OpenCode may be writing it (it runs in WAL mode).
No real database was at hand: the tests build one with OpenCode's own schema from the real
`opencode export` of `../shared/realworld/`. The newer `session_message` table (OpenCode 2) is
not read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from . import opencode_export
from .agent import Agent
from .session import SessionMeta, from_epoch_ms

if TYPE_CHECKING:
    import sqlite3

    from ..core.model import Transcript
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "opencode-db"
FILE_NAME = "opencode.db"
#: The first bytes of every SQLite database.
SQLITE = b"SQLite format 3\x00"
TABLES = frozenset(("session", "message", "part"))


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    """The database file itself (a default location that is one file)."""
    data = Path(environ["XDG_DATA_HOME"]).expanduser() if environ.get("XDG_DATA_HOME") else home / ".local" / "share"
    data /= "opencode"
    given = environ.get("OPENCODE_DB")
    if given and given != ":memory:":
        return [Path(given).expanduser() if os.path.isabs(given) else data / given]
    return [data / FILE_NAME, *sorted(data.glob("opencode-*.db"))]


def is_database(path: str) -> bool:
    """Whether the file at `path` is an SQLite database holding OpenCode's tables."""
    import sqlite3

    try:
        with open(path, "rb") as file:
            if file.read(len(SQLITE)) != SQLITE:
                return False
        with _connected(path) as db:
            names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except (OSError, sqlite3.Error):
        return False
    return TABLES <= names


class _connected:
    """The database opened read-only, closed after use (sqlite3's own context manager only commits)."""

    def __init__(self, path: str) -> None:
        import sqlite3

        self.db = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
        self.db.row_factory = sqlite3.Row

    def __enter__(self) -> sqlite3.Connection:
        return self.db

    def __exit__(self, *_: object) -> None:
        self.db.close()


def sessions(path: str) -> Iterator[tuple[int, dict, list[dict]]]:
    """Each session of the database, oldest first: (its number from 1, its row, its messages as
    an export holds them: `{info, parts}`, each in OpenCode's order: creation time, then id)."""
    import sqlite3

    from ..errors import BadInput

    if path in ("-", "<stdin>"):
        raise BadInput(path, None, "an OpenCode database is read from its file: give its path, not stdin")
    try:
        with _connected(path) as db:
            rows = [dict(row) for row in db.execute("SELECT * FROM session ORDER BY time_created, id")]
            for number, row in enumerate(rows, 1):
                yield number, row, _messages(db, row["id"])
    except sqlite3.Error as error:
        raise BadInput(path, None, f"cannot read OpenCode's database: {error}") from None


def _messages(db: sqlite3.Connection, session: str) -> list[dict]:
    parts: dict[str, list[dict]] = {}
    query = "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id"
    for row in db.execute(query, (session,)):
        parts.setdefault(row["message_id"], []).append({**_json(row["data"]), "id": row["id"]})
    query = "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id"
    return [
        {"info": {**_json(row["data"]), "id": row["id"], "sessionID": session}, "parts": parts.get(row["id"], [])}
        for row in db.execute(query, (session,))
    ]


def _json(data: object) -> dict:
    try:
        value = orjson.loads(data) if isinstance(data, (str, bytes)) else None
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    described = []
    for number, row, messages in sessions(path):
        session = SessionMeta(str(row["id"]), opencode_export.TITLE, str(row.get("directory") or ""), line=number)
        session.saw(from_epoch_ms(row.get("time_created")))
        session.saw(from_epoch_ms(row.get("time_updated")))
        infos = opencode_export.message_infos(messages)
        session.spend, session.usd = opencode_export.spend_of(infos, session)
        described.append(session)
    return described


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..errors import NoConversation
    from ..formats.common import Where

    found = False
    for number, _, messages in sessions(name):
        for transcript in opencode_export.conversation(name, messages, Where(name, number), skipped):
            transcript.format, transcript.line = NAME, number  # (the session's number: its row in `sessions`)
            found = True
            yield transcript
    if not found:
        raise NoConversation(name, None, "an OpenCode database with no conversation in it")


AGENT = Agent(
    name=NAME,
    title=opencode_export.TITLE,
    looks_like="OpenCode's database (~/.local/share/opencode/opencode.db)",
    recognise=lambda value: False,  # (no record: a database is recognised by its tables)
    describe=describe,
    read=read,
    folders=folders,
    file_names=(FILE_NAME,),
    database=is_database,
)
