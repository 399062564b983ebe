"""A whole Responses request read from a file (`ctxfit fit body.json`): one transcript.

`instructions` becomes the system message, `tools` the tool definitions, the items of `input`
the conversation (the model's consecutive items one message, `responses.group_spans`), and
every other field (model, reasoning, store, ...) is kept as it came. Each item keeps the bytes
it had in the file, so an unchanged item is written back as it was.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.model import Message, Part, PartKind, Role, Transcript
from ..core.repair import repair
from .common import Where, dumps, json_text
from .reading import Record
from .repair_writers import WRITERS
from .responses import group_spans, parse_message
from .responses_payload import instructions_message

FIXED = ("input", "instructions", "tools")


def read_request(name: str, record: Record, require: Callable) -> Transcript:
    """The transcript of one Responses request; `require` complains when it holds no
    conversation (`formats._require_messages`)."""
    where = Where(name, record.line)
    value = record.value
    items = value["input"]
    raw = _item_bytes(record, items)
    messages = []
    for start, end in group_spans(items):
        at = where.at("input").at(start)
        if end - start == 1:
            messages.append(parse_message(items[start], raw[start], at))
        else:
            messages.append(parse_message(items[start:end], b",".join(raw[start:end]), at))
    has_instructions = value.get("instructions") is not None
    system = (instructions_message(value["instructions"], record.line),) if has_instructions else ()
    tools = None
    if value.get("tools") is not None:
        tools = Message(
            Role.TOOLS, (Part(PartKind.TEXT, json_text(value["tools"])),), dumps(value["tools"]), record.line
        )
    extra = tuple((k, dumps(v)) for k, v in value.items() if k not in FIXED)
    transcript = Transcript(name, "request", "responses", (), system, tools, extra, record.line)
    transcript.messages = list(require(name, repair(messages, WRITERS["responses"], name, transcript.repairs)))
    return transcript


def _item_bytes(record: Record, items: list) -> list[bytes]:
    """Each item's bytes: ctxfit's own serialization when it is the file's, else the file's."""
    dumped = [dumps(item) for item in items]
    if b"[" + b",".join(dumped) + b"]" in record.raw:
        return dumped
    from .spans import SpanError, members, one_line

    try:
        found = members(record.raw, split="input").get("input")
    except (SpanError, UnicodeDecodeError, RecursionError):
        return dumped
    if not isinstance(found, list) or len(found) != len(items):
        return dumped
    return [one_line(item) for item in found]
