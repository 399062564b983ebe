"""Input formats, auto-detected, all read into one `Transcript` model: the plain formats here, and
each agent's log by its module in `ctxfit_cli/agents/` (the registry says which it is and how it
is read).

| format      | what it is                                                   | sent as   |
|-------------|--------------------------------------------------------------|-----------|
| `openai`    | Chat Completions messages, one per line                      | openai    |
| `anthropic` | Messages API messages, one per line (optional system line)   | anthropic |
| `request`   | a whole request object `{"messages": [...], ...}` (one per file or per line), or a JSON list of messages | its own |
| `gemini`    | Gemini contents (`{"role", "parts"}`), one per line; a generateContent request is `request` | gemini |
"""  # noqa: E501 (markdown table rows cannot be wrapped)

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import chain
from typing import Any, BinaryIO, cast

import orjson

from ..agents import BY_NAME
from ..core.model import Dialect, Message, Part, PartKind, Role, Transcript
from ..core.repair import repair
from ..errors import BadInput, NoConversation, UsageOnly
from ..input_formats import FORMATS as FORMATS  # re-exported (apart: the CLI's help needs no reader)
from . import anthropic, gemini, gemini_reading, openai, responses, responses_request
from .common import Where, dumps, json_text
from .detection import chat_dialect, described, detect, detect_records, detect_text
from .reading import CutDocument, Record, read_records
from .repair_writers import WRITERS
from .segments import NO_MESSAGES, require_messages
from .skipped import Skipped

#: Each request dialect's message parser: (value, raw bytes, where) -> Message.
PARSERS = {
    "openai": openai.parse_message,
    "anthropic": anthropic.parse_message,
    "gemini": gemini.parse_content,
    "responses": responses.parse_message,
}

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
    agent = BY_NAME.get(format or "")
    if agent is not None and agent.read_text is not None:  # a log that is not JSON
        yield from described(agent.name, agent.read_text(name, stream))
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
    if format == "gemini":  # Gemini contents: one document
        for transcript in gemini_reading.read_contents(name, _one_ahead(records)):
            open_end.extend(why for why in transcript.open_end if why not in open_end)
            transcript.open_end = open_end
            yield transcript
        return
    if format == "request":
        for record in records:
            yield _request(name, record, open_end)
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
    transcript.messages = require_messages(
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
    return agent is not None and agent.document


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


def to_message(value: dict, dialect: Dialect) -> Message:
    """A message dict of an agent loop (OpenAI or Anthropic shape) as a `Message`.

    >>> to_message({"role": "user", "content": "hi"}, "anthropic").role
    <Role.USER: 'user'>
    """
    return PARSERS[dialect](value, dumps(value), Where("<message>", 0))


def _request(name: str, record: Record, open_end: list[str]) -> Transcript:
    where = Where(name, record.line)
    value = record.value
    if gemini.is_request(value):
        request = value if isinstance(value, dict) else {gemini.CONTENTS: value}
        return gemini_reading.read_request(name, record, _raw_fields(record, request, split=gemini.CONTENTS))
    if isinstance(value, list):
        value = {"messages": value}
    if responses.is_request(value):
        return responses_request.read_request(name, record, require_messages)
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
        require_messages(name, repair(messages, WRITERS[dialect], name, transcript.repairs, open_end))
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
