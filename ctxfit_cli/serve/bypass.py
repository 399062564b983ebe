"""The fast path: a request that provably needs no fitting goes on without crossing to a worker.

An agent's next request is its last one with a message or two appended. When a worker fitted a
conversation's request and changed nothing (no result cleared, no message left out), it hands
back a `Mark` (`fitting.mark`): where the conversation array's last element ends in that body
(and where its newest few start), the count it fitted the request to, the budget, and the most
tokens one byte of an appended message can add to its count (`per_byte` of the request's
counter, times the most an estimated token can weigh once one more reply is learned,
`Session.growth_weight`). Once the provider answered that request 200, the proxy keeps the
mark beside the body (`Passage`). The conversation's next request goes on as the agent's own
bytes, in the proxy's own process, only if all of this holds (`Bypass.judge`):

- the same client (`owner.py`'s digest: credential and named conversation), the same path,
  window header and dialect, its body sent uncompressed;
- its body is the last one up to the end of its last element, then ',' and whole JSON values
  (the appended elements, parsed by orjson: a few hundred bytes), then the last one's bytes
  after that element unchanged (or the last one's newest few elements, up to `MOVED`, differ
  in nothing the provider counts: agents move their cache markers to the newest messages at
  every step, `moved`): so everything outside the array (system prompt, tools, schemas,
  model, max_tokens: the fixed part an anchor is bound to, DESIGN §15) is byte for byte the same
  (or the same JSON with an object's keys in another order, as Codex writes its metadata:
  `same_rest`), and the earlier elements are too (two memcmp, no parse of the body);
- the appended elements hold no image, document, file or audio (counted from their headers,
  not their bytes) and no empty text (which the provider refuses: the worker's line says so);
  a float may be counted longer than it came (`1e5` as `100000.0`): each adds its longest repr
  to the bytes the bound is taken over;
- an upper bound of the request's count is within the budget: the worker's count (or the
  provider's count of that request, when higher and plausible, `core.anchor.implausible`) plus
  the mark's tokens per byte × every byte appended since.

Why that is what the worker would have done. The worker forwards a body unchanged unless its
count passes the budget (`core.fitting.fitter`: only then does it clear or leave out): its count
of the grown request is the count it had plus each new message's estimate, or, once a reply
anchored it, that reply's count plus the estimate of what came since times the learned growth
ratio's high end (`core.anchor`), which one more reply can raise at most to
`GrowthRatio.next_high` (only the reply to the request the worker fitted anchors it: the worker
sees no other until its next fit). A message's estimate is at most `per_byte` tokens per byte
of its JSON: every character of its text is at least one byte of it (more in UTF-8 outside
ASCII; escapes only lengthen the JSON), and the per-message and per-block framing is paid for
by the element's own keys (tests/test_proxy_bypass.py checks the whole bound through the
worker itself, on generated messages, for every counter the proxy picks). No repair is
skipped: a worker writes a body back (repairs and all) only when it clears or leaves out,
which the bound rules out; a body it cannot fit it forwards unchanged (fail open), as the fast
path does.

A passage lasts while its replies are 200: any other status (a "prompt too long" refusal above
all, whose lesson the worker must apply to the next attempt, `refusals.py`) drops it, and the
conversation's next request goes to its worker (a refusal of a fast-pathed request is learned as
one of the worker's: its next attempt is fitted tighter, by at least as much, `Passage.least`).
The worker's warm state stays right: it is sent
the next body against the last one it saw (`bases.py`), and reads the steps it did not see as
one larger growth. A worker's own fit of a request sets the passage afresh.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import NamedTuple

import orjson

from .limits import Limits

#: Content whose tokens are not bounded by its bytes (an image's come from its size in pixels):
#: block types, and the keys Gemini names them by.
UNBOUNDED_TYPES = frozenset(
    {"image", "document", "image_url", "input_image", "input_file", "input_audio", "file", "audio"}
)
UNBOUNDED_KEYS = frozenset({"inlineData", "inline_data", "fileData", "file_data", "image_url", "input_audio"})
#: Least UTF-8 bytes of one character of each of the seed rule's groups: ASCII, CJK (every CJK
#: block is past U+0800), other (past U+007F).
GROUP_BYTES = (1, 3, 2)
#: How many of a conversation's newest elements may differ from the last body's in what the
#: provider does not count (moved cache markers): Anthropic takes at most 4 markers.
MOVED = 4
#: The longest shortest-repr of a float orjson writes (`-2.2250738585072014e-308`).
FLOAT_CHARS = 24


class Mark(NamedTuple):
    """What a worker hands back with a request it forwarded unchanged (`fitting.mark`)."""

    #: Offset just past the conversation array's last element in the body, and where each of
    #: its last `MOVED` elements starts (oldest first).
    end: int
    starts: tuple[int, ...]
    #: The count the worker fitted the request to.
    tokens: int
    budget: int
    #: The most tokens one byte of an appended element can add to the worker's count: `per_byte`
    #: of its counter times the most one estimated token can weigh (`Session.growth_weight`).
    per_byte: float


def per_byte(counter: object) -> float | None:
    """The most tokens one byte of a message's JSON costs by `counter`'s estimate (None: not
    bounded here: no fast path). A profile: its dearest character per least byte of a character
    of its class, a character costing its class's tokens and at most one run start (a run starts
    at a character of its kind: an ASCII class's own kind, `ASCII_RUN_KIND`; any kind, the
    dearest, for the others); the seed rule: ¼ per ASCII byte, 1 per CJK character, ½ per other.
    Never under 1: a message's and a block's framing (4 tokens, a profile's per-call tokens, the
    rounding of each group) is paid for by its keys' bytes at that."""
    from ..counters.char_classes import ASCII_RUN_KIND
    from ..counters.seed import SEED

    if counter is SEED:
        return 1.0
    rates, runs, groups = (getattr(counter, name, None) for name in ("rates", "runs", "script_groups"))
    if not isinstance(rates, tuple) or not isinstance(runs, tuple) or not isinstance(groups, tuple):
        return None
    dearest_run = max(runs, default=0.0)

    def most(i: int, least: int) -> float:
        run = (runs[ASCII_RUN_KIND[i]] if i in ASCII_RUN_KIND else 0.0) if least == 1 else dearest_run
        return (1 / rates[i] + run) / least

    dearest = max(most(i, least) for members, least in zip(groups, GROUP_BYTES) for i in members if rates[i])
    return max(dearest, 1.0)


