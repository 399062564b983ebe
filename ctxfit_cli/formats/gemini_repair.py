"""Repairs of Gemini contents (DESIGN §8), each reported: what `core.repair` makes, written as
Gemini, and the two repairs only this dialect needs.

- `GeminiWriter` writes what `core.repair` makes: an open call answered by a functionResponse
  `{"error": notes.ABORTED_CALL}` with the call's name and id (the API needs the name, so the
  writer learns each call's name as the messages pass: `watch`); a user content rebuilt with
  its responses first; a constant user content before a model first content.
- `without_empty` drops a content with no parts (`contents.parts must not be empty`): nothing
  is lost.
- `merged_turns` sends two contents of one role in a row as one, their parts in order (the API
  wants user and model to alternate; Gemini CLI writes a cancelled call's responses and the
  user's next prompt as two user contents in its log, and sends them as one). In a request an
  agent sent, user contents in a row are left as they are: the API takes them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import orjson

from ..core.model import Message, PartKind, Role
from ..core.notes import ABORTED_CALL, OPENING_USER
from .gemini_write import content, merged


class GeminiWriter:
    """How `core.repair` writes Gemini. One per transcript: it knows the calls it has seen."""

    user_first = results_in_user = True
    results_in_order = False  # the API pairs responses by id, or by name and order
    combines_turns = False  # `merged_turns` combines them as the contents are read
    #: The API takes a call answered twice under one id (Gemini CLI 0.61 sends every tool result
    #: twice on resume): both are kept, and counted, as sent.
    takes_second_results = True

    def __init__(self) -> None:
        self._names: dict[str, str] = {}  # pairing key -> function name

    def watch(self, messages: Iterable[Message]) -> Iterator[Message]:
        """Pass the messages through, learning the name of every call."""
        names = self._names
        for message in messages:
            if message.role is Role.ASSISTANT:
                for part in message.parts:
                    if part.kind is PartKind.TOOL_CALL:
                        names[part.call_id] = part.tool
            yield message

    def _aborted(self, key: str) -> dict:
        name = self._names.get(key) or key.rpartition("#")[0]
        response: dict = {"name": name, "response": {"error": ABORTED_CALL}}
        if not re.fullmatch(re.escape(name) + r"#\d+", key):  # a real id, not a key made by ctxfit
            response = {"id": key, **response}
        return {"functionResponse": response}

    def answers(self, call_ids: list[str], line: int) -> list[Message]:
        return [content({"role": "user", "parts": [self._aborted(c) for c in call_ids]}, line)]

    def reorder(self, message: Message, order: list[int | str]) -> Message | None:
        value = orjson.loads(message.raw)
        parts = value.get("parts") or []
        new = [parts[i] if isinstance(i, int) else self._aborted(i) for i in order]
        if not new:
            return None
        return content({**value, "parts": new}, message.line)

    def opener(self, line: int) -> Message:
        return content({"role": "user", "parts": [{"text": OPENING_USER}]}, line)


def without_empty(messages: Iterable[Message], path: str, repairs: list[str]) -> Iterator[Message]:
    """The contents that have parts; each one dropped is reported."""
    for message in messages:
        if message.parts or message.role not in (Role.USER, Role.ASSISTANT):
            yield message
        else:
            repairs.append(f"{path}:{message.line}: dropped a {_ROLE_NAMES[message.role]} content with no parts")


def merged_turns(
    messages: Iterable[Message], path: str, repairs: list[str], *, users: bool = True
) -> Iterator[Message]:
    """The contents with each run of one role sent as one content; each merge is reported.
    `users` False: runs of user contents are left as they are (the API takes them: Gemini CLI
    0.61's router request sends two), only the model's are merged."""
    held: Message | None = None
    for message in messages:
        if (
            held is not None
            and message.role is held.role
            and message.role in _ROLE_NAMES
            and (users or message.role is Role.ASSISTANT)
        ):
            repairs.append(
                f"{path}:{message.line}: merged two {_ROLE_NAMES[message.role]} contents in a row "
                "into one (Gemini wants user and model to alternate)"
            )
            held = merged(held, message)
            continue
        if held is not None:
            yield held
        held = message
    if held is not None:
        yield held


_ROLE_NAMES = {Role.USER: "user", Role.ASSISTANT: "model"}
