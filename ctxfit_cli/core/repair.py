"""Repairs that make a broken log a valid request, each one reported (DESIGN §8, §13).

What a provider accepts is accepted; what it refuses is never sent; between the two, a repair
that invents nothing is made. It works on the transcript model, for any dialect; what a
repaired message looks like in its dialect is written by a `Writer` the reader passes in. The
repairs, and why:

- **Blank text and refused keys** (made as a message is read, `cleaned`, and reported here):
  an empty or whitespace-only text block is dropped (Anthropic refuses it: `text content
  blocks must contain non-whitespace text`; Claude Code 2.1 writes `"\n\n"` before a reply's
  other blocks), and so are the keys its API refuses in a message (Cline's `ts`, `metrics`:
  `Extra inputs are not permitted`). Everything else of the message is kept as it was.
- **An empty message** (nothing left, or nothing there) is dropped: there is nothing to send,
  and Anthropic refuses it.
- **The reply being written** at the end of a live log (Claude Code writes a reply one block
  at a time; only blank text or thinking is written yet) is left out: that request was not
  made yet. The transcript's `open_end` says why the log looks still being written.
- **Two messages of one role in a row** (Anthropic only: OpenAI takes them as they are) are
  combined into one, as the Messages API itself combines consecutive turns, so every consumer
  sees the one turn the model sees (results then move first, below).

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

>>> from .model import Part, PartKind
>>> blank = Message(Role.ASSISTANT, (), b"", 2, repaired=("dropped 1 whitespace-only text block",))
>>> repairs = []
>>> [m.line for m in repair([Message(Role.USER, (Part(PartKind.TEXT, "hi"),), b"", 1), blank],
...                          None, "log", repairs)]
[1]
>>> repairs  # doctest: +NORMALIZE_WHITESPACE
['log:2: dropped 1 whitespace-only text block',
 'log:2: the last reply is not finished (only blank text or thinking is written yet): left out, as a request not
 yet made']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from .accepted import is_blank_text, unknown_keys
from .model import Message, PartKind, Role


class Writer(Protocol):
    """How one dialect writes the messages a repair makes."""

    #: Whether the dialect requires the first conversation message to be from the user.
    user_first: bool
    #: Whether results are blocks of the next user message (Anthropic) or messages (OpenAI).
    results_in_user: bool
    # Optional, so not a member here (read with getattr): `results_in_order`, whether those
    # results must come first, in call order (Anthropic; not Gemini, which pairs them by id or
    # name). A writer without it is taken to say yes.

    def answers(self, call_ids: list[str], line: int) -> list[Message]:
        """New messages answering these calls with the aborted note."""

    def reorder(self, message: Message, order: list[int | str]) -> Message | None:
        """A user message rebuilt as its parts `order` lists (an int keeps that part, a str
        is an aborted result for that call id); None when nothing is left."""

    def opener(self, line: int) -> Message:
        """The user message put before an assistant first message."""

    #: Whether two messages of one role in a row are combined into one (Anthropic).
    combines_turns: bool

    def combined(self, first: Message, second: Message) -> Message:
        """One message holding the content of `first`, then `second` (the same role)."""


# Enum members as plain names: in Python 3.11 `Role.TOOL` is a slow attribute lookup, and
# `repair` asks several for every message read.
_TOOLS, _SYSTEM, _TOOL, _USER, _ASSISTANT = Role.TOOLS, Role.SYSTEM, Role.TOOL, Role.USER, Role.ASSISTANT


#: Where a message a repair rebuilt (combined, reordered) keeps the message(s) it was made from,
#: first the one whose place it takes (a reader maps its calls through it, the library its object).
MADE_FROM = "made_from"


def repair(
    messages: Iterable[Message],
    writer: Writer | None,
    path: str,
    repairs: list[str],
    open_end: list[str] | None = None,
    *,
    started: bool = False,
) -> Iterator[Message]:
    """The messages as their provider accepts them (lazy): nothing empty, turns combined where
    the dialect combines them, every call answered once by results right after it. Why the
    log looks still being written goes to `open_end`. (`writer` None: only the first steps,
    for a doctest.) `started`: the messages continue a conversation (a piece of a log read on
    its own, `formats.log_pieces`), so the first is no opening message."""
    open_end = [] if open_end is None else open_end
    stream = _sendable(messages, path, repairs, open_end)
    if writer is None:
        return stream
    if writer.combines_turns:
        stream = _combined(stream, writer, path, repairs)
    if getattr(writer, "pairs_by_id", False):  # (adds no opening message: nothing to start)
        stream = _answered_anywhere(stream, writer, path, repairs, open_end)
    else:
        stream = _answered(stream, writer, path, repairs, open_end, started)
    if writer.combines_turns:  # a message dropped above may leave two turns of one role side by side
        stream = _combined(stream, writer, path, repairs)
    # A result dropped above (no call before it) may leave an unfinished reply last again.
    return _open_reply_left_out(stream, path, repairs, open_end)


def _sendable(messages: Iterable[Message], path: str, repairs: list[str], open_end: list[str]) -> Iterator[Message]:
    """The messages with what reading repaired reported, empty ones dropped, and the reply
    being written at the end left out."""
    held: Message | None = None  # the last conversation message, held until the next arrives
    for message in messages:
        if message.repaired:
            repairs.extend(f"{path}:{message.line}: {what}" for what in message.repaired)
        role = message.role
        if role is not _USER and role is not _ASSISTANT:
            # An empty message before a result or a system message is dropped too: kept, it was
            # dropped when the payload was read again (the read-back 4 tokens smaller than
            # promised, a refit other bytes: 2 of 6,500 fuzz cases).
            if held is not None and _not_empty(held, path, repairs):
                yield held
            held = None
            yield message
            continue
        if held is not None and _not_empty(held, path, repairs):
            yield held
        held = message
    if held is not None and not _unfinished(held, path, repairs, open_end) and _not_empty(held, path, repairs):
        yield held


def _open_reply_left_out(
    messages: Iterable[Message], path: str, repairs: list[str], open_end: list[str]
) -> Iterator[Message]:
    """The messages, but a last reply that is not finished yet (`_unfinished`)."""
    held: Message | None = None
    for message in messages:
        if held is not None:
            yield held
        held = message
    if held is not None and not _unfinished(held, path, repairs, open_end):
        yield held


def _unfinished(message: Message, path: str, repairs: list[str], open_end: list[str]) -> bool:
    """Whether the last message is a reply being written (only thinking yet), reported so: the
    request it answers is not made yet, and the payload's reading leaves it out as well."""
    if message.role is not _ASSISTANT or not all(part.kind is PartKind.THINKING for part in message.parts):
        return False
    repairs.append(
        f"{path}:{message.line}: the last reply is not finished (only blank text or thinking "
        "is written yet): left out, as a request not yet made"
    )
    open_end.append("its last reply is being written")
    return True


