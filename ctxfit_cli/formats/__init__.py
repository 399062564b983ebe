"""Input formats, auto-detected, all read into one `Transcript` model.

| format        | what it is                                               | sent as    |
|---------------|----------------------------------------------------------|------------|
| `openai`      | Chat Completions messages, one per line                  | openai     |
| `anthropic`   | Messages API messages, one per line (optional system line) | anthropic |
| `claude-code` | Claude Code session log                                  | anthropic  |
| `codex`       | Codex CLI rollout file                                   | openai     |
| `request`     | a whole request object `{"messages": [...], ...}` (one per file or per line), or a JSON list of messages | its own |
| `swe-agent`   | SWE-agent trajectory (`*.traj`)                          | openai     |
| `openhands`   | OpenHands event list, or evaluation output (one instance per line) | openai |
| `cline`       | Cline / Roo Code task history (`api_conversation_history.json`) | anthropic |
| `aider`       | aider chat history (`.aider.chat.history.md`, markdown)  | openai     |
| `opencode`    | OpenCode session (its storage folder, or a session file in it) | anthropic for Claude models, else openai |
| `gemini`      | Gemini contents (`{"role", "parts"}`), one per line; a generateContent request is `request` | gemini |
| `gemini-cli`  | Gemini CLI chat recording (`chats/session-*.json` or `.jsonl`) | gemini |
"""  # noqa: E501 (markdown table rows cannot be wrapped)

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from typing import Any, BinaryIO, cast

import orjson

from ..agents import BY_NAME
from ..core.model import Dialect, Message, Part, PartKind, RecordedCall, Role, Transcript
from ..core.repair import MADE_FROM, repair
from ..errors import BadInput, NoConversation, UsageOnly
from ..input_formats import FORMATS as FORMATS  # re-exported (apart: the CLI's help needs no reader)
from . import (
    aider,
    anthropic,
    claude_code,
    cline,
    codex,
    gemini,
    gemini_cli,
    gemini_reading,
    openai,
    opencode,
    openhands,
    responses,
    responses_request,
    swe_agent,
    usage,
)
from .common import COMPACTED, Where, dumps, json_text
from .detection import LOOKS_LIKE, chat_dialect, described, detect, detect_records, detect_text
from .reading import CutDocument, Record, read_records
from .repair_writers import WRITERS
from .skipped import Skipped

#: Formats read a whole document at a time by their own module (no streaming: a document is one JSON value).
DOCUMENT_READERS = {
    "swe-agent": swe_agent.read,
    "openhands": openhands.read,
    "cline": cline.read,
    "opencode": opencode.read,
    "gemini": gemini_reading.read_contents,
    "gemini-cli": gemini_cli.read,
}
#: Agents' logs that are one JSON document rewritten whole as the agent runs, so that a reader can
#: find one cut short: read up to its last complete element (`reading.CutDocument`). Any other
#: document cut short (a request, a list of messages) is refused: nothing says it is being written.
LIVE_DOCUMENTS = frozenset(("cline", "gemini-cli", "openhands", "swe-agent", "opencode"))
#: Formats that are not JSON, read from the stream by their own module.
TEXT_READERS = {"aider": aider.read}
#: Each request dialect's message parser: (value, raw bytes, where) -> Message.
PARSERS = {
    "openai": openai.parse_message,
    "anthropic": anthropic.parse_message,
    "gemini": gemini.parse_content,
    "responses": responses.parse_message,
}
NO_MESSAGES = "has no messages: nothing from a user, assistant or tool was found"
#: Sees an input's records as they are read, given its format: returns them, each once (a caller
#: that wants something else of the records than their messages reads the input once).
RecordWatch = Callable[[str, Iterator[Record]], Iterator[Record]]