class Passage(NamedTuple):
    """A conversation's last body that went on, and what bounds its next request's count."""

    #: Whose, where and how: owner digest, path, window header, dialect.
    who: tuple
    body: bytes
    #: Offset just past the conversation array's last element in `body`, and where each of its
    #: last `MOVED` elements starts, oldest first (fewer, or none, where it could not be proved).
    end: int
    starts: tuple[int, ...]
    #: The worker's count of its last fitted request (or the reply's, if higher and plausible).
    tokens: int
    #: Bytes appended since that request.
    grown: int
    #: At most the worker's count of any request grown from that one (its count, or the reply's
    #: if lower): what a refusal of one is tightened by (`Proxy._learn`).
    least: int
    #: The budget the worker fitted that request to (tightened after a refusal), and its window.
    limits: Limits
    per_byte: float
    #: The conversation's key, the worker holding it and the ticket of its last fit there.
    key: str
    worker: int
    ticket: int

    def bound(self, grown: int | None = None) -> int:
        """An upper bound of the count the worker would give the request with `grown` bytes appended."""
        grown = self.grown if grown is None else grown
        return self.tokens + math.ceil(self.per_byte * grown)


class Bypass:
    """The passages of the conversations the proxy has seen, by route, within `limit` bytes of
    bodies (least recently used dropped first)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.held = limit, 0
        self._passages: OrderedDict[int, Passage] = OrderedDict()

    def judge(self, route: int, who: tuple, body: bytes) -> Passage | None:
        """The passage `body` takes if it provably needs no fitting (to be `passed` once its
        reply is 200), or None: it goes to its worker."""
        passage = self._passages.get(route)
        if passage is None or passage.who != who:
            return None
        old, end = passage.body, passage.end
        tail = len(old) - end
        if len(body) <= len(old) + 1 or not same_rest(memoryview(old)[end:], memoryview(body)[len(body) - tail :]):
            return None
        if body.startswith(memoryview(old)[:end]):  # the last body, elements appended
            if body[end : end + 1] != b",":
                return None
            start, found = end + 1, appended_elements(memoryview(body)[end + 1 : len(body) - tail])
            elements, extra = found if found is not None else (None, 0)
            appended, grown = elements, len(body) - len(old) + extra
        else:  # the last elements changed in what the provider does not count (moved cache markers)?
            found_moved = moved(old, passage.starts, end, body, len(body) - tail)
            start, elements, kept = found_moved if found_moved is not None else (0, None, 0)
            appended = elements[kept:] if elements is not None and bounded(elements[kept:]) else None
            grown = len(orjson.dumps(appended)) if appended else 0  # (its compact JSON: as the worker counts it)
        if not appended or elements is None or passage.bound(passage.grown + grown) > passage.limits.budget:
            return None
        stop = len(body) - tail
        earlier = tuple(at for at in passage.starts if at < start)  # (the bytes before `start` are the old ones)
        starts = (earlier + element_starts(body, start, stop, elements))[-MOVED:]
        return passage._replace(body=body, end=stop, starts=starts, grown=passage.grown + grown)

    def passed(self, route: int, passage: Passage, *, unless_replaced: bool = False) -> None:
        """`passage`'s request is answered 200: the conversation's next one is judged against it
        (`unless_replaced`: only if the route's passage is still this request's, another body of
        it, or none: a newer request's stays)."""
        held = self._passages.get(route)
        if unless_replaced and held is not None and held.body is not passage.body:
            return
        self.drop(route)
        self._passages[route] = passage
        self.held += len(passage.body)
        while self.held > self.limit and self._passages:
            _, dropped = self._passages.popitem(last=False)
            self.held -= len(dropped.body)

    def anchored(self, passage: Passage, prompt: int) -> Passage:
        """`passage` (a worker's fit, not passed yet) with the provider's plausible count of its
        request: the worker counts what follows from it from now on."""
        if passage.grown:
            return passage  # (a fast-pathed request's reply: the worker never counts it)
        return passage._replace(tokens=max(passage.tokens, prompt), least=min(passage.least, prompt))

    def drop(self, route: int) -> None:
        """The conversation's next request goes to its worker (a refusal, an error, a fit that changed it)."""
        dropped = self._passages.pop(route, None)
        if dropped is not None:
            self.held -= len(dropped.body)

    def __len__(self) -> int:
        return len(self._passages)


def opened(fitted_mark: tuple, who: tuple, body: bytes, limits: Limits, key: str, worker: int, ticket: int) -> Passage:
    """The passage a worker's fit of `body` opens, from the mark it handed back."""
    end, starts, tokens, _budget, rate = Mark(*fitted_mark)
    return Passage(who, body, end, tuple(starts), tokens, 0, tokens, limits, rate, key, worker, ticket)


def same_rest(old: memoryview, new: memoryview) -> bool:
    """Whether what follows the conversation array in two bodies (its `]`, then the rest of the
    request: the fixed part) is the same: the same bytes, or, where they differ, the same JSON
    with its objects' keys in another order, compared type-strictly (canonical JSON, keys
    sorted: `1`, `1.0` and `true` stay apart). Codex writes its `client_metadata`, a map, in
    another order at every request, so no Codex request matched byte for byte. Anything not
    read as the rest of a request object (a nested array: Code Assist's) is not the same."""
    if old == new:
        return True
    if len(old) != len(new) or new[:1] != b"]":
        return False
    try:
        before, after = (orjson.loads(b"".join((b'{"":[', rest))) for rest in (old, new))
    except orjson.JSONDecodeError:
        return False
    return orjson.dumps(before, option=orjson.OPT_SORT_KEYS) == orjson.dumps(after, option=orjson.OPT_SORT_KEYS)


def appended_elements(data: memoryview) -> tuple[list, int] | None:
    """The elements appended to a conversation array (`data`: what follows the ',' after its
    last element) and the bytes their floats may add to their count (`float_bytes`), or None
    when they are not whole JSON values whose count their bytes bound."""
    try:
        elements = orjson.loads(b"".join((b"[", data, b"]")))
    except orjson.JSONDecodeError:
        return None
    if not elements or not all(isinstance(e, dict) for e in elements):
        return None
    extra = float_bytes(elements)
    return None if extra is None else (elements, extra)


def moved(old: bytes, starts: tuple[int, ...], end: int, body: bytes, stop: int) -> tuple[int, list, int] | None:
    """Where `body` and `old` part, when they part within `old`'s last `MOVED` elements: the
    start of the first element that differs, `body`'s elements from there to its array's end
    (`stop`), and how many of them are `old`'s, each changed only in what the provider does not
    count (`core.uncounted`: the same text, so the same estimate, and the worker's anchor holds).
    Agents move their `cache_control` markers to the newest messages at every step: Claude Code
    the last one, OpenCode (the AI SDK's) the last two. None otherwise."""
    parted = next((at for at in reversed(starts) if at >= 0 and body.startswith(memoryview(old)[:at])), None)
    if parted is None:
        return None
    try:
        elements = orjson.loads(b"".join((b"[", memoryview(body)[parted:stop], b"]")))
        before = orjson.loads(b"".join((b"[", memoryview(old)[parted:end], b"]")))
    except orjson.JSONDecodeError:
        return None
    kept = len(before)
    if len(elements) <= kept or not all(isinstance(e, dict) for e in elements):
        return None
    from ..core.uncounted import counted_bytes

    for now, then in zip(elements, before):
        if not isinstance(then, dict) or counted_bytes(orjson.dumps(now)) != counted_bytes(orjson.dumps(then)):
            return None
    return parted, elements, kept


def element_starts(body: bytes, start: int, end: int, elements: list) -> tuple[int, ...]:
    """Where each of the last `MOVED` of `elements` (parsed from `body[start:end]`) starts in
    `body`, oldest first; () when it cannot be proved: each one's compact JSON ends what is left
    of the span after a ',' (the first: at `start`), and what comes before the earliest of them
    parses as the others (a split at a ',' inside a string or a nested value leaves one side
    invalid)."""
    found: list[int] = []
    for index in range(len(elements) - 1, max(len(elements) - 1 - MOVED, -1), -1):
        if index == 0:
            if end - start != len(orjson.dumps(elements[0])) or not body.startswith(orjson.dumps(elements[0]), start):
                return ()
            return (start, *reversed(found))
        written = orjson.dumps(elements[index])
        at = end - len(written)
        if at <= start or body[at - 1 : at] != b"," or not body.startswith(written, at):
            return ()
        found.append(at)
        end = at - 1
    try:
        others = orjson.loads(b"".join((b"[", memoryview(body)[start:end], b"]")))
    except orjson.JSONDecodeError:
        return ()
    return tuple(reversed(found)) if len(others) == len(elements) - len(found) else ()


def bounded(value: object) -> bool:
    """Whether `value` holds no content whose count its bytes do not bound (an image, a
    document, a file, audio) and no empty text (which the provider refuses: the worker's log
    line names it, DESIGN §13)."""
    return float_bytes(value) is not None


def float_bytes(value: object) -> int | None:
    """The bytes `value`'s floats may add when the worker counts them as JSON (`json_text`:
    each as its shortest repr, up to `FLOAT_CHARS` characters, though written in as few as 3:
    `1e5` is counted as `100000.0`), or None when `value` is not `bounded`. Codex's items
    carry floats (a `create_time` in their metadata)."""
    stack, floats = [value], 0
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            kind, said = item.get("type"), item.get("text")
            if (isinstance(kind, str) and kind in UNBOUNDED_TYPES) or not UNBOUNDED_KEYS.isdisjoint(item):
                return None
            if isinstance(said, str) and not said.strip():  # (refused by the provider: the worker says so)
                return None
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float):
            floats += 1
    return floats * FLOAT_CHARS
