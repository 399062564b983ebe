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
session becomes one record shaped as an export, with its database row beside it (`database`,
called by `formats/database.py` for any SQLite input), and is read as an export is
(`opencode_export.conversation`, OpenCode's own request builder) and described the same way (its
recorded tokens and dollars per assistant message). One database holds every session: each is
numbered by its place (oldest first), which is the `line` its record and transcripts carry, so
that `sessions` gives each its row.

The database is opened read-only (`agents/sqlite.py`): OpenCode may be writing it (WAL mode).
The tests build one with OpenCode's own schema from the real `opencode export` of
`../shared/realworld/`, and read the one the real OpenCode 1.18.33 writes when it runs through
`ctxfit wrap` (`tests/test_real_agents.py`). The newer `session_message` table (OpenCode 2) is
not read.

- **Wrap** (1.18.33): OpenCode's Anthropic provider (the AI SDK's) reads its base URL, which
  ends in `/v1`, from `ANTHROPIC_BASE_URL`. A `baseURL` in the provider's `options` of the
  user's `opencode.json` wins over the variable: then nothing reaches the proxy and wrap says
  so (checked). Wrap points the Anthropic provider only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from . import opencode_export, sqlite
from .agent import Agent
from .session import SessionMeta, from_epoch_ms
from .wrap import Wrap

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "opencode-db"
FILE_NAME = "opencode.db"
TABLES = frozenset(("session", "message", "part"))
#: The key of a record made of a database session: the session's row (an export has no such key).
ROW = "opencodeDatabaseRow"


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    """The database file itself (a default location that is one file)."""
    data = Path(environ["XDG_DATA_HOME"]).expanduser() if environ.get("XDG_DATA_HOME") else home / ".local" / "share"
    data /= "opencode"
    given = environ.get("OPENCODE_DB")
    if given and given != ":memory:":
        return [Path(given).expanduser() if os.path.isabs(given) else data / given]
    return [data / FILE_NAME, *sorted(data.glob("opencode-*.db"))]


def database(path: str) -> Iterator[Record] | None:
    """One record per session of an OpenCode database, oldest first (`line`: its number from 1):
    the session as an export holds it (`info`, `messages` as `{info, parts}` in OpenCode's order:
    creation time, then id) with its row; None for a database without OpenCode's tables."""
    if not TABLES <= set(sqlite.tables(path)):
        return None
    return _records(path)


def _records(path: str) -> Iterator[Record]:
    from ..formats.reading import Record

    rows = list(sqlite.rows(path, "SELECT * FROM session ORDER BY time_created, id"))
    for number, row in enumerate(rows, 1):
        value = {ROW: row, "info": _info(row), "messages": _messages(path, row["id"])}
        yield Record(number, value, b"")


def _info(row: dict) -> dict:
    """A session's row as an export's `info` (its id, folder and times)."""
    return {
        "id": row.get("id"),
        "directory": row.get("directory"),
        "title": row.get("title"),
        "time": {"created": row.get("time_created"), "updated": row.get("time_updated")},
    }


def _messages(path: str, session: str) -> list[dict]:
    parts: dict[str, list[dict]] = {}
    query = "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id"
    for row in sqlite.rows(path, query, (session,)):
        parts.setdefault(row["message_id"], []).append({**_json(row["data"]), "id": row["id"]})
    query = "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id"
    return [
        {"info": {**_json(row["data"]), "id": row["id"], "sessionID": session}, "parts": parts.get(row["id"], [])}
        for row in sqlite.rows(path, query, (session,))
    ]


def _json(data: object) -> dict:
    try:
        value = orjson.loads(data) if isinstance(data, (str, bytes)) else None
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def recognise(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get(ROW), dict) and opencode_export.recognise(value)


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    described = []
    for record in records:
        if not recognise(record.value):
            continue
        row, messages = record.value[ROW], record.value["messages"]
        session = SessionMeta(str(row["id"]), opencode_export.TITLE, str(row.get("directory") or ""), line=record.line)
        session.saw(from_epoch_ms(row.get("time_created")))
        session.saw(from_epoch_ms(row.get("time_updated")))
        infos = opencode_export.message_infos(messages)
        session.spend, session.usd = opencode_export.spend_of(infos, session)
        described.append(session)
    return described


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats.common import Where

    for record in records:
        if not recognise(record.value):
            continue
        where = Where(name, record.line)
        for transcript in opencode_export.conversation(name, record.value["messages"], where, skipped):
            transcript.format, transcript.line = NAME, record.line  # (the session's number: its row in `sessions`)
            yield transcript


WRAP = Wrap("opencode", "ANTHROPIC_BASE_URL", "https://api.anthropic.com", suffix="/v1", key="ANTHROPIC_API_KEY")

AGENT = Agent(
    name=NAME,
    title=opencode_export.TITLE,
    looks_like="OpenCode's database (~/.local/share/opencode/opencode.db)",
    recognise=recognise,
    describe=describe,
    read=read,
    folders=folders,
    file_names=(FILE_NAME,),
    database=database,
    wrap=WRAP,
)
