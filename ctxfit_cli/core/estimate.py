"""The report of a whole transcript: its messages' estimates (`costs.py`) added up as they are
read, by kind and by writing system, with its largest messages; and reports combined."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import add as _add
from typing import Any

from ..counters.seed import SEED, Counter, Vector
from .costs import KINDS, MessageCost, message_cost, script_sums
from .model import Message, PartKind, Role


def _script_figures(message: Message, cost: MessageCost, counter: Counter) -> tuple[Vector, Vector]:
    """The seed rule's characters and tokens per writing system of a message: its estimate's own
    under the seed rule; read off the vectors `cost` (the counter's) sums per kind when the
    counter's vectors hold the seed rule's counts (a profile's: `script_groups`), as `_finish`
    makes them from the seed rule's; else from the seed rule's estimate of the message."""
    if counter is SEED:
        return cost.script_chars, cost.script_tokens
    groups = getattr(counter, "script_groups", None)
    if groups is None or SEED.name in message.memo:
        seed = message_cost(message, SEED)
        return seed.script_chars, seed.script_tokens
    a = c = o = ta = to = 0
    for vector in cost.vectors.values():
        x, y, z = script_sums(vector, groups)
        a, c, o = a + x, c + y, o + z
        ta, to = ta - (-x // 4), to - (-z // 2)
    return (a, c, o), (ta, c, to)


@dataclass(slots=True)
class TopItem:
    index: int
    role: str
    #: (tool name, call id) of each tool call or result, in order; a name is "" until known.
    calls: tuple[tuple[str, str], ...]
    tokens: int

    @property
    def tool(self) -> str:
        return ",".join(dict.fromkeys(name for name, _ in self.calls if name))

    def named(self, names: dict[str, str]) -> TopItem:
        calls = tuple((name or names.get(call_id, ""), call_id) for name, call_id in self.calls)
        return TopItem(self.index, self.role, calls, self.tokens)


@dataclass
class TranscriptEstimate:
    """Running totals over a transcript, filled one message at a time (streaming-friendly).

    `messages` counts the conversation (the system prompt and tools are reported by kind), and
    message numbers are 0-based positions in it, as `ctxfit plan` numbers them.
    """

    path: str
    format: str
    counter: Counter = SEED
    top_n: int = 10
    messages: int = 0
    tokens: int = 0
    naive_tokens: int = 0
    chars: int = 0
    by_kind: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    script_chars: list[int] = field(default_factory=lambda: [0, 0, 0])
    script_tokens: list[int] = field(default_factory=lambda: [0, 0, 0])
    _top: list[tuple[int, int, TopItem]] = field(default_factory=list, repr=False)
    _tool_names: dict[str, str] = field(default_factory=dict, repr=False)

    def add(self, message: Message) -> None:
        """Count one message; the system prompt and tool definitions are not numbered."""
        cost = message_cost(message, self.counter)
        index = self.messages
        numbered = message.pinned or message.role not in (Role.SYSTEM, Role.TOOLS)
        self.messages += numbered
        self.tokens += cost.tokens
        self.naive_tokens += cost.naive
        self.chars += cost.chars
        for kind, tokens in cost.by_kind.items():
            self.by_kind[kind] += tokens
        script_chars, script_tokens = _script_figures(message, cost, self.counter)
        self.script_chars = list(map(_add, self.script_chars, script_chars))
        self.script_tokens = list(map(_add, self.script_tokens, script_tokens))
        for part in message.parts:
            if part.kind is PartKind.TOOL_CALL and part.call_id:
                self._tool_names[part.call_id] = part.tool
        if numbered and self.top_n > 0:
            self._push_top(index, message, cost.tokens)

    def _push_top(self, index: int, message: Message, tokens: int) -> None:
        if len(self._top) >= self.top_n and (tokens, -index) <= self._top[0][:2]:
            return  # not among the largest: skip naming it
        calls = tuple(
            (p.tool or self._tool_names.get(p.call_id, ""), p.call_id)
            for p in message.parts
            if p.kind in (PartKind.TOOL_CALL, PartKind.TOOL_RESULT)
        )
        self._keep_top(TopItem(index, str(message.role), calls, tokens))

    def _keep_top(self, item: TopItem) -> None:
        entry = (item.tokens, -item.index, item)
        if len(self._top) < self.top_n:
            heapq.heappush(self._top, entry)
        elif entry[:2] > self._top[0][:2]:
            heapq.heapreplace(self._top, entry)

    def merge(self, later: TranscriptEstimate) -> None:
        """Add the estimate of the lines that follow this one's (read by another process)."""
        offset = self.messages
        self.messages += later.messages
        self.tokens += later.tokens
        self.naive_tokens += later.naive_tokens
        self.chars += later.chars
        for kind, tokens in later.by_kind.items():
            self.by_kind[kind] += tokens
        self.script_chars = list(map(_add, self.script_chars, later.script_chars))
        self.script_tokens = list(map(_add, self.script_tokens, later.script_tokens))
        for _, _, item in later._top:
            item = item.named(self._tool_names)  # calls made before `later` began
            self._keep_top(TopItem(item.index + offset, item.role, item.calls, item.tokens))
        self._tool_names.update(later._tool_names)

    @property
    def top(self) -> list[TopItem]:
        return [item for *_, item in sorted(self._top, key=lambda t: t[:2], reverse=True)]

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of one file's estimate (documented in the README)."""
        return {
            "path": self.path,
            "format": self.format,
            "counter": self.counter.name,
            "messages": self.messages,
            "tokens": self.tokens,
            "naive_tokens": self.naive_tokens,
            "naive_error": _relative_error(self.naive_tokens, self.tokens),
            "chars": self.chars,
            "by_script": _by_script(self.script_chars, self.script_tokens),
            "by_kind": dict(self.by_kind),
            "top": [{"index": t.index, "role": t.role, "tool": t.tool, "tokens": t.tokens} for t in self.top],
        }


def by_script(messages: Iterable[Message]) -> dict[str, Any]:
    """The seed rule's per-script breakdown (`by_script` of every report) of some messages,
    whichever counter made the report's totals.

    >>> from ctxfit_cli.core.model import Part
    >>> by_script([Message(Role.USER, (Part(PartKind.TEXT, "Привет"),), raw=b"")])["other"]
    {'chars': 6, 'tokens': 3, 'chars_per_token': 2.0}
    """
    costs = [message_cost(message, SEED) for message in messages]
    chars = [sum(column) for column in zip(*[cost.script_chars for cost in costs])] or [0, 0, 0]
    tokens = [sum(column) for column in zip(*[cost.script_tokens for cost in costs])] or [0, 0, 0]
    return _by_script(chars, tokens)


def _by_script(chars: list[int], tokens: list[int]) -> dict[str, Any]:
    return {
        name: {
            "chars": c,
            "tokens": t,
            "chars_per_token": round(c / t, 2) if t else None,
        }
        for name, c, t in zip(SEED.classes, chars, tokens)
    }


def _relative_error(naive: int, tokens: int) -> float | None:
    """How far chars ÷ 4 is from the estimate, as a signed share (−0.4 = 40% too low)."""
    return round((naive - tokens) / tokens, 4) if tokens else None


def combine(estimates: list[TranscriptEstimate]) -> dict[str, Any]:
    """The `total` entry: the same keys as a file, summed."""
    chars = [sum(e.script_chars[i] for e in estimates) for i in range(3)]
    tokens = [sum(e.script_tokens[i] for e in estimates) for i in range(3)]
    total = sum(e.tokens for e in estimates)
    naive = sum(e.naive_tokens for e in estimates)
    return {
        "files": len(estimates),
        "messages": sum(e.messages for e in estimates),
        "tokens": total,
        "naive_tokens": naive,
        "naive_error": _relative_error(naive, total),
        "chars": sum(e.chars for e in estimates),
        "by_script": _by_script(chars, tokens),
        "by_kind": {k: sum(e.by_kind[k] for e in estimates) for k in KINDS},
    }
