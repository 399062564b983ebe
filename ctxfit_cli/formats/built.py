"""The request an agent sends, built from its log's records by that agent's module (`agents/`):
the module reads its records into `Turn`s (what the user said, what the model answered and
called, what each call returned), and `transcript` writes them as the messages of the dialect
the agent's model speaks — Anthropic Messages for a Claude model, OpenAI Chat Completions for
every other — parsed with their bytes, repaired, and with the model calls the log recorded.

For the agents whose logs are neither requests nor one dialect's messages (events, an entry
tree, another API's contents, database rows): each one's module says what every turn held.

- **Anthropic**: text, `thinking` (with its signature: sent back as recorded) and `tool_use`
  blocks in the reply (arguments written as JSON text are parsed); each result a `tool_result`
  block of the user turn after it (consecutive user turns are one, as the SDKs send them).
- **OpenAI**: the reply's text joined, its calls as `tool_calls` (arguments as JSON text); each
  result a `tool` message. A tool message holds text only, so a result's images follow its
  results in a user message.

>>> w = Where("log.jsonl", 1)
>>> turns = [Turn("user", w, ["hi"]), Turn("assistant", w, ["hello"], recorded=RecordedCall(0, "r1", "m", 10, 2))]
>>> t = transcript("log.jsonl", "pi", "openai", turns, [])
>>> [m.role.value for m in t.messages], t.calls[0].message, t.calls[0].prompt_tokens, t.named_models
(['user', 'assistant'], 1, 10, ['m'])
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import orjson

from ..core.model import Dialect, Message, RecordedCall, Transcript
from ..core.repair import MADE_FROM, repair
from ..errors import NoConversation
from . import anthropic, openai
from .common import Where, dumps, json_text
from .repair_writers import WRITERS


@dataclass(frozen=True, slots=True)
class Image:
    media_type: str
    data: str  # base64


@dataclass(frozen=True, slots=True)
class Thinking:
    text: str
    signature: str


#: A piece of a turn's content.
Piece = str | Image | Thinking


@dataclass(frozen=True, slots=True)
class Call:
    id: str
    name: str
    arguments: object  # a JSON object as the model wrote it, or its JSON text


@dataclass(slots=True)
class Turn:
    """One message of the conversation as an agent's log records it, in no dialect yet."""

    role: str  # "user", "assistant", or "result" (of the call `call_id`)
    where: Where
    content: list[Piece] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    call_id: str = ""
    error: bool = False
    #: The model call that made this reply, as the log recorded it (`message` is filled here).
    recorded: RecordedCall | None = None


class Shape(NamedTuple):
    """How an agent's reader writes the text of its turns, where the dialect allows two ways."""

    #: OpenAI: a user's text as a list of parts even when it is one text (else one string).
    user_parts: bool = False
    #: A result as its text: one string in Anthropic's `tool_result` (else blocks), as it is in
    #: OpenAI's `tool` message (else its non-blank texts joined).
    result_text: bool = False


def dialect_of(model: str, provider: str = "") -> Dialect:
    """The dialect a model speaks: Anthropic's for a Claude model (or the Anthropic provider),
    OpenAI's for every other (the shape most providers take)."""
    return "anthropic" if provider.lower() == "anthropic" or "claude" in model.lower() else "openai"


def transcript(
    name: str,
    format: str,
    dialect: Dialect,
    turns: Iterable[Turn],
    open_end: list[str],
    line: int = 1,
    *,
    given: int = 0,
    shape: Shape = Shape(),
    system: str = "",
) -> Transcript:
    """The turns as one conversation in `dialect`; refused when nobody said anything in it.

    `line`: where it starts in its input; `given`: how many leading turns were given to it as
    history (a compaction's), not made by its calls; `system`: the system prompt the log
    recorded (Anthropic's `system` field, OpenAI's first message)."""
    turns = list(turns)
    write = _anthropic if dialect == "anthropic" else _openai
    parse = anthropic.parse_message if dialect == "anthropic" else openai.parse_message
    result = Transcript(name, format, dialect, (), line=line, open_end=open_end)
    calls: dict[int, RecordedCall] = {}
    parsed: list[Message] = []
    for value, where, recorded in write(turns, shape):
        message = parse(value, dumps(value), where)
        if recorded is not None:
            calls[id(message)] = recorded
        parsed.append(message)
    if not parsed:
        raise NoConversation(name, None, "has no messages: nothing from a user, assistant or tool was found")
    if system:  # (as a system message, as the first line of an Anthropic JSONL transcript is kept)
        value = {"role": "system", "content": system}
        if dialect == "anthropic":
            result.system = (anthropic.system_message(system, dumps(value), turns[0].where),)
        else:
            parsed.insert(0, openai.parse_message(value, dumps(value), turns[0].where))
    result.messages = tuple(repair(parsed, WRITERS[dialect], name, result.repairs, open_end))
    result.calls = [call._replace(message=k) for k, m in enumerate(result.messages) for call in _calls_of(m, calls)]
    result.given = min(len(write(turns[:given], shape)), len(result.messages)) if given else 0
    result.named_models = list(dict.fromkeys(t.recorded.model for t in turns if t.recorded and t.recorded.model))
    return result


