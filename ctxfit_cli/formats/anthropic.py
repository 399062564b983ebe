"""Anthropic Messages.

`role` is user or assistant (a JSONL transcript may start with a `{"role": "system"}` line, which
becomes the request's `system`). A `system` entry later in `messages` (Claude Code 2.1's agent list
and reminders) or a role ctxfit does not know is pinned: kept in place as it came (DESIGN §14).
`content` is a string or a list of blocks: `text`, `image`, `document`, `thinking`,
`redacted_thinking`, `tool_use`, `tool_result` (whose content is a string or a list of text and
image blocks). A message is read as the API takes it: keys other than
`role` and `content` and blank text blocks are removed (`core.repair.cleaned`, reported).
Server-side tool blocks (`server_tool_use`, `web_search_tool_result`, ...) live inside one assistant
message and are counted as text, since they carry no call the client must answer. Thinking
signatures are not counted (they are opaque and not billed as input text).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Protocol

import orjson

from ..core.model import Message, Part, PartKind, Role
from ..core.repair import cleaned
from ..counters.images import DEFAULT_IMAGE_TOKENS, image_tokens_from_base64, pdf_tokens_from_base64
from ..errors import BadInput
from .common import Where, as_blocks, dumps, expect_dict, expect_str, json_text, type_name

ROLES = {"system": Role.SYSTEM, "user": Role.USER, "assistant": Role.ASSISTANT}
_TEXT = PartKind.TEXT


def parse_message(value: object, raw: bytes, where: Where) -> Message:
    """One Anthropic message (already parsed JSON) into the transcript model."""
    message = expect_dict(value, where, "a message")
    if "role" not in message:
        raise where.fail('missing "role"')
    role = message["role"]
    if not isinstance(role, str):
        raise where.fail(f'"role" must be a string, got {type_name(role)}')
    if role not in _KNOWN:
        return _pinned(message, raw, where)
    parts = content_parts(message.get("content"), _Content(where))
    if len(message) != 2 or _has_blank_text(parts):  # (rare: a key or a block the API refuses)
        fixed, notes = cleaned(message, "anthropic")
        if notes:
            parts = content_parts(fixed["content"], _Content(where))
            return Message(ROLES[role], parts, dumps(fixed), where.line, repaired=notes)
    return Message(ROLES[role], parts, raw, where.line)


#: The roles of a conversation turn; any other (`system`, mid-conversation since Claude Code 2.1
#: with the `mid-conversation-system-2026-04-07` beta, or a role ctxfit does not know) is pinned.
_KNOWN = ("user", "assistant")


def _pinned(message: dict, raw: bytes, where: Where) -> Message:
    """A `system` entry inside `messages`, or a role ctxfit does not know: kept as it came (no
    key removed), counted as system text, never cleared or left out (DESIGN §14). Its content is
    read as blocks when it is one, else counted as the JSON it is."""
    try:
        parts = content_parts(message.get("content"), _Content(where))
    except BadInput:
        parts = (Part(PartKind.TEXT, json_text(message.get("content"))),)
    return Message(Role.SYSTEM, parts, raw, where.line, pinned=True)


def _has_blank_text(parts: tuple[Part, ...]) -> bool:
    for part in parts:  # a loop, not any(): this runs for every message read
        if part.kind is _TEXT and (not part.text or part.text.isspace()):
            return True
    return False


class Place(Protocol):
    """Where content stands: a `Where`, or a `_Content` that makes its `Where` only when asked."""

    def at(self, key: str | int) -> Where: ...

    def fail(self, problem: str) -> BadInput: ...


class _Content:
    """`where.at("content")`, made only if a problem is reported (it is rarely needed)."""

    __slots__ = ("where",)

    def __init__(self, where: Where) -> None:
        self.where = where

    def at(self, key: str | int) -> Where:
        return self.where.at("content").at(key)

    def fail(self, problem: str) -> BadInput:
        return self.where.at("content").fail(problem)


def system_message(system: object, raw: bytes, where: Where) -> Message:
    """The `system` field of a request (a string or a list of text blocks)."""
    return Message(Role.SYSTEM, content_parts(system, where), raw, where.line)


def one_system_prompt(messages: Iterable[Message]) -> Iterator[Message]:
    """The messages with their leading system lines as one system message: a request has one
    `system` (their blocks in order, as the payload sends them), so it is counted as one.

    >>> lines = [Message(Role.SYSTEM, (Part(PartKind.TEXT, t),), dumps({"role": "system", "content": t}), n)
    ...          for n, t in enumerate(["Be kind.", "Be brief."], 1)]
    >>> [m.raw for m in one_system_prompt(lines)]
    [b'{"role":"system","content":[{"type":"text","text":"Be kind."},{"type":"text","text":"Be brief."}]}']
    """
    leading: list[Message] = []
    messages = iter(messages)
    for message in messages:
        if message.role is Role.SYSTEM and _is_system_line(message):
            leading.append(replace(message, pinned=False))  # a JSONL transcript's system lines
            continue
        if leading:
            yield _joined(leading)
        yield message
        break
    else:
        if leading:
            yield _joined(leading)
        return
    yield from messages


def _is_system_line(message: Message) -> bool:
    """A `{"role": "system"}` line (not one of a role ctxfit does not know, pinned where it is)."""
    return not message.pinned or orjson.loads(message.raw).get("role") == "system"


def _joined(system: list[Message]) -> Message:
    """Several system messages as one: their parts (already read) and their blocks, in order."""
    if len(system) == 1:
        return system[0]
    blocks = [block for message in system for block in as_blocks(orjson.loads(message.raw)["content"])]
    parts = tuple(part for message in system for part in message.parts)
    return Message(Role.SYSTEM, parts, dumps({"role": "system", "content": blocks}), system[0].line)


def content_parts(content: object, where: Place) -> tuple[Part, ...]:
    if isinstance(content, str):
        return (Part(PartKind.TEXT, content),) if content else ()
    if content is None:
        raise where.fail('missing "content"')
    if not isinstance(content, list):
        raise where.fail(f"must be a string or a list of blocks, got {type_name(content)}")
    return tuple(_block(item, where, i) for i, item in enumerate(content))


def _block(value: object, parent: Place, index: int) -> Part:
    # The location is built only when something is wrong: this runs for every block read.
    if not isinstance(value, dict) or value.get("type") not in _SIMPLE:
        return _checked_block(value, parent.at(index))
    kind = value["type"]
    if kind == "text" and isinstance(value.get("text"), str):
        return Part(PartKind.TEXT, value["text"])
    if (
        kind == "tool_result"
        and isinstance(value.get("tool_use_id"), str)
        and isinstance(value.get("content", ""), str)
    ):
        return Part(
            PartKind.TOOL_RESULT, value.get("content", ""), "", value["tool_use_id"], 0, bool(value.get("is_error"))
        )
    if kind == "tool_use" and isinstance(value.get("id"), str) and isinstance(value.get("name"), str):
        return Part(PartKind.TOOL_CALL, json_text(value.get("input", {})), value["name"], value["id"])
    return _checked_block(value, parent.at(index))


#: Block shapes with a fast path in `_block`; everything else goes through `_checked_block`.
_SIMPLE = ("text", "tool_result", "tool_use")


def _checked_block(value: object, where: Where) -> Part:
    block = expect_dict(value, where, "a content block")
    kind = block.get("type")
    if kind == "text":
        return Part(PartKind.TEXT, expect_str(block.get("text"), where, '"text"'))
    if kind == "thinking":
        return Part(PartKind.THINKING, expect_str(block.get("thinking"), where, '"thinking"'))
    if kind == "redacted_thinking":
        return Part(PartKind.THINKING, str(block.get("data", "")))
    if kind == "tool_use":
        call_id = expect_str(block.get("id"), where, 'a tool_use "id"')
        name = expect_str(block.get("name"), where, 'a tool_use "name"')
        return Part(PartKind.TOOL_CALL, json_text(block.get("input", {})), name, call_id)
    if kind == "tool_result":
        call_id = expect_str(block.get("tool_use_id"), where, 'a tool_result "tool_use_id"')
        text, images = _result_content(block.get("content", ""), where.at("content"))
        return Part(PartKind.TOOL_RESULT, text, "", call_id, images, bool(block.get("is_error")))
    if kind == "image":
        return Part(PartKind.IMAGE, image_tokens=_image_tokens(block.get("source")))
    if kind == "document":
        return _document(block.get("source"), where)
    if not isinstance(kind, str):
        raise where.fail('a content block needs a "type"')
    return Part(PartKind.TEXT, json_text(block))  # server tool blocks and future types: all counted


def _result_content(content: object, where: Where) -> tuple[str, int]:
    if isinstance(content, str):
        return content, 0
    parts = content_parts(content, where)
    return "\n".join(p.text for p in parts if p.text), sum(p.image_tokens for p in parts)


def _image_tokens(source: object) -> int:
    if isinstance(source, dict) and source.get("type") == "base64" and isinstance(source.get("data"), str):
        return image_tokens_from_base64(source["data"])
    return DEFAULT_IMAGE_TOKENS


def _document(source: object, where: Where) -> Part:
    if not isinstance(source, dict):
        return Part(PartKind.IMAGE, image_tokens=DEFAULT_IMAGE_TOKENS)
    kind, data = source.get("type"), source.get("data")
    if kind == "text" and isinstance(data, str):
        return Part(PartKind.TEXT, data)
    if kind == "content":
        parts = content_parts(source.get("content", []), where.at("source").at("content"))
        return Part(PartKind.TEXT, "\n".join(p.text for p in parts), image_tokens=sum(p.image_tokens for p in parts))
    if kind == "base64" and isinstance(data, str):
        return Part(PartKind.IMAGE, image_tokens=pdf_tokens_from_base64(data))
    return Part(PartKind.IMAGE, image_tokens=DEFAULT_IMAGE_TOKENS)
