"""Crush (charmbracelet/crush): a SQLite database per project, `<project>/.crush/crush.db`
(its `data_directory`), read read-only.

Schema (charmbracelet/crush `internal/db/migrations/20250424200609_initial.sql`, commit
b86336ac3268ea303e26781eb67ac946e06d0286; columns added later, `provider`, `is_summary_message`,
`summary_message_id`, are read when present):

    sessions (id, parent_session_id, title, message_count, prompt_tokens, completion_tokens,
              cost, updated_at, created_at, summary_message_id, ...)      times: Unix seconds
    messages (id, session_id, role, parts, model, provider, created_at, updated_at,
              finished_at, is_summary_message, ...)

`parts` is a JSON list of `{type, data}` (`internal/message/content.go`, commit
0373c96addb716c0d993b08c9473ae899aca7998): `text {text}`, `reasoning {thinking, ...}`,
`image_url {url}`, `binary {...}`, `tool_call {id, name, input (JSON text), finished}`,
`tool_result {tool_call_id, name, content, is_error}`, `finish {reason, time}`. An assistant
message is one model call (Crush makes one per step); a `tool` message holds the results of the
calls before it. After a summary, Crush sends the history from the summary message on, the summary
as a user message: that starts a new conversation (one transcript each).

Each database is read as one record per top-level session (a session with its messages), as Crush
lists them; sub-agents' sessions (`parent_session_id`) are not the main conversation.

**Usage.** Crush records no call's usage: a session keeps its dollar `cost` (added up by Crush
from its own price table) and the last call's token counts (`prompt_tokens`,
`completion_tokens`). So no call has a recorded prompt size; the session's recorded dollars are
its cost in `sessions` (as for Cline's UI messages and OpenCode, which price their calls themselves).

No real database was available: the tests build one from the schema above. Crush keeps its
database in the project, so there is no default folder: give the project's `.crush` folder (a
folder walk skips hidden folders) or the `crush.db` itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import PurePath
from typing import TYPE_CHECKING

import orjson

from . import sqlite
from .agent import Agent
from .session import SessionMeta, from_epoch_ms

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.built import Piece, Turn
    from ..formats.common import Where
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "crush"
FILE_NAME = "crush.db"
#: The columns that make a database Crush's (`sessions` and `messages` of its first migration).
SESSION_COLUMNS = frozenset(
    ("id", "parent_session_id", "title", "message_count", "prompt_tokens", "completion_tokens", "cost")
)
MESSAGE_COLUMNS = frozenset(("id", "session_id", "role", "parts", "model", "created_at"))
#: The part types Crush writes; a part of another is skipped and counted.
PART_TYPES = frozenset(
    ("text", "reasoning", "image_url", "binary", "tool_call", "tool_result", "finish", "shell_command")
)


def database(path: str) -> Iterator[Record] | None:
    """One record per top-level session of a Crush database; None for any other file."""
    return _records(path) if sqlite.holds(path, {"sessions": SESSION_COLUMNS, "messages": MESSAGE_COLUMNS}) else None


def _records(path: str) -> Iterator[Record]:
    from ..formats.reading import Record

    sessions = sqlite.rows(path, "SELECT * FROM sessions WHERE parent_session_id IS NULL ORDER BY created_at, id")
    for number, session in enumerate(sessions, start=1):
        messages = list(
            sqlite.rows(
                path, "SELECT * FROM messages WHERE session_id = ? ORDER BY created_at, rowid", (session["id"],)
            )
        )
        for message in messages:
            message["parts"] = _parts(message.get("parts"))
        value = {**session, "messages": messages}
        yield Record(number, value, orjson.dumps(value, default=str))


def _parts(raw: object) -> list:
    try:
        parts = orjson.loads(raw) if isinstance(raw, (str, bytes)) else []
    except orjson.JSONDecodeError:
        return []
    return parts if isinstance(parts, list) else []


def recognise(value: object) -> bool:
    """A session as `database` makes it: Crush's session columns and its messages."""
    return isinstance(value, dict) and SESSION_COLUMNS <= value.keys() and isinstance(value.get("messages"), list)


