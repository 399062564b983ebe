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
"""

from __future__ import annotations

from collections import deque
from itertools import chain
from typing import BinaryIO, Iterable, Iterator

import orjson

from ..errors import BadInput, NoConversation
from ..core.model import Dialect, Message, Part, PartKind, RecordedCall, Role, Transcript
from ..core.repair import repair
from .reading import Record, read_records
from . import anthropic, claude_code, codex, openai, openhands, swe_agent, usage
from . import responses, responses_request
from .common import COMPACTED, Where, dumps, json_text, type_name
from .repair_writers import WRITERS

from ..input_formats import FORMATS  # noqa: E402 (apart: the CLI's help needs no reader)
#: Formats read a whole document at a time by their own module (no streaming: a document is one JSON value).
DOCUMENT_READERS = {"swe-agent": swe_agent.read, "openhands": openhands.read}
#: Each request dialect's message parser: (value, raw bytes, where) -> Message.
PARSERS = {"openai": openai.parse_message, "anthropic": anthropic.parse_message}
PARSERS["responses"] = responses.parse_message
NO_MESSAGES = "has no messages: nothing from a user, assistant or tool was found"
#: How many chat lines to look at for a feature that only one dialect has before assuming OpenAI.
_SNIFF_LIMIT = 1000


def read_transcripts(name: str, stream: BinaryIO, format: str | None = None) -> Iterator[Transcript]:
    """Every transcript in one input (several only for a file of request objects, one per line).

    Messages are parsed lazily, so a JSON Lines transcript can be streamed without holding it.

    >>> import io
    >>> lines = b'{"role":"user","content":"hi"}\\n{"role":"assistant","content":"hello"}\\n'
    >>> [t] = read_transcripts("chat.jsonl", io.BytesIO(lines))
    >>> t.format, [m.role.value for m in t.messages]
    ('openai', ['user', 'assistant'])
    """
    records = read_records(name, stream)
    first = next(records)
    records = chain([first], records)
    format = format or detect(name, first)
    if format in DOCUMENT_READERS:
        yield from DOCUMENT_READERS[format](name, records)
        return
    if format == "request":
        for record in records:
            yield _request(name, record)
        return
    if format == "claude-code":
        found = False
        for number, (line, segment) in enumerate(_segments(claude_code.to_anthropic(records, name))):
            # The first conversation is the file's; each later one is named by its first line.
            transcript = Transcript(name, format, "anthropic", (), line=1 if number == 0 else line)
            transcript.messages = _require_messages(name, _with_calls(name, segment, transcript))
            yield transcript
            found = True
        if not found:  # only bookkeeping records
            raise NoConversation(name, None, NO_MESSAGES)
        return
    if format == "codex":
        recorded = usage.CodexCalls([])  # the token_count events: see formats/usage.py
        found = False
        stream = codex.to_openai(recorded.records(records), name)
        for number, (line, segment) in enumerate(_segments(stream)):
            transcript = Transcript(name, format, "openai", (), line=1 if number == 0 else line)
            transcript.messages = _require_messages(name, _codex_messages(name, segment, transcript, recorded))
            yield transcript
            found = True
        if not found:
            raise NoConversation(name, None, NO_MESSAGES)
        return
    if format in PARSERS:
        dialect = format
    else:
        dialect, records = _chat_dialect(records, stream)
        format = dialect
    parse = PARSERS[dialect]
    transcript = Transcript(name, format, dialect, ())
    messages = (parse(r.value, r.raw, Where(name, r.line)) for r in records)
    if dialect == "anthropic":
        messages = anthropic.one_system_prompt(messages)
    transcript.messages = _require_messages(name, repair(messages, WRITERS[dialect], name, transcript.repairs))
    yield transcript


def _codex_messages(name: str, segment: Iterator[Record], transcript: Transcript,
                    recorded: usage.CodexCalls) -> Iterator[Message]:
    """One conversation of a rollout, repaired, its calls (token_count events) filled in."""
    recorded.calls = transcript.calls  # the events read from here on are this conversation's
    messages = (openai.parse_message(r.value, r.raw, Where(name, r.line)) for r in segment)
    yield from recorded.messages(repair(messages, WRITERS["openai"], name, transcript.repairs))


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
    for index, message in enumerate(repair(parsed(), WRITERS["anthropic"], name, transcript.repairs)):
        reply = replies.pop(message, None)
        if reply is not None and (reply.id not in seen or not reply.id):
            seen.add(reply.id)
            transcript.calls.append(RecordedCall(index, *reply))
        yield message


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
        self.finished, self.end = False, None

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


def detect(name: str, first: Record) -> str:
    """The format of an input, from its first record."""
    value = first.value
    if openhands.sniff(value):
        return "openhands"
    if swe_agent.sniff(value):
        return "swe-agent"
    if isinstance(value, list):
        return "request"
    if not isinstance(value, dict):
        raise BadInput(name, first.line, f"expected a JSON object per line, got {type_name(value)}")
    if isinstance(value.get("messages"), list) or responses.is_request(value):
        return "request"
    if codex.sniff(value):
        return "codex"
    if claude_code.sniff(value):
        return "claude-code"
    if "role" in value:
        return "chat"
    raise BadInput(name, first.line, 'not a transcript: expected a message with "role", a Claude Code '
                   'or Codex record, or a request object with "messages" (see --format)')


def _chat_dialect(records: Iterator[Record], stream: BinaryIO) -> tuple[Dialect, Iterator[Record]]:
    """Whether a chat transcript is OpenAI or Anthropic: the first message only one dialect can
    have decides (`openai.sniff`); a transcript with none is OpenAI (it is valid as either).

    The records read before the verdict are held, but never more than `_SNIFF_LIMIT`: past
    that, a seekable file is scanned ahead for the verdict (lines without a marker of either
    dialect are not even parsed) and read on from where it was; standard input, which cannot
    be read twice, keeps its records until the verdict.
    """
    seen: list[Record] = []
    for record in records:
        seen.append(record)
        verdict = openai.sniff(record.value) if isinstance(record.value, dict) else None
        if verdict is not None:
            return ("openai" if verdict else "anthropic"), chain(seen, records)
        if len(seen) == _SNIFF_LIMIT and _seekable(stream):
            verdict = _scan_ahead(stream)
            return ("openai" if verdict is not False else "anthropic"), chain(seen, records)
    return "openai", iter(seen)


def _markers():
    """Bytes that only a line holding a dialect-specific message can contain (compiled when a
    scan first needs it: importing `regex` costs every command ~8 ms)."""
    global _MARKERS
    if _MARKERS is None:
        import regex
        _MARKERS = regex.compile(rb'"(?:tool_calls|tool|developer|function|image_url|input_audio|refusal|file|'
                                 rb'tool_use|tool_result|thinking|redacted_thinking|document|image|server_tool_use)"')
    return _MARKERS


_MARKERS = None


def _seekable(stream: BinaryIO) -> bool:
    try:
        return stream.seekable()
    except (AttributeError, ValueError):
        return False


def _scan_ahead(stream: BinaryIO) -> bool | None:
    """The verdict of the first decisive line after the current position; the stream is put
    back where it was."""
    start = stream.tell()
    markers = _markers()
    try:
        for line in stream:
            if markers.search(line) is None:
                continue
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # the reader reports it when it gets there
            verdict = openai.sniff(value) if isinstance(value, dict) else None
            if verdict is not None:
                return verdict
        return None
    finally:
        stream.seek(start)


def _require_messages(name: str, messages: Iterable[Message]) -> Iterator[Message]:
    """Pass messages through; complain at the end if there was no conversation at all."""
    conversation = False
    for message in messages:
        conversation = conversation or message.role not in (Role.SYSTEM, Role.TOOLS)
        yield message
    if not conversation:
        raise NoConversation(name, None, NO_MESSAGES)


def _request(name: str, record: Record) -> Transcript:
    where = Where(name, record.line)
    value = record.value
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
    messages = tuple(
        parse(item, item_raw, where.at("messages").at(i)) for i, (item, item_raw) in enumerate(zip(items, raw["messages"]))
    )
    system: tuple[Message, ...] = ()
    if "system" in value:
        # Kept as a system *message*, like the first line of an Anthropic JSONL transcript.
        as_message = {"role": "system", "content": value["system"]}
        system = (anthropic.system_message(value["system"], dumps(as_message), where.at("system")),)
    tools = None
    if value.get("tools") is not None:
        tools = Message(Role.TOOLS, (Part(PartKind.TEXT, json_text(value["tools"])),),
                        raw["tools"], record.line)
    extra = tuple((k, raw[k]) for k in value if k not in ("messages", "system", "tools"))
    transcript = Transcript(name, "request", dialect, (), system, tools, extra, record.line)
    transcript.messages = list(_require_messages(name, repair(messages, WRITERS[dialect], name, transcript.repairs)))
    return transcript


def _raw_fields(record: Record, request: dict) -> dict:
    """The bytes of each field of a request and of each of its `messages`: ctxfit's own
    serialization of each (`dumps`) when, joined, they are the document's own bytes (the common
    case, and always for a bare list of messages), else the document's exact bytes of each, on
    one line (`spans.one_line`)."""
    dumped = {key: [dumps(m) for m in value] if key == "messages" else dumps(value) for key, value in request.items()}
    if not isinstance(record.value, dict):
        return dumped
    joined = b"{" + b",".join(dumps(key) + b":" + (b"[" + b",".join(value) + b"]" if key == "messages" else value)
                              for key, value in dumped.items()) + b"}"
    if joined == record.raw.strip():
        return dumped
    from .spans import SpanError, members, one_line  # (json's scanner: only for such documents)
    try:
        raw = members(record.raw, split="messages")
    except (SpanError, UnicodeDecodeError, RecursionError):  # orjson read it: keep its reading
        return dumped
    if not isinstance(raw.get("messages"), list) or len(raw["messages"]) != len(request["messages"]):
        return dumped
    return {key: [one_line(m) for m in value] if key == "messages" else one_line(value)
            for key, value in raw.items()}


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
