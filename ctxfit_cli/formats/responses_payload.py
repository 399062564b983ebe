"""Writing a Responses request: `instructions`, `tools` and the `input` items, and the items
ctxfit changes (a cleared output, the trimmed-history note, the agent note).

The transcript keeps `instructions` as a system message whose `raw` is the field's own JSON (a
string, never an object), so it is told apart from the system and developer *items* of `input`,
which are written first in `input` as they came.
"""

from __future__ import annotations

import orjson

from ..core.model import Message, Part, PartKind, Role, Transcript
from ..core.notes import AGENT_NOTE, CLEARED_RESULT, TRIMMED_HISTORY
from ..core.responses_items import item_kind
from .common import Where, dumps
from .responses import parse_message

_MADE = Where("<ctxfit>", 0)


def instructions_message(instructions: object, line: int = 0) -> Message:
    """The `instructions` field as the transcript's system message (counted, always sent)."""
    text = instructions if isinstance(instructions, str) else orjson.dumps(instructions).decode()
    return Message(Role.SYSTEM, (Part(PartKind.TEXT, text),) if text else (), dumps(instructions), line)


def is_instructions(message: Message) -> bool:
    return not message.raw.startswith(b"{")


def request_bytes(transcript: Transcript, messages: tuple[Message, ...]) -> bytes:
    """The request: other fields first, then `instructions`, `tools` and `input`."""
    fields: list[tuple[str, bytes]] = list(transcript.extra)
    items = [m.raw for m in transcript.system if not is_instructions(m)] + [m.raw for m in messages]
    instructions = [m for m in transcript.system if is_instructions(m)]
    if instructions:
        fields.append(("instructions", instructions[-1].raw))
    if transcript.tools is not None:
        fields.append(("tools", transcript.tools.raw))
    fields.append(("input", b"[" + b",".join(items) + b"]"))
    return b"{" + b",".join(orjson.dumps(k) + b":" + v for k, v in fields) + b"}"


def cleared(message: Message, call_ids: frozenset[str]) -> Message:
    """An output item with its output replaced by the constant note (kept its kind, so that it
    still answers its call: a shell output stays a list of chunks)."""
    item = orjson.loads(message.raw)
    output = item.get("output")
    if item_kind(item) == "shell_call_output" and isinstance(output, list):
        first = output[0] if output and isinstance(output[0], dict) else {}
        item["output"] = [{**first, "stdout": CLEARED_RESULT, "stderr": ""}]
    else:
        item["output"] = CLEARED_RESULT
    return _message(item)


def with_trim_note(message: Message) -> Message:
    """The first user message with the trimmed-history note as its last `input_text` part."""
    item = orjson.loads(message.raw)
    content = item.get("content")
    parts = list(content) if isinstance(content, list) else [{"type": "input_text", "text": content}] if content else []
    item["content"] = parts + [{"type": "input_text", "text": TRIMMED_HISTORY}]
    return _message(item)


def with_agent_note(transcript: Transcript) -> tuple[Message, ...]:
    """The system messages with DESIGN §5's note at the end of `instructions` (made if none)."""
    system = transcript.system
    at = next((i for i in range(len(system) - 1, -1, -1) if is_instructions(system[i])), None)
    if at is None:
        return (instructions_message(AGENT_NOTE),) + system
    current = orjson.loads(system[at].raw)
    if not isinstance(current, str):
        return system  # instructions given as items: left as they are
    text = f"{current}\n\n{AGENT_NOTE}" if current else AGENT_NOTE
    return system[:at] + (instructions_message(text, system[at].line),) + system[at + 1 :]


def _message(item: dict) -> Message:
    return parse_message(item, dumps(item), _MADE)
