"""The request an agent sends, built from its log's records by that agent's module (`agents/`):
the module reads its records into `Turn`s (what the user said, what the model answered and
called, what each call returned), and `transcript` writes them as the messages of the dialect
the agent's model speaks — Anthropic Messages for a Claude model, OpenAI Chat Completions for
every other — parsed with their bytes, repaired, and with the model calls the log recorded.

- **Anthropic**: text, `thinking` (with its signature: sent back as recorded) and `tool_use`
  blocks in the reply; each result a `tool_result` block of the user turn after it (consecutive
  user turns are one, as the SDKs send them).
- **OpenAI**: the reply's text joined, its calls as `tool_calls` (arguments as JSON text); each
  result a `tool` message. A tool message holds text only, so a result's images follow its
  results in a user message.

>>> turns = [Turn("user", 1, ["hi"]), Turn("assistant", 2, ["hello"], recorded=RecordedCall(0, "r1", "m", 10, 2))]
>>> t = transcript("log.jsonl", "pi", "openai", turns, [])
>>> [m.role.value for m in t.messages], t.calls[0].message, t.calls[0].prompt_tokens
(['user', 'assistant'], 1, 10)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

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
    arguments: object  # a JSON object, as the model wrote it


@dataclass(slots=True)
class Turn:
    """One message of the conversation as an agent's log records it, in no dialect yet."""

    role: str  # "user", "assistant", or "result" (of the call `call_id`)
    line: int
    content: list[Piece] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    call_id: str = ""
    error: bool = False
    #: The model call that made this reply, as the log recorded it (`message` is filled here).
    recorded: RecordedCall | None = None


def dialect_of(model: str, provider: str = "") -> Dialect:
    """The dialect a model speaks: Anthropic's for a Claude model, OpenAI's for every other."""
    return "anthropic" if provider == "anthropic" or "claude" in model.lower() else "openai"


def transcript(
    name: str, format: str, dialect: Dialect, turns: Iterable[Turn], open_end: list[str], line: int = 1
) -> Transcript:
    """The turns as one conversation in `dialect`; refused when nobody said anything in it."""
    sent = _anthropic(turns) if dialect == "anthropic" else _openai(turns)
    parse = anthropic.parse_message if dialect == "anthropic" else openai.parse_message
    result = Transcript(name, format, dialect, (), line=line, open_end=open_end)
    calls: dict[int, RecordedCall] = {}
    parsed: list[Message] = []
    for value, at, recorded in sent:
        message = parse(value, dumps(value), Where(name, at))
        if recorded is not None:
            calls[id(message)] = recorded
        parsed.append(message)
    if not parsed:
        raise NoConversation(name, None, "has no messages: nothing from a user, assistant or tool was found")
    result.messages = tuple(repair(parsed, WRITERS[dialect], name, result.repairs, open_end))
    result.calls = [call._replace(message=k) for k, m in enumerate(result.messages) for call in _calls_of(m, calls)]
    return result


def _calls_of(message: Message, calls: dict[int, RecordedCall]) -> list[RecordedCall]:
    """The calls recorded for a message: its own, or those of the messages repair combined in it."""
    own = calls.get(id(message))
    if own is not None:
        return [own]
    return [c for part in message.memo.get(MADE_FROM, ()) for c in _calls_of(part, calls)]


Sent = list[tuple[dict, int, RecordedCall | None]]


def _anthropic(turns: Iterable[Turn]) -> Sent:
    sent: Sent = []
    for turn in turns:
        if turn.role == "assistant":
            content = _blocks(turn.content, thinking=True)
            content += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": _object(c.arguments)} for c in turn.calls
            ]
            if content:
                sent.append(({"role": "assistant", "content": content}, turn.line, turn.recorded))
            continue
        if turn.role == "result":
            block: dict = {"type": "tool_result", "tool_use_id": turn.call_id, "content": _blocks(turn.content)}
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
            sent.append(({"role": "user", "content": content}, turn.line, None))
    return sent


def _object(arguments: object) -> dict:
    """A call's input as Anthropic takes it: an object (none, when the log has none)."""
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


def _openai(turns: Iterable[Turn]) -> Sent:
    sent: Sent = []
    images: list[Image] = []  # of the results just written: they follow them, in a user message
    for turn in turns:
        if turn.role != "result" and images:
            sent.append(({"role": "user", "content": _parts(list(images))}, turn.line, None))
            images.clear()
        texts = [p for p in turn.content if isinstance(p, str) and p.strip()]
        if turn.role == "assistant":
            reply: dict = {"role": "assistant", "content": "\n".join(texts) if texts else None}
            if turn.calls:
                reply["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json_text(c.arguments)}}
                    for c in turn.calls
                ]
            if texts or turn.calls:
                sent.append((reply, turn.line, turn.recorded))
        elif turn.role == "result":
            sent.append(({"role": "tool", "tool_call_id": turn.call_id, "content": "\n".join(texts)}, turn.line, None))
            images += [p for p in turn.content if isinstance(p, Image)]
        elif parts := _parts(turn.content):
            only_text = len(parts) == 1 and parts[0]["type"] == "text"
            sent.append(({"role": "user", "content": parts[0]["text"] if only_text else parts}, turn.line, None))
    if images:
        sent.append(({"role": "user", "content": _parts(images)}, sent[-1][1], None))
    return sent


def _parts(content: list) -> list[dict]:
    parts: list[dict] = []
    for piece in content:
        if isinstance(piece, str) and piece.strip():
            parts.append({"type": "text", "text": piece})
        elif isinstance(piece, Image):
            parts.append({"type": "image_url", "image_url": {"url": f"data:{piece.media_type};base64,{piece.data}"}})
    return parts