def read_transcripts(
    name: str,
    stream: BinaryIO,
    format: str | None = None,
    watch: RecordWatch | None = None,
    skipped: Skipped | None = None,
) -> Iterator[Transcript]:
    """Every transcript in one input (several only for a file of request objects, one per line).

    Messages are parsed lazily, so a JSON Lines transcript can be streamed without holding it.
    `watch`: sees the records of a JSON input as they are read (not those of a text format).
    `skipped`: counts what an agent's log holds that its reader does not know (record types,
    keys), complete once the messages are read; never fatal (issue #34).

    >>> import io
    >>> lines = b'{"role":"user","content":"hi"}\\n{"role":"assistant","content":"hello"}\\n'
    >>> [t] = read_transcripts("chat.jsonl", io.BytesIO(lines))
    >>> t.format, [m.role.value for m in t.messages]
    ('openai', ['user', 'assistant'])
    """
    format = format or detect_text(name, stream)
    if format in TEXT_READERS:
        yield from described(format, TEXT_READERS[format](name, stream))
        return
    open_end: list[str] = []  # why the input looks still being written (all its transcripts share it)
    records = read_records(name, stream, open_end)
    first = next(records)
    records = chain([first], records)
    if isinstance(first, CutDocument):
        format = format or _cut_format(name, first)
        if not _live_document(format):
            raise first.refused
    if not format:
        format, records = detect_records(name, records)
    skipped = skipped if skipped is not None else Skipped()
    if watch is not None:
        records = watch(format, records)
    if format in BY_NAME:
        yield from _agent_transcripts(name, format, records, open_end, skipped)
        return
    if format in DOCUMENT_READERS:
        ahead = _one_ahead(records)
        # (of the document readers, Gemini CLI's reads records appended as its agent runs: it counts)
        documents = (
            gemini_cli.read(name, ahead, skipped) if format == "gemini-cli" else DOCUMENT_READERS[format](name, ahead)
        )
        for transcript in described(format, documents):
            # (the reader's own notes, an open call at the end, join the input's)
            open_end.extend(why for why in transcript.open_end if why not in open_end)
            transcript.open_end = open_end
            yield transcript
        return
    if format == "request":
        for record in records:
            yield _request(name, record, open_end)
        return
    if format == "claude-code":
        found = False
        for number, (line, segment) in enumerate(_segments(claude_code.to_anthropic(records, name, skipped))):
            # The first conversation is the file's; each later one is named by its first line.
            transcript = Transcript(name, format, "anthropic", (), line=1 if number == 0 else line, open_end=open_end)
            transcript.messages = _require_messages(name, _with_calls(name, segment, transcript))
            yield transcript
            found = True
        if not found:  # only bookkeeping records
            raise NoConversation(name, None, f"{NO_MESSAGES} ({LOOKS_LIKE[format]}, with no conversation yet)")
        return
    if format == "codex":
        recorded = usage.CodexCalls([])  # the token_count events: see formats/usage.py
        found = False
        converted = codex.to_openai(records, name, recorded.on_usage, skipped)
        for number, (line, segment) in enumerate(_segments(converted)):
            transcript = Transcript(name, format, "openai", (), line=1 if number == 0 else line, open_end=open_end)
            transcript.messages = _require_messages(name, _codex_messages(name, segment, transcript, recorded))
            yield transcript
            found = True
        if not found:
            raise NoConversation(name, None, f"{NO_MESSAGES} ({LOOKS_LIKE[format]}, with no conversation yet)")
        return
    dialect: Dialect
    if format in PARSERS:
        dialect = cast(Dialect, format)  # (PARSERS is keyed by dialect)
    else:
        dialect, records = chat_dialect(records, stream)
        format = dialect
    parse = PARSERS[dialect]
    transcript = Transcript(name, format, dialect, (), open_end=open_end)
    messages: Iterator[Message] = (parse(r.value, r.raw, Where(name, r.line)) for r in records)
    if dialect == "anthropic":
        messages = anthropic.one_system_prompt(messages)
    transcript.messages = _require_messages(
        name, repair(messages, WRITERS[dialect], name, transcript.repairs, transcript.open_end)
    )
    yield transcript


def _cut_format(name: str, first: CutDocument) -> str:
    """The format of a document cut short: from what is kept of it, else from its beginning read
    as deep as it goes (its first element may not be whole yet)."""
    try:
        found = detect(name, first)
    except BadInput:
        found = ""
    if _live_document(found):
        return found
    beginning = first.cut.beginning() if first.cut is not None else first.raw
    try:
        return detect(name, Record(first.line, orjson.loads(beginning), beginning))
    except (BadInput, orjson.JSONDecodeError):
        raise first.refused from None


def _live_document(format: str) -> bool:
    """Whether a log of `format` is one document its agent rewrites as it runs."""
    agent = BY_NAME.get(format)
    return format in LIVE_DOCUMENTS or (agent is not None and agent.document)


