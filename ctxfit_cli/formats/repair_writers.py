"""How each request dialect writes the messages `core.repair` makes (answers, rebuilt results).

A repaired message is sent, so it is written as that dialect's JSON and read back through the
dialect's own parser: its parts and estimate are what a message read from a file would have.
"""

from __future__ import annotations

import orjson

from ..core.model import Message
from ..core.notes import ABORTED_CALL, OPENING_USER
from ..core.repair import MADE_FROM, Writer
from . import anthropic, openai
from .common import Where, as_blocks, dumps

_MADE = Where("<repair>", 0)


def _message(parse, value: dict, line: int) -> Message:
    return parse(value, dumps(value), _MADE._replace(line=line))


class AnthropicWriter:
    user_first = results_in_user = combines_turns = True

    @staticmethod
    def _aborted(call_id: str) -> dict:
        return {"type": "tool_result", "tool_use_id": call_id, "content": ABORTED_CALL, "is_error": True}

    def answers(self, call_ids: list[str], line: int) -> list[Message]:
        value = {"role": "user", "content": [self._aborted(c) for c in call_ids]}
        return [_message(anthropic.parse_message, value, line)]

    def reorder(self, message: Message, order: list[int | str]) -> Message | None:
        if not order:
            return None
        return _once(message, ("reordered", tuple(order)), lambda: self._reordered(message, order))

    def _reordered(self, message: Message, order: list[int | str]) -> Message:
        content = orjson.loads(message.raw).get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        new = [blocks[i] if isinstance(i, int) else self._aborted(i) for i in order]
        made = _message(anthropic.parse_message, {"role": "user", "content": new}, message.line)
        made.memo[MADE_FROM] = (message,)
        return made

    def opener(self, line: int) -> Message:
        return _message(anthropic.parse_message, {"role": "user", "content": OPENING_USER}, line)

    def combined(self, first: Message, second: Message) -> Message:
        return _once(first, ("combined", second), lambda: self._combined(first, second))

    @staticmethod
    def _combined(first: Message, second: Message) -> Message:
        blocks = [block for message in (first, second) for block in as_blocks(orjson.loads(message.raw)["content"])]
        made = _message(anthropic.parse_message, {"role": first.role.value, "content": blocks}, first.line)
        made.memo[MADE_FROM] = (first, second)
        return made


def _once(message: Message, key: tuple, make) -> Message:
    """A message rebuilt from `message`, made once and kept in its memo: a library session
    repairs its history at every step and recognises the history walked by identity."""
    made = message.memo.get(key)
    if made is None:
        made = message.memo[key] = make()
    return made


class OpenAIWriter:
    user_first = results_in_user = combines_turns = False

    def answers(self, call_ids: list[str], line: int) -> list[Message]:
        return [
            _message(openai.parse_message, {"role": "tool", "tool_call_id": c, "content": ABORTED_CALL}, line)
            for c in call_ids
        ]

    def reorder(self, message: Message, order: list[int | str]) -> Message | None:
        # An OpenAI user message holds no results: only aborted answers can be asked for here,
        # and they go before the message as `tool` messages (see `core.repair`).
        raise AssertionError("OpenAI results are tool messages, never reordered inside a user message")

    def opener(self, line: int) -> Message:
        raise AssertionError("OpenAI accepts an assistant first message")

    def combined(self, first: Message, second: Message) -> Message:
        raise AssertionError("OpenAI accepts two messages of one role in a row")


WRITERS: dict[str, Writer] = {"anthropic": AnthropicWriter(), "openai": OpenAIWriter()}

from .responses_repair import ResponsesWriter  # noqa: E402 (its own module)

WRITERS["responses"] = ResponsesWriter()  # type: ignore[assignment]  # (no `combined`: never combines turns)