def sends(turns: list[Turn], dialect: Dialect) -> bool:
    """Whether the turns send any message (a reader leaves a conversation of none out)."""
    return bool((_anthropic if dialect == "anthropic" else _openai)(turns, Shape()))


def _calls_of(message: Message, calls: dict[int, RecordedCall]) -> list[RecordedCall]:
    """The calls recorded for a message: its own, or those of the messages repair combined in it."""
    own = calls.pop(id(message), None)
    if own is not None:
        return [own]
    return [c for part in message.memo.get(MADE_FROM, ()) for c in _calls_of(part, calls)]


#: The request messages, each with where it was read and the call that made it.
Sent = list[tuple[dict, Where, RecordedCall | None]]


def _anthropic(turns: Iterable[Turn], shape: Shape) -> Sent:
    sent: Sent = []
    for turn in turns:
        if turn.role == "assistant":
            content = _blocks(turn.content, thinking=True)
            content += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": _object(c.arguments)} for c in turn.calls
            ]
            if content:
                sent.append(({"role": "assistant", "content": content}, turn.where, turn.recorded))
            continue
        if turn.role == "result":
            result = _text(turn.content) if shape.result_text else _blocks(turn.content)
            block: dict = {"type": "tool_result", "tool_use_id": turn.call_id, "content": result}
            if turn.error:
                block["is_error"] = True
            content = [block]
        else:
            content = _blocks(turn.content)
        if not content:
            continue
        last = sent[-1][0] if sent else None
        if last is not None and last["role"] == "user":
            last["content"].extend(content)  # one user turn, as the SDKs send it
        else:
            sent.append(({"role": "user", "content": content}, turn.where, None))
    return sent


def _object(arguments: object) -> dict:
    """A call's input as Anthropic takes it: an object (JSON text parsed, if it is one; none,
    when the log has none)."""
    if isinstance(arguments, str):
        try:
            parsed = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return {"input": arguments}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return arguments if isinstance(arguments, dict) else {}


def _blocks(content: list[Piece], thinking: bool = False) -> list[dict]:
    blocks: list[dict] = []
    for piece in content:
        if isinstance(piece, str):
            if piece.strip():
                blocks.append({"type": "text", "text": piece})
        elif isinstance(piece, Image):
            blocks.append(
                {"type": "image", "source": {"type": "base64", "media_type": piece.media_type, "data": piece.data}}
            )
        elif thinking and piece.signature and piece.text.strip():
            blocks.append({"type": "thinking", "thinking": piece.text, "signature": piece.signature})
    return blocks


def _text(content: list[Piece]) -> str:
    """A result's text as it was read (blank or not)."""
    return "\n".join(piece for piece in content if isinstance(piece, str))


def _openai(turns: Iterable[Turn], shape: Shape) -> Sent:
    sent: Sent = []
    images: list[Image] = []  # of the results just written: they follow them, in a user message
    for turn in turns:
        if turn.role != "result" and images:
            sent.append(({"role": "user", "content": _parts(list(images))}, turn.where, None))
            images.clear()
        texts = [p for p in turn.content if isinstance(p, str) and p.strip()]
        if turn.role == "assistant":
            reply: dict = {"role": "assistant", "content": "\n".join(texts) if texts else None}
            if turn.calls:
                reply["tool_calls"] = [_tool_call(c) for c in turn.calls]
            if texts or turn.calls:
                sent.append((reply, turn.where, turn.recorded))
        elif turn.role == "result":
            text = _text(turn.content) if shape.result_text else "\n".join(texts)
            sent.append(({"role": "tool", "tool_call_id": turn.call_id, "content": text}, turn.where, None))
            images += [p for p in turn.content if isinstance(p, Image)]
        elif parts := _parts(turn.content):
            one_text = len(parts) == 1 and parts[0]["type"] == "text" and not shape.user_parts
            sent.append(({"role": "user", "content": parts[0]["text"] if one_text else parts}, turn.where, None))
    if images:
        sent.append(({"role": "user", "content": _parts(images)}, sent[-1][1], None))
    return sent


def _tool_call(call: Call) -> dict:
    """A call as OpenAI takes it: its arguments as JSON text."""
    arguments = call.arguments if isinstance(call.arguments, str) else json_text(call.arguments)
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}


def _parts(content: list) -> list[dict]:
    parts: list[dict] = []
    for piece in content:
        if isinstance(piece, str) and piece.strip():
            parts.append({"type": "text", "text": piece})
        elif isinstance(piece, Image):
            parts.append({"type": "image_url", "image_url": {"url": f"data:{piece.media_type};base64,{piece.data}"}})
    return parts