def _when(value: object) -> str | None:
    """A Crush time (Unix seconds; milliseconds in some versions) as ISO 8601 UTC."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    return from_epoch_ms(value if value > 1e11 else value * 1000)


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    sessions = []
    for record in records:
        value = record.value
        if not recognise(value):
            continue
        session = SessionMeta(str(value["id"]), "Crush", line=record.line, project=_project(path))
        session.saw(_when(value.get("created_at")))
        session.saw(_when(value.get("updated_at")))
        cost = value.get("cost")  # (dollars Crush added up from its own prices: the session's recorded cost)
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0:
            session.usd = float(cost)
        for message in value["messages"]:
            session.saw(_when(message.get("created_at")))
            if message.get("role") == "assistant":
                session.model(message.get("model"))
                session.message_ids.append(str(message.get("id")))
            if message.get("is_summary_message") or message.get("id") == value.get("summary_message_id"):
                session.compactions += 1
        sessions.append(session)
    return sessions


def _project(path: str) -> str:
    """The project a database belongs to: the folder holding its `.crush`."""
    parent = PurePath(path).parent
    return str(parent.parent) if parent.name == ".crush" else str(parent)


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    """Each session's conversation, a new one from each summary on."""
    from ..formats.built import Shape, Turn, dialect_of, sends, transcript
    from ..formats.common import Where

    shape = Shape(user_parts=True, result_text=True)
    for record in records:
        value = record.value
        if not recognise(value):
            skipped.record(value.get("type") if isinstance(value, dict) else None)
            continue
        messages = value["messages"]
        first: dict = next((m for m in messages if m.get("role") == "assistant" and m.get("model")), {})
        dialect = dialect_of(str(first.get("model") or ""), str(first.get("provider") or ""))
        turns: list[Turn] = []
        for k, message in enumerate(messages):
            where = Where(name, record.line).at("messages").at(k)
            if message.get("is_summary_message") or message.get("id") == value.get("summary_message_id"):
                if sends(turns, dialect):
                    yield transcript(name, NAME, dialect, turns, [], record.line, shape=shape)
                turns = [Turn("user", where, _texts(message["parts"]))]  # the summary, sent as the user's
                continue
            turns += _turns(message, where, skipped)
        if sends(turns, dialect):
            yield transcript(name, NAME, dialect, turns, [], record.line, shape=shape)


def _texts(parts: list) -> list[Piece]:
    return [str(_data(p).get("text") or "") for p in parts if isinstance(p, dict) and p.get("type") == "text"]


def _data(part: dict) -> dict:
    data = part.get("data")
    return data if isinstance(data, dict) else {}


def _turns(message: dict, where: Where, skipped: Skipped) -> list[Turn]:
    """A message as the turns it is: a reply with its calls, the calls' results, or a user's text
    (with the shell commands the user ran)."""
    from ..core.model import RecordedCall
    from ..formats.built import Call, Turn

    parts = [p for p in message["parts"] if isinstance(p, dict)]
    for part in parts:
        if str(part.get("type")) not in PART_TYPES:
            skipped.record(f"part/{part.get('type')}")
    role = message.get("role")
    if role == "assistant":
        calls = [
            Call(str(_data(p).get("id") or ""), str(_data(p).get("name") or ""), str(_data(p).get("input") or "{}"))
            for p in parts
            if p.get("type") == "tool_call"
        ]
        return [
            Turn(
                "assistant", where, _texts(parts), calls, recorded=RecordedCall(0, "", str(message.get("model") or ""))
            )
        ]
    if role == "tool":
        return [
            Turn(
                "result",
                where,
                [str(_data(p).get("content") or "")],
                call_id=str(_data(p).get("tool_call_id") or ""),
                error=bool(_data(p).get("is_error")),
            )
            for p in parts
            if p.get("type") == "tool_result"
        ]
    if role == "user":
        shell: list[Piece] = [
            f"$ {_data(p).get('command')}\n{_data(p).get('output')}\n(exit code {_data(p).get('exit_code')})"
            for p in parts
            if p.get("type") == "shell_command"
        ]
        return [Turn("user", where, _texts(parts) + shell)]
    skipped.record(f"message/{role}")
    return []


AGENT = Agent(
    name=NAME,
    title="Crush",
    looks_like="a Crush database (<project>/.crush/crush.db)",
    recognise=recognise,
    describe=describe,
    read=read,
    file_names=(FILE_NAME,),
    database=database,
)