def _not_empty(message: Message, path: str, repairs: list[str]) -> bool:
    """Whether a message has something to send; an empty one is reported as dropped."""
    if message.parts:
        return True
    repairs.append(f"{path}:{message.line}: dropped an empty {message.role.value} message")
    return False


def _combined(messages: Iterable[Message], writer: Writer, path: str, repairs: list[str]) -> Iterator[Message]:
    """Two user (or assistant) messages in a row as one, as the Messages API combines them."""
    held: Message | None = None
    for message in messages:
        if held is not None and message.role is held.role and (message.role is _USER or message.role is _ASSISTANT):
            repairs.append(
                f"{path}:{message.line}: two {message.role.value} messages in a row; combined "
                "this one into the one before, as the API combines them"
            )
            held = writer.combined(held, message)
            continue
        if held is not None:
            yield held
        held = message
    if held is not None:
        yield held


def _answered(
    messages: Iterable[Message],
    writer: Writer,
    path: str,
    repairs: list[str],
    open_end: list[str],
    started: bool = False,
) -> Iterator[Message]:
    """The messages with every call answered once, by results right after it (lazy)."""
    open_calls: list[str] = []  # calls of the last assistant message not yet answered
    answered: set[str] = set()
    call_line = 0
    for message in messages:
        role = message.role
        if role is _TOOLS or message.pinned or (role is _SYSTEM and (writer.results_in_user or not open_calls)):
            yield message  # (a pinned message stands where the agent put it, even between a call and its result)
            continue
        if not started:
            started = True
            if role is _ASSISTANT and writer.user_first:
                repairs.append(
                    f"{path}:{message.line}: the conversation starts with an assistant "
                    "message; added a constant user message before it"
                )
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
        open_end.append("its last calls have no results yet")
        yield from _answer(open_calls, call_line, 0, writer, path, repairs)