def _agent_transcripts(
    name: str, format: str, records: Iterator[Record], open_end: list[str], skipped: Skipped
) -> Iterator[Transcript]:
    """The transcripts of an agent's log read by its module (`agents/`)."""
    agent = BY_NAME[format]
    if agent.read is None:  # a file of usage only
        raise UsageOnly(name, format, f"this is {agent.looks_like}: {agent.conversation_elsewhere}")
    if agent.document:
        records = _one_ahead(records)
    found = False
    for transcript in described(format, agent.read(name, records, skipped)):
        # (the reader's own notes, an open call at the end, join the input's)
        open_end.extend(why for why in transcript.open_end if why not in open_end)
        transcript.open_end = open_end
        found = True
        yield transcript
    if not found:  # only bookkeeping records (a session with a title and nothing said yet)
        raise NoConversation(name, None, f"{NO_MESSAGES} ({agent.looks_like}, with no conversation yet)")


def _one_ahead(records: Iterator[Record]) -> Iterator[Record]:
    """The records, each given once the next one was read: when the last whole record of a
    log being written is given, its cut last line has been seen (and named in `open_end`)."""
    previous = next(records, None)
    if previous is None:
        return
    for record in records:
        yield previous
        previous = record
    yield previous


def _codex_messages(
    name: str, segment: Iterator[Record], transcript: Transcript, recorded: usage.CodexCalls
) -> Iterator[Message]:
    """One conversation of a rollout, repaired, its calls (token_count events) filled in, and
    the history a compaction gave it counted (`Transcript.given`)."""
    recorded.calls, recorded.models = transcript.calls, transcript.named_models
    messages = (openai.parse_message(r.value, r.raw, Where(name, r.line)) for r in segment)
    given = transcript.line > 1  # a compacted conversation opens with the history it was given
    repaired = repair(messages, WRITERS["openai"], name, transcript.repairs, transcript.open_end)
    for message in recorded.messages(repaired):
        given = given and message.line == transcript.line  # all of it carries the compaction's line
        transcript.given += given
        yield message


def _with_calls(name: str, built: Iterator[claude_code.Built], transcript: Transcript) -> Iterator[Message]:
    """A Claude Code conversation's messages, repaired, with `transcript.calls` filled as they
    are read: one call per distinct `message.id`, at the index of the message it produced."""
    replies: dict[Message, claude_code.Reply] = {}  # Message hashes by identity

    def parsed() -> Iterator[Message]:
        for record, reply in built:
            message = anthropic.parse_message(record.value, record.raw, Where(name, record.line))
            if reply is not None:
                replies[message] = reply
            yield message

    seen: set[str] = set()
    repaired = repair(parsed(), WRITERS["anthropic"], name, transcript.repairs, transcript.open_end)
    for index, message in enumerate(repaired):
        for reply in _replies_of(message, replies):
            if reply.id not in seen or not reply.id:
                seen.add(reply.id)
                transcript.calls.append(RecordedCall(index, *reply))
        yield message


def _replies_of(message: Message, replies: dict[Message, claude_code.Reply]) -> list[claude_code.Reply]:
    """The calls recorded for a message: its own, or those of the replies it combines."""
    reply = replies.pop(message, None)
    if reply is not None:
        return [reply]
    return [r for part in message.memo.get(MADE_FROM, ()) for r in _replies_of(part, replies)]


def _segments(records: Iterator) -> Iterator[tuple[int, Iterator]]:
    """The conversations of a Claude Code log or a Codex rollout, split where it was compacted.

    Each is (its first line, its records), read lazily from the one stream; a segment that
    holds no records (a log that starts with a boundary, two boundaries in a row) is skipped.
    """
    records = iter(records)
    start = next(records, None)
    while start is not None:
        if start is COMPACTED:
            start = next(records, None)
            continue
        segment = _Segment(start, records)
        yield (start.record.line if isinstance(start, claude_code.Built) else start.line), iter(segment)
        segment.read_rest()  # a consumer that moves on early still gets its records later
        start = segment.end


class _Segment:
    """One conversation's records, read from a shared stream up to the next boundary."""

    def __init__(self, first: Record, records: Iterator[Record]) -> None:
        self.first, self.records = first, records
        self.buffer: deque[Record] = deque()
        self.finished = False
        self.end: object = None  # what ended the segment: None, or COMPACTED

    def _next(self) -> Record | None:
        record = next(self.records, None)
        if record is None or record is COMPACTED:
            self.finished, self.end = True, record
            return None
        return record

    def __iter__(self) -> Iterator[Record]:
        yield self.first
        while True:
            if self.buffer:
                yield self.buffer.popleft()
            elif self.finished or (record := self._next()) is None:
                return
            else:
                yield record

    def read_rest(self) -> None:
        while not self.finished:
            record = self._next()
            if record is not None:
                self.buffer.append(record)


