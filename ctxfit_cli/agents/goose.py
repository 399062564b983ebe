"""Goose (block/goose, now aaif-goose/goose): every session in one SQLite database,
`<data>/sessions/sessions.db`, read read-only; before it, one JSON Lines file per session in the
same folder (`<name>.jsonl`), which Goose imports into the database and leaves in place.

Schema (block/goose `crates/goose/src/session/session_manager.rs`, commits
0164300649cf5e4ab327105d9155779ab8bfde4b (schema version 5) and dbec1655c17720cb591291603f1337ed7856afbd
(adds `provider_name`, `model_config_json`, `messages.message_id`)):

    sessions (id, name, description, user_set_name, session_type, working_dir, created_at,
              updated_at, extension_data, total_tokens, input_tokens, output_tokens,
              accumulated_total_tokens, accumulated_input_tokens, accumulated_output_tokens,
              schedule_id, recipe_json, user_recipe_values_json[, provider_name, model_config_json])
    messages (id, [message_id,] session_id, role, content_json, created_timestamp, timestamp,
              tokens, metadata_json)

A message (`crates/goose/src/conversation/message.rs`, commit 05132966065f7dd80b97af7d080a41328d103073)
is `{id, role, created, content, metadata: {userVisible, agentVisible}}`; `content` items are
tagged by `type`: `text {text}`, `image`, `toolRequest {id, toolCall: {status: "success", value:
{name, arguments}} | {status: "error", error}}`, `toolResponse {id, toolResult: {status,
value: {content: [...], isError} | [...]} | {status: "error", error}}`, `thinking`,
`redactedThinking`, `toolConfirmationRequest`, `actionRequired`, `frontendToolRequest`,
`systemNotification`. A message with `agentVisible: false` (history a compaction replaced, a
notification for the user) is not sent to the model. The legacy file's first line is the
session's metadata (`working_dir`, `description`, `message_count`, the token counts), each
further line one message.

Each database is read as one record per session (a session's row with its messages). A
session is sent in its model's dialect (`model_config_json.model_name`, `provider_name`): OpenAI
Chat Completions, or Anthropic Messages for a Claude model; with no model recorded, OpenAI.

**Usage.** Goose records no call's usage, only the session's accumulated input and output
tokens: they are its spend (`Spend.session_total`), priced by its model where the database
names one, else unpriced. Each assistant message is one call, with no recorded prompt size.

**Where.** `$GOOSE_PATH_ROOT/data/sessions` (an absolute path), else
`$XDG_DATA_HOME/goose/sessions`, else `~/.local/share/goose/sessions` (`config/paths.rs`: the
XDG layout). No real Goose session was available: the tests build a database and a legacy file
from the schema above.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

import orjson

from . import sqlite
from .agent import Agent
from .session import SessionMeta, member, utc
from .spend import Spend

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.built import Piece, Turn
    from ..formats.common import Where
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "goose"
FILE_NAME = "sessions.db"
SESSION_COLUMNS = frozenset(
    ("id", "working_dir", "created_at", "accumulated_input_tokens", "accumulated_output_tokens")
)
MESSAGE_COLUMNS = frozenset(("session_id", "role", "content_json", "created_timestamp"))
#: The keys of a message (`Message` of `conversation/message.rs`); others are counted, never fatal.
MESSAGE_KEYS = frozenset(("id", "role", "created", "content", "metadata"))
#: The first line of a legacy session file.
LEGACY_KEYS = frozenset(("working_dir", "description", "message_count"))
#: The content types Goose writes; an item of another is skipped and counted.
CONTENT_TYPES = frozenset(
    (
        "text", "image", "toolRequest", "toolResponse", "toolConfirmationRequest", "actionRequired",
        "frontendToolRequest", "thinking", "redactedThinking", "systemNotification", "conversationCompacted",
        "summarizationRequested",
    )
)  # fmt: skip


def database(path: str) -> Iterator[Record] | None:
    """One record per session of a Goose database; None for any other file."""
    return _records(path) if sqlite.holds(path, {"sessions": SESSION_COLUMNS, "messages": MESSAGE_COLUMNS}) else None


def _records(path: str) -> Iterator[Record]:
    from ..formats.reading import Record

    for number, session in enumerate(sqlite.rows(path, "SELECT * FROM sessions ORDER BY created_at, id"), start=1):
        rows = sqlite.rows(path, "SELECT * FROM messages WHERE session_id = ? ORDER BY id", (session["id"],))
        messages = [
            {
                "id": row.get("message_id"),
                "role": row.get("role"),
                "created": row.get("created_timestamp"),
                "content": _json(row.get("content_json"), []),
                "metadata": _json(row.get("metadata_json"), {}),
            }
            for row in rows
        ]
        value = {**session, "model_config_json": _json(session.get("model_config_json"), {}), "messages": messages}
        yield Record(number, value, orjson.dumps(value, default=str))


def _json(raw: object, empty: object) -> object:
    try:
        return orjson.loads(raw) if isinstance(raw, (str, bytes)) and raw else empty
    except orjson.JSONDecodeError:
        return empty


def recognise(value: object) -> bool:
    """A session as `database` makes it, or the first line of a legacy session file."""
    if not isinstance(value, dict) or "working_dir" not in value:
        return False
    return (SESSION_COLUMNS <= value.keys() and isinstance(value.get("messages"), list)) or (
        LEGACY_KEYS <= value.keys() and "role" not in value
    )


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    root = environ.get("GOOSE_PATH_ROOT", "")
    if root and Path(root).is_absolute():
        return [Path(root) / "data" / "sessions"]
    data = Path(environ["XDG_DATA_HOME"]).expanduser() if environ.get("XDG_DATA_HOME") else home / ".local" / "share"
    return [data / "goose" / "sessions"]


def _sessions(
    path: str, records: Iterable[Record], skipped: Skipped | None = None
) -> Iterator[tuple[dict, int, list[dict]]]:
    """Each session: its row or legacy metadata, the line it starts at, its messages; a record
    that is none of these is counted in `skipped`, as are unknown keys of a legacy message."""
    current: tuple[dict, int, list[dict]] | None = None
    for record in records:
        value = record.value
        if recognise(value) and isinstance(value.get("messages"), list):
            yield value, record.line, [m for m in value["messages"] if isinstance(m, dict)]
        elif recognise(value):  # a legacy file's metadata: its id is the file's name
            current = ({**value, "id": PurePath(path).stem}, record.line, [])
        elif isinstance(value, dict) and "role" in value and current is not None:
            current[2].append(value)
            if skipped is not None:
                skipped.keys(value, MESSAGE_KEYS)
        elif skipped is not None:
            skipped.record(value.get("type") if isinstance(value, dict) else None)
    if current is not None:
        yield current


def _model(session: dict) -> str:
    config = session.get("model_config_json") or session.get("model_config")
    return str(config.get("model_name") or "") if isinstance(config, dict) else ""


def _when(value: object) -> str | None:
    """A time of Goose: SQLite's `YYYY-MM-DD HH:MM:SS` (UTC), ISO 8601, or Unix seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        from .session import from_epoch_ms

        return from_epoch_ms(value * 1000)
    return utc(value.replace(" ", "T") if isinstance(value, str) else value)


