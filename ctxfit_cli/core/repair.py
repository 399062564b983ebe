"""Repairs that make a broken log a valid request, each one reported (DESIGN §8).

Works on the transcript model, for any dialect; what a repaired message looks like in its
dialect is written by a `Writer` the reader passes in. The repairs, and why:

- **A call never answered** (a live log ends while its tool runs; an interrupted call left no
  result) gets the constant `notes.ABORTED_CALL` result, right where the provider expects it:
  both APIs refuse a call without a result, and dropping the call would hide from the model
  what it did. Codex CLI repairs its own history the same way.
- **A result without a call** (its call is not in the assistant message right before) is
  dropped: the provider refuses it and the model never asked for it.
- **A second result for one call** is dropped: the first is the one the agent went on with.
- **Results after other content** in an Anthropic user message are moved first, in call order.
- **An assistant first message** (Anthropic only: it requires the first message from the
  user) gets a constant `notes.OPENING_USER` message before it, so nothing the log holds is
  lost. OpenAI accepts an assistant first message, so it is left alone there.

Each repair adds one line to the transcript's `repairs` (file, line, what was done); messages
that need no repair pass through untouched, byte for byte.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Protocol

from .model import Message, PartKind, Role


class Writer(Protocol):
    """How one dialect writes the messages a repair makes."""

    #: Whether the dialect requires the first conversation message to be from the user.
    user_first: bool
    #: Whether results are blocks of the next user message (Anthropic) or messages (OpenAI).
    results_in_user: bool
    #: Whether those results must come first, in call order (Anthropic; not Gemini, which pairs
    #: them by id or name). A writer without it is taken to say yes.
    results_in_order: bool

    def answers(self, call_ids: list[str], line: int) -> list[Message]:
        """New messages answering these calls with the aborted note."""

    def reorder(self, message: Message, order: list[int | str]) -> Message | None:
        """A user message rebuilt as its parts `order` lists (an int keeps that part, a str
        is an aborted result for that call id); None when nothing is left."""

    def opener(self, line: int) -> Message:
        """The user message put before an assistant first message."""


# Enum members as plain names: in Python 3.11 `Role.TOOL` is a slow attribute lookup, and
# `repair` asks several for every message read.
_TOOLS, _SYSTEM, _TOOL, _USER, _ASSISTANT = Role.TOOLS, Role.SYSTEM, Role.TOOL, Role.USER, Role.ASSISTANT


def repair(messages: Iterable[Message], writer: Writer, path: str, repairs: list[str]) -> Iterator[Message]:
    """The messages with every call answered once, by results right after it (lazy)."""
    open_calls: list[str] = []  # calls of the last assistant message not yet answered
    answered: set[str] = set()
    call_line = 0
    started = False
    for message in messages:
        role = message.role
        if role is _TOOLS or (role is _SYSTEM and (writer.results_in_user or not open_calls)):
            yield message
            continue
        if not started:
            started = True
            if role is _ASSISTANT and writer.user_first:
                repairs.append(f"{path}:{message.line}: the conversation starts with an assistant "
                               "message; added a constant user message before it")
                yield writer.opener(message.line)
        if role is _TOOL:
            call_id = message.parts[0].call_id if message.parts else ""
            if call_id in open_calls:
                open_calls.remove(call_id)
                answered.add(call_id)
                yield message
            else:
                what = "a second result" if call_id in answered else "a result with no call before it"
                repairs.append(f"{path}:{message.line}: dropped {what} (call {call_id!r})")
            continue
        if role is not _ASSISTANT and not writer.results_in_user:
            if open_calls:  # a user or system message while calls are open
                yield from _answer(open_calls, call_line, message.line, writer, path, repairs)
                open_calls, answered = [], set()
            yield message
            continue
        if role is _USER:
            fixed = _user(message, open_calls, writer, path, repairs)
            open_calls, answered = [], set()
            if fixed is not None:
                yield fixed
            continue
        if open_calls:  # an assistant message while calls are open
            yield from _answer(open_calls, call_line, message.line, writer, path, repairs)
        open_calls, answered, call_line = list(message.call_ids), set(), message.line
        yield message
    if open_calls:
        yield from _answer(open_calls, call_line, 0, writer, path, repairs)


def _answer(calls: list[str], call_line: int, before: int, writer: Writer, path: str,
            repairs: list[str]) -> list[Message]:
    where = f"before line {before}" if before else "at the end of the log (a live log?)"
    for call_id in calls:
        repairs.append(f"{path}:{call_line}: call {call_id!r} has no result {where}; "
                       "answered it with an aborted result")
    return writer.answers(calls, call_line)


def _user(message: Message, calls: list[str], writer: Writer, path: str, repairs: list[str]) -> Message | None:
    """A user message whose results answer exactly `calls`, first and in call order."""
    kept: dict[str, int] = {}
    others: list[int] = []
    for i, part in enumerate(message.parts):
        if part.kind is not PartKind.TOOL_RESULT:
            others.append(i)
        elif part.call_id in kept:
            repairs.append(f"{path}:{message.line}: dropped a second result (call {part.call_id!r})")
        elif part.call_id not in calls:
            repairs.append(f"{path}:{message.line}: dropped a result with no call before it "
                           f"(call {part.call_id!r})")
        else:
            kept[part.call_id] = i
    missing = [c for c in calls if c not in kept]
    for call_id in missing:
        repairs.append(f"{path}:{message.line}: call {call_id!r} has no result; "
                       "answered it with an aborted result")
    order: list[int | str] = [kept.get(c, c) for c in calls] + others
    if order == list(range(len(message.parts))):
        return message
    if not missing and len(order) == len(message.parts) and not getattr(writer, "results_in_order", True):
        return message  # every result answers its call where it stands
    if not missing and len(order) == len(message.parts):
        repairs.append(f"{path}:{message.line}: moved tool results before the other content, in call order")
    return writer.reorder(message, order)