def to_message(value: dict, dialect: Dialect) -> Message:
    """A message dict of an agent loop (OpenAI or Anthropic shape) as a `Message`.

    >>> to_message({"role": "user", "content": "hi"}, "anthropic").role
    <Role.USER: 'user'>
    """
    return PARSERS[dialect](value, dumps(value), Where("<message>", 0))


def _require_messages(name: str, messages: Iterable[Message]) -> Iterator[Message]:
    """Pass messages through; complain at the end if there was no conversation at all."""
    conversation = False
    for message in messages:
        conversation = conversation or message.role not in (Role.SYSTEM, Role.TOOLS)
        yield message
    if not conversation:
        raise NoConversation(name, None, NO_MESSAGES)


def _request(name: str, record: Record, open_end: list[str]) -> Transcript:
    where = Where(name, record.line)
    value = record.value
    if gemini.is_request(value):
        request = value if isinstance(value, dict) else {gemini.CONTENTS: value}
        return gemini_reading.read_request(name, record, _raw_fields(record, request, split=gemini.CONTENTS))
    if isinstance(value, list):
        value = {"messages": value}
    if responses.is_request(value):
        return responses_request.read_request(name, record, _require_messages)
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        raise where.fail('a request must be an object with a "messages" list')
    items = value["messages"]
    dialect = _request_dialect(value)
    parse = PARSERS[dialect]
    raw = _raw_fields(record, value)
    try:
        messages = tuple(
            parse(item, item_raw, where.at("messages").at(i))
            for i, (item, item_raw) in enumerate(zip(items, raw["messages"]))
        )
    except BadInput as error:  # say what the input was read as, not only what is missing
        raise BadInput(
            error.path,
            error.line,
            f'{error.problem} (read as a request object: a "messages" list '
            f"of {dialect} messages; if it is an agent's log, name its "
            "format with --format)",
        ) from None
    system: tuple[Message, ...] = ()
    if "system" in value:
        # Kept as a system *message*, like the first line of an Anthropic JSONL transcript.
        as_message = {"role": "system", "content": value["system"]}
        system = (anthropic.system_message(value["system"], dumps(as_message), where.at("system")),)
    tools = None
    if value.get("tools") is not None:
        tools = Message(Role.TOOLS, (Part(PartKind.TEXT, json_text(value["tools"])),), raw["tools"], record.line)
    extra = tuple((k, raw[k]) for k in value if k not in ("messages", "system", "tools"))
    transcript = Transcript(name, "request", dialect, (), system, tools, extra, record.line, open_end=open_end)
    transcript.messages = list(
        _require_messages(name, repair(messages, WRITERS[dialect], name, transcript.repairs, open_end))
    )
    return transcript


def _raw_fields(record: Record, request: dict, split: str = "messages") -> dict:
    """The bytes of each field of a request and of each of its `messages` (or `split`): ctxfit's own
    serialization of each (`dumps`) when, joined, they are the document's own bytes (the common
    case, and always for a bare list of messages), else the document's exact bytes of each, on
    one line (`spans.one_line`)."""
    dumped: dict[str, Any] = {
        key: [dumps(m) for m in value] if key == split else dumps(value) for key, value in request.items()
    }
    if not isinstance(record.value, dict):
        return dumped
    joined = (
        b"{"
        + b",".join(
            dumps(key) + b":" + (b"[" + b",".join(value) + b"]" if key == split else value)
            for key, value in dumped.items()
        )
        + b"}"
    )
    if joined == record.raw.strip():
        return dumped
    from .spans import SpanError, members, one_line  # (json's scanner: only for such documents)

    try:
        raw: dict[str, Any] = members(record.raw, split=split)
    except (SpanError, UnicodeDecodeError, RecursionError):  # orjson read it: keep its reading
        return dumped
    if not isinstance(raw.get(split), list) or len(raw[split]) != len(request[split]):
        return dumped
    return {key: [one_line(m) for m in value] if key == split else one_line(value) for key, value in raw.items()}


def _request_dialect(request: dict) -> Dialect:
    if "system" in request:
        return "anthropic"
    for message in request["messages"]:
        verdict = openai.sniff(message) if isinstance(message, dict) else None
        if verdict is not None:
            return "openai" if verdict else "anthropic"
    tools = request.get("tools")
    if isinstance(tools, list) and tools and isinstance(tools[0], dict) and "input_schema" in tools[0]:
        return "anthropic"
    return "openai"
