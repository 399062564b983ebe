"""Repairing a history that grows, repeating only its end (a `Session`'s step, a proxy's request).

`repair` is a pipeline of lazy stages, each holding at most the message before: the result
for the first messages of a history does not depend on what comes after them, once the stages
hold nothing that a later message could still change. That is so just before an assistant
message that follows a user message (or, OpenAI, a tool result) and that, like the message
before it, every stage passed on unchanged with nothing put between them: the message before
is flushed by the assistant one, no call is open (it answered them all, or the assistant
message would have had aborted results put before it), no turn is being combined. From such
a point, a repair started afresh (`started`: no opening message) gives what the whole repair
gives from there, so the messages and report lines before it are kept from the last step.
Each step is then paid for its new messages only, not for the thousands an agent's history
holds (the repair was 14 ms of a step of a 3,200-message history).

The report's lines must come out in the same order too: stages further down the pipeline
report on earlier messages while the first ones read later ones. So the point is taken only
where no line was reported while the few messages after it were read: every line about a
message before it was reported before the point was reached, and every later one after.
Repairs whose writer keeps state of its own (Gemini's learns call names; the Responses API
pairs calls with results anywhere later) are repeated whole.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator
from typing import Any

from .model import Message, Role
from .repair import repair

#: Messages after a restart point read with no line reported (more than the pipeline's stages
#: can hold back, so every stage has passed the point's user message on by then).
QUIET = 6
#: Restart points looked for among this many messages back (and each found among this many
#: outputs more than that): a history repaired all through is repaired whole again.
SEARCH = 64
_ASSISTANT = Role.ASSISTANT
_BEFORE = (Role.USER, Role.TOOL)


class RepairedHistory:
    """The last repair of one growing history (the messages after the leading system ones)."""

    def __init__(self, writer: Any, path: str) -> None:
        self.writer, self.path = writer, path
        self._resumable = getattr(writer, "watch", None) is None and not getattr(writer, "pairs_by_id", False)
        self._inputs: list[Message] = []
        self._body: list[Message] = []
        self._repairs: list[str] = []
        #: How many lines had been reported when each input was read.
        self._marks: list[int] = []

    def repair(self, messages: list[Message], repairs: list[str]) -> list[Message]:
        """`repair(messages, writer, path, repairs)` as a list, reading again only from the
        last point where the repair held nothing (see above)."""
        if not self._resumable:
            watch = getattr(self.writer, "watch", None)
            return list(repair(watch(messages) if watch else messages, self.writer, self.path, repairs))
        start, kept, lines = self._restart(messages)
        repairs += self._repairs[:lines]
        marks = self._marks[:start]
        body = self._body[:kept]
        body += repair(_marked(messages[start:], repairs, marks), self.writer, self.path, repairs, started=start > 0)
        self._inputs, self._body, self._repairs, self._marks = list(messages), body, list(repairs), marks
        return list(body)

    def _restart(self, messages: list[Message]) -> tuple[int, int, int]:
        """(input to read again from, outputs kept, lines kept): the last restart point of the
        previous repair that `messages` still starts with, or (0, 0, 0)."""
        inputs, marks = self._inputs, self._marks
        last = min(len(inputs), len(messages), len(marks)) - QUIET - 1
        if last < 1 or not all(map(operator.is_, inputs[: last + QUIET + 1], messages)):
            return 0, 0, 0
        for start in range(last, max(0, last - SEARCH), -1):
            before, at = inputs[start - 1], inputs[start]
            if at.role is not _ASSISTANT or before.role not in _BEFORE or before.repaired or at.repaired:
                continue
            if marks[start] != marks[start + QUIET]:
                continue
            kept = _after(self._body, before, len(inputs) - start + SEARCH)
            if kept and kept < len(self._body) and self._body[kept] is at:
                return start, kept, marks[start]
        return 0, 0, 0


def _after(body: list[Message], message: Message, within: int) -> int:
    """How many messages of `body` there are up to `message` itself, found among its last
    `within`, or 0."""
    for i in range(len(body) - 1, max(-1, len(body) - 1 - within), -1):
        if body[i] is message:
            return i + 1
    return 0


def _marked(messages: Iterable[Message], repairs: list[str], marks: list[int]) -> Iterator[Message]:
    for message in messages:
        marks.append(len(repairs))
        yield message