#: Goose compacts when the session's last call used more than this share of the model's window
#: (`context_mgmt/mod.rs` at commit 331a842972378d642bb39bd800a8514b25ae3a70,
#: `DEFAULT_COMPACTION_THRESHOLD`; the `GOOSE_AUTO_COMPACT_THRESHOLD` setting changes it).
COMPACTION_SHARE = 0.8


def compaction_at(window: int) -> int | None:
    return int(window * COMPACTION_SHARE)


def _compaction(message: dict) -> bool:
    """A compaction's summary: a user message only the agent sees (`compact_messages`)."""
    metadata = message.get("metadata")
    return (
        message.get("role") == "user"
        and isinstance(metadata, dict)
        and metadata.get("agentVisible") is True
        and metadata.get("userVisible") is False
    )


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    found = []
    for session, line, messages in _sessions(path, records):
        meta = SessionMeta(str(session.get("id") or ""), "Goose", project=str(session.get("working_dir") or ""))
        meta.line = line if isinstance(session.get("messages"), list) else 0
        meta.saw(_when(session.get("created_at")))
        meta.saw(_when(session.get("updated_at")))
        model = _model(session)
        meta.model(model)
        for message in messages:
            meta.saw(_when(message.get("created")))
            meta.compactions += _compaction(message)
            if message.get("role") == "assistant" and message.get("id"):
                meta.message_ids.append(str(message["id"]))
        spend = Spend()
        spend.session_total(model, session.get("accumulated_input_tokens"), session.get("accumulated_output_tokens"))
        meta.spend = {key: counts for key, counts in spend.totals().items() if any(counts)}
        found.append(meta)
    return found


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    """Each session's conversation as its model is sent it: the messages visible to the agent."""
    from ..formats.built import Shape, dialect_of, sends, transcript
    from ..formats.common import Where

    for session, line, messages in _sessions(name, records, skipped):
        dialect = dialect_of(_model(session), str(session.get("provider_name") or ""))
        turns: list[Turn] = []
        for k, message in enumerate(messages):
            metadata = message.get("metadata")
            if isinstance(metadata, dict) and metadata.get("agentVisible") is False:
                continue
            turns += _turns(message, Where(name, line).at("messages").at(k), _model(session), skipped)
        if sends(turns, dialect):
            yield transcript(name, NAME, dialect, turns, [], line, shape=Shape(user_parts=True, result_text=True))


