"""The caller's objects for the messages a `Session` sends, made again only where they changed.

A step of an agent loop sends what the last step sent and a few messages more, until a new
batch of results is cleared: the objects, request JSON and checks given back for the messages
sent before are the same as last time. `Answer` keeps them, flat, with where each message's
share ends, and makes only those of the messages after the first that differs from the last
step's (another message sent, or the same one from another position of the history).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from .core.growing import common_prefix, same_objects
from .core.model import Dialect, Message
from .core.validate import Checked
from .history import changed_copy, checks_of, origin


class Answer:
    """What one session gave back for its last request, by message sent."""

    def __init__(self) -> None:
        self._lead = -1
        self._origins: list[int] = []
        self._sent: tuple[Message, ...] = ()
        #: (objects, JSON values, checks) after the leading system messages and after each
        #: message sent: where each one's share of the flat lists ends.
        self._ends: list[tuple[int, int, int]] = []
        self._out: list[Any] = []
        self._values: list[dict[str, Any]] = []
        self._checks: list[Checked] = []

    def make(
        self,
        history: History,
        lead: int,
        origins: list[int],
        sent: tuple[Message, ...],
        body: Sequence[Message],
    ) -> tuple[list, list[dict], list[Checked]]:
        """The caller's objects for the messages `sent` (the history after `lead` system
        messages, `body`, as repaired: message `origins[i]` of it is sent as `sent[i]`), their
        request JSON and their checks."""
        kept = self._kept(lead, origins, sent)
        out: list[Any]
        values: list[dict[str, Any]]
        checks: list[Checked]
        if kept < 0:
            out, values, checks, ends = [], [], [], []
            for lead_position in range(lead):  # leading system messages: as the caller gave them
                history.add(history.messages[lead_position], lead_position, out, values, checks, as_given=True)
            ends.append((len(out), len(values), len(checks)))
            kept = 0
        else:
            out_end, values_end, checks_end = self._ends[kept]
            out, values, checks = self._out[:out_end], self._values[:values_end], self._checks[:checks_end]
            ends = self._ends[: kept + 1]
        messages = history.messages
        where: dict[int, int] | None = None  # the caller's position of each message read, if a repair moved them
        position: int | None
        last_origins, last_sent = self._origins, self._sent
        reusable = min(len(sent), len(last_sent)) if kept > 0 or lead == self._lead else 0
        i = kept
        while i < len(sent):
            if i < reusable and sent[i] is last_sent[i] and origins[i] == last_origins[i]:
                i = self._copy_run(i, reusable, origins, sent, out, values, checks, ends)
                continue
            index, message = origins[i], sent[i]
            position = lead + index
            if position >= len(messages) or messages[position] is not body[index]:
                where = where or {id(m): i for i, m in enumerate(messages)}
                position = where.get(id(body[index]))
                if position is None:
                    position = origin(body[index], where)
            history.add(message, position, out, values, checks)
            ends.append((len(out), len(values), len(checks)))
            i += 1
        self._lead, self._origins, self._sent, self._ends = lead, origins, sent, ends
        self._out, self._values, self._checks = out, values, checks
        return list(out), values, checks  # (the caller's list is its own)

    def _copy_run(
        self,
        start: int,
        limit: int,
        origins: list[int],
        sent: tuple[Message, ...],
        out: list[Any],
        values: list[dict[str, Any]],
        checks: list[Checked],
        ends: list[tuple[int, int, int]],
    ) -> int:
        """Copy what was given back last time for the messages from `start` on that are still
        sent as the same objects from the same positions (after a message that changed: a new
        batch of results cleared); returns where that run ends."""
        last_origins, last_sent, last_ends = self._origins, self._sent, self._ends
        end = start + 1
        while end < limit and sent[end] is last_sent[end] and origins[end] == last_origins[end]:
            end += 1
        (out_from, values_from, checks_from), (out_to, values_to, checks_to) = last_ends[start], last_ends[end]
        shift = (len(out) - out_from, len(values) - values_from, len(checks) - checks_from)
        out += self._out[out_from:out_to]
        values += self._values[values_from:values_to]
        checks += self._checks[checks_from:checks_to]
        ends += [(o + shift[0], v + shift[1], c + shift[2]) for o, v, c in last_ends[start + 1 : end + 1]]
        return end

    def _kept(self, lead: int, origins: list[int], sent: tuple[Message, ...]) -> int:
        """How many messages sent last time lead this request too, as the same objects from the
        same positions (-1: not even the leading system messages, which are made again)."""
        if lead != self._lead or not self._ends:
            return -1
        last_origins = self._origins
        return common_prefix(same_objects(sent, self._sent), lambda n: origins[:n] == last_origins[:n])


class History:
    """The caller's history as a session holds it: its objects, their request JSON, and the
    messages read from them."""

    def __init__(
        self,
        items: list[Any],
        requests: list[Any],
        starts: list[int],
        messages: list[Message],
        dialect: Dialect,
    ) -> None:
        self.items, self.requests, self.starts, self.messages, self.dialect = items, requests, starts, messages, dialect

    def end(self, message: int) -> int:
        """The item after the last one of a message."""
        return self.starts[message + 1] if message + 1 < len(self.starts) else len(self.items)

    def add(
        self,
        message: Message,
        position: int | None,
        out: list[Any],
        values: list[dict[str, Any]],
        checks: list[Checked],
        *,
        as_given: bool = False,
    ) -> None:
        """Append what is given back for one message sent, read from the caller's message at
        `position` (None: made by a repair): the caller's objects when it is theirs unchanged
        (or `as_given`), a changed copy of their object, or a dict for a message a repair made."""
        if as_given or (position is not None and message is self.messages[position] and not message.repaired):
            assert position is not None  # (theirs only with a position)
            start, end = self.starts[position], self.end(position)
            group = [r.value for r in self.requests[start:end]]
            out += self.items[start:end]
        elif position is not None:  # a changed message is one item (a cleared output, a note, a repair)
            item, value = changed_copy(self.items[self.starts[position]], message)
            group = [value]
            out.append(item)
        else:  # made by a repair (an aborted result, an opening message): a dict
            value = orjson.loads(message.raw)
            group = [value]
            out.append(value)
        values += group
        checks += checks_of(message, group, self.dialect)