def _answered_anywhere(
    messages: Iterable[Message], writer: Writer, path: str, repairs: list[str], open_end: list[str]
) -> Iterator[Message]:
    """The messages with every call answered once, wherever its result stands after it (the
    Responses API pairs a call and its output by id: Codex may send an item between them). A
    result with no call before it, or a second one, is dropped; calls never answered are
    answered at the end, where the API still pairs them."""
    open_calls: dict[str, int] = {}  # call id -> the line of its assistant message
    answered: set[str] = set()
    for message in messages:
        role = message.role
        if role is _TOOL:
            call_id = message.parts[0].call_id if message.parts else ""
            if open_calls.pop(call_id, None) is not None:
                answered.add(call_id)
                yield message
            else:
                what = "a second result" if call_id in answered else "a result with no call before it"
                repairs.append(f"{path}:{message.line}: dropped {what} (call {call_id!r})")
            continue
        if role is _ASSISTANT:
            open_calls.update((call_id, message.line) for call_id in message.call_ids)
        yield message
    if open_calls:
        open_end.append("its last calls have no results yet")
        for line in dict.fromkeys(open_calls.values()):
            calls = [call_id for call_id, at in open_calls.items() if at == line]
            yield from _answer(calls, line, 0, writer, path, repairs)


def _answer(
    calls: list[str], call_line: int, before: int, writer: Writer, path: str, repairs: list[str]
) -> list[Message]:
    where = f"before line {before}" if before else "yet at the end of the log (still being written?)"
    for call_id in calls:
        repairs.append(
            f"{path}:{call_line}: call {call_id!r} has no result {where}; answered it with an aborted result"
        )
    return writer.answers(calls, call_line)


def _user(message: Message, calls: list[str], writer: Writer, path: str, repairs: list[str]) -> Message | None:
    """A user message whose results answer exactly `calls`, first and in call order."""
    kept: dict[str, int] = {}
    others: list[int | str] = []
    for i, part in enumerate(message.parts):
        if part.kind is not PartKind.TOOL_RESULT:
            others.append(i)
        elif part.call_id in kept and getattr(writer, "takes_second_results", False):
            others.append(i)  # sent twice, as the agent sends it (Gemini CLI on resume): counted twice
        elif part.call_id in kept:
            repairs.append(f"{path}:{message.line}: dropped a second result (call {part.call_id!r})")
        elif part.call_id not in calls:
            repairs.append(f"{path}:{message.line}: dropped a result with no call before it (call {part.call_id!r})")
        else:
            kept[part.call_id] = i
    missing = [c for c in calls if c not in kept]
    for call_id in missing:
        repairs.append(f"{path}:{message.line}: call {call_id!r} has no result; answered it with an aborted result")
    order: list[int | str] = [kept.get(c, c) for c in calls] + others
    if order == list(range(len(message.parts))):
        return message
    if not missing and len(order) == len(message.parts) and not getattr(writer, "results_in_order", True):
        return message  # every result answers its call where it stands
    if not missing and len(order) == len(message.parts):
        repairs.append(f"{path}:{message.line}: moved tool results before the other content, in call order")
    return writer.reorder(message, order)


# --- what a message must not carry --------------------------------------------------------------


def cleaned(value: dict[str, Any], dialect: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A message (request JSON) without what its API refuses in it, and what was removed: keys
    the API does not accept, empty and whitespace-only text blocks (Anthropic: of its content;
    OpenAI: parts of a content list). `value` itself when nothing is to be removed; a message
    left with no content at all has `content` "" (or, an OpenAI assistant's with tool calls,
    null), and is dropped by `repair`. A system message is left as it is.

    >>> cleaned({"role": "assistant", "content": [{"type": "text", "text": "\\n\\n"},
    ...          {"type": "text", "text": "Done."}], "ts": 1}, "anthropic")  # doctest: +NORMALIZE_WHITESPACE
    ({'role': 'assistant', 'content': [{'type': 'text', 'text': 'Done.'}]},
     ("removed the key the API refuses: 'ts'", 'dropped 1 empty or whitespace-only text block'))
    """
    if value.get("role") in ("system", "developer"):
        return value, ()
    notes = []
    extra = unknown_keys(value, dialect)
    if extra:
        notes.append(
            f"removed the key{'s' if len(extra) > 1 else ''} the API refuses: " + ", ".join(repr(k) for k in extra)
        )
        value = {k: v for k, v in value.items() if k not in extra}
    content = value.get("content")
    if isinstance(content, str) and dialect == "anthropic" and content and not content.strip():
        notes.append("dropped its whitespace-only text")
        value = {**value, "content": ""}
    elif isinstance(content, list):
        kept = [block for block in content if not is_blank_text(block)]
        if len(kept) < len(content):
            dropped = len(content) - len(kept)
            notes.append(f"dropped {dropped} empty or whitespace-only text block{'s' if dropped > 1 else ''}")
            new_content: list[Any] | str | None = kept
            if not kept and dialect == "openai":
                new_content = None if value.get("tool_calls") else ""
            value = {**value, "content": new_content}
    return value, tuple(notes)