def _turns(message: dict, where: Where, model: str, skipped: Skipped) -> list[Turn]:
    """A message as the turns it is: a reply with its calls, or the results and text of a user's."""
    from ..core.model import RecordedCall
    from ..formats.built import Call, Turn
    from ..formats.common import json_text

    content = message.get("content")
    items = [c for c in content if isinstance(c, dict)] if isinstance(content, list) else []
    texts: list[Piece] = [c["text"] for c in items if c.get("type") == "text" and isinstance(c.get("text"), str)]
    for item in items:
        if str(item.get("type")) not in CONTENT_TYPES:
            skipped.record(f"content/{item.get('type')}")
    if message.get("role") == "assistant":
        calls = []
        for item in items:
            if item.get("type") in ("toolRequest", "frontendToolRequest"):
                value = member(member(item, "toolCall"), "value")
                calls.append(
                    Call(str(item.get("id") or ""), str(value.get("name") or ""), value.get("arguments") or {})
                )
        return [Turn("assistant", where, texts, calls, recorded=RecordedCall(0, "", model))]
    results = []
    for item in items:
        if item.get("type") != "toolResponse":
            continue
        result = member(item, "toolResult")
        outcome = result.get("value")
        content = outcome.get("content") if isinstance(outcome, dict) else outcome
        failed = result.get("status") == "error" or (isinstance(outcome, dict) and bool(outcome.get("isError")))
        if isinstance(content, list):
            text = "\n".join(str(c.get("text")) for c in content if isinstance(c, dict) and c.get("type") == "text")
        else:
            text = str(result.get("error") or "") if failed else json_text(outcome)
        results.append(Turn("result", where, [text], call_id=str(item.get("id") or ""), error=failed))
    return [*results, Turn("user", where, texts)]


AGENT = Agent(
    name=NAME,
    title="Goose",
    looks_like="a Goose session (~/.local/share/goose/sessions/sessions.db, or a legacy <name>.jsonl)",
    recognise=recognise,
    describe=describe,
    read=read,
    folders=folders,
    file_names=(FILE_NAME,),
    compaction_at=compaction_at,
    database=database,
)
