"""Writing Gemini: the contents ctxfit changes, and the generateContent body around them.

A changed content is written as JSON and read back through `gemini.parse_content`, so its parts
and estimate are those of a content read from a file. Everything else about it stays: its other
parts, the spelling of its fields, a call's `id`.

- a **cleared** result keeps its part, `name` and `id`; its `response` becomes
  `{"output": notes.CLEARED_RESULT}` (Gemini CLI's own shape for a tool's output) and any
  multimodal `parts` of the response go;
- the **trimmed-history note** is a text part added to the first content;
- two user contents that trimming (or a log) leaves side by side are **merged**: the parts of
  both, in order, in the first;
- the **agent note** is a text part at the end of `systemInstruction` (one is made if needed).

The body: the request's other fields first (as they came), then `systemInstruction`, `tools`
and `contents`.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..core.model import Message, PartKind, Transcript
from ..core.notes import CLEARED_RESULT
from . import gemini
from .common import Where, dumps

_MADE = Where("<ctxfit>", 0)


def content(value: dict, line: int = 0) -> Message:
    """A content ctxfit made, as a message (its bytes ctxfit's one serialization)."""
    return gemini.parse_content(value, dumps(value), _MADE._replace(line=line))


def cleared(message: Message, call_ids: frozenset[str]) -> Message:
    """The user content with the responses to these calls (by pairing key) cleared."""
    value = orjson.loads(message.raw)
    parts = list(value["parts"])
    for j, part in enumerate(message.parts):
        if part.kind is PartKind.TOOL_RESULT and part.call_id in call_ids:
            parts[j] = _cleared_part(parts[j])
    value["parts"] = parts
    return content(value, message.line)


def _cleared_part(part: dict) -> dict:
    key = "functionResponse" if "functionResponse" in part else "function_response"
    response = {k: v for k, v in part[key].items() if k != "parts"}
    response["response"] = {"output": CLEARED_RESULT}
    return {**part, key: response}


def with_text(message: Message, text: str) -> Message:
    """The content with a text part added at its end (the trimmed-history note)."""
    value = orjson.loads(message.raw)
    value["parts"] = list(value.get("parts") or []) + [{"text": text}]
    return content(value, message.line)


def merged(first: Message, following: Message) -> Message:
    """Two contents of one role as one: the parts of both, in order."""
    value = orjson.loads(first.raw)
    value["parts"] = list(value.get("parts") or []) + list(orjson.loads(following.raw).get("parts") or [])
    return content(value, first.line)


def system_with(system: tuple[Message, ...], text: str) -> Message:
    """`systemInstruction` with a text part added at its end (made if there is none)."""
    value = _system_value(system) if system else {"parts": []}
    value["parts"] = list(value.get("parts") or []) + [{"text": text}]
    return gemini.system_message(value, dumps(value), _MADE)


def request_fields(transcript: Transcript, messages: tuple[Message, ...]) -> list[tuple[str, bytes]]:
    """The fields of the body: the others as they came, then systemInstruction, tools, contents."""
    fields = list(transcript.extra)
    if transcript.system:
        raw = transcript.system[0].raw if len(transcript.system) == 1 else dumps(_system_value(transcript.system))
        fields.append(("systemInstruction", raw))
    if transcript.tools is not None:
        fields.append((gemini.TOOLS, transcript.tools.raw))
    fields.append((gemini.CONTENTS, b"[" + b",".join(m.raw for m in messages) + b"]"))
    return fields


def _system_value(system: tuple[Message, ...]) -> dict:
    """One `systemInstruction` from the system message(s) read: their parts, in order."""
    values: list[Any] = [gemini.system_value(orjson.loads(m.raw)) for m in system]  # (JSON objects as read)
    if len(values) == 1:
        return dict(values[0])
    return {"parts": [part for value in values for part in value.get("parts") or []]}
