"""What one message costs under a counter: its estimate, by kind of content.

The rounding rule, the same everywhere: inside one message, the characters of each *kind* of
content (user text, assistant text, thinking, tool calls) are summed per writing system, and
each sum is rounded up once (`Counter.tokens`); each tool result is rounded on its own, so that
clearing one frees an exact number of tokens. A message's estimate is the sum of those, plus its
images, plus `MESSAGE_OVERHEAD` and the counter's whole-token framing per tool call or result
(`block_framing`). Estimates therefore add up across messages exactly, and each message is
estimated once per counter (the result is kept on the immutable message).

>>> from ctxfit_cli.core.model import Message, Part, PartKind, Role
>>> m = Message(Role.USER, (Part(PartKind.TEXT, "Привет, мир"),), raw=b"")
>>> message_cost(m).tokens  # ceil(2/4) + ceil(9/2) + 4
10
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import add as _add
from typing import NamedTuple

from ..counters.seed import SEED, Counter, Vector, naive_tokens, script_counts
from .model import Message, Part, PartKind, Role

#: Tokens added to every message for its role and framing. Chat formats wrap each message in a
#: few special tokens (OpenAI documents 3 per message plus 3 to prime the reply); 4 errs high.
MESSAGE_OVERHEAD = 4

KINDS = (
    "system",
    "tools",
    "unlogged",
    "user_text",
    "assistant_text",
    "thinking",
    "tool_calls",
    "tool_results",
    "images",
    "overhead",
)


class MessageCost(NamedTuple):
    """The estimate of one message (immutable; a NamedTuple: one is made per message read)."""

    tokens: int
    #: Tokens per kind of content (see `KINDS`); adds up to `tokens`.
    by_kind: dict[str, int]
    #: The unrounded vector of each kind of content (the tool results summed), so the costs of
    #: messages that are joined into one can be combined exactly without their text
    #: (`merged_cost`).
    vectors: dict[str, Vector]
    #: Seed-rule characters and tokens per script (ascii, cjk, other), for the per-script
    #: report (filled under the seed counter only; reports take them from the seed cost).
    #: Tokens are rounded per kind, like the estimate, so they add up to the text's tokens.
    script_chars: Vector
    script_tokens: Vector
    chars: int
    #: What chars ÷ 4 would say for the same message (same overhead and images).
    naive: int
    #: Tokens of each tool result in the message, in order (each result is rounded on its own,
    #: images inside it included), so clearing one saves an exact, additive amount.
    results: tuple[int, ...] = ()
    #: Image and document tokens: all of them, and those inside tool results.
    images: int = 0
    result_images: int = 0
    #: Tokens of the counter's per-block framing (`block_framing`), part of ``overhead``.
    framing: int = 0


def _kind_of(role: Role, kind: PartKind) -> str:
    """Which kind of content a part counts as, given the role of its message."""
    if role is Role.SYSTEM:
        return "system"
    if kind is PartKind.TOOL_RESULT:
        return "tool_results"  # each is rounded alone, whoever carries it
    if role is Role.TOOLS:
        return "tools"
    if kind is PartKind.TOOL_CALL:
        return "tool_calls"
    if kind is PartKind.THINKING:
        return "thinking"
    if kind is PartKind.IMAGE:
        return "images"
    return "assistant_text" if role is Role.ASSISTANT else "user_text"


#: role -> part kind -> kind of content: one table lookup per part read.
_KIND_OF = {role: {kind: _kind_of(role, kind) for kind in PartKind} for role in Role}


def block_framing(counter: Counter) -> dict[str, int]:
    """Tokens a counter adds per block of each kind of content (e.g. ``{"tool_calls": 52}``),
    on top of `MESSAGE_OVERHEAD`: a model's prompt format wraps every tool call and result in
    tags of its own, which no text measure sees. Empty for the seed rule and most counters.

    >>> block_framing(SEED)
    {}
    """
    return getattr(counter, "framing", None) or {}


def block_counts(messages: Iterable[Message]) -> dict[str, int]:
    """How many parts of each kind of content the messages hold, as the estimate frames them
    (`block_framing` is per block of these kinds).

    >>> block_counts([Message(Role.ASSISTANT, (Part(PartKind.THINKING, "hm"), Part(PartKind.TEXT, "ok")), b"")])
    {'thinking': 1, 'assistant_text': 1}
    """
    counts: dict[str, int] = {}
    for message in messages:
        kinds = _KIND_OF[message.role]
        for part in message.parts:
            kind = kinds[part.kind]
            counts[kind] = counts.get(kind, 0) + 1
    return counts


def part_texts(part: Part) -> tuple[str, ...]:
    """Every string of a part that is sent to the model and so counted."""
    return tuple(s for s in (part.tool, part.text, part.call_id) if s)


def message_cost(message: Message, counter: Counter = SEED) -> MessageCost:
    """The estimate of one message under `counter`, computed once and kept on the message.

    >>> m = Message(Role.ASSISTANT, (Part(PartKind.TEXT, "日本語"),), raw=b"")
    >>> message_cost(m).tokens, message_cost(m).by_kind["assistant_text"]
    (7, 3)
    """
    cached = message.memo.get(counter.name)
    if cached is None:
        cached = message.memo[counter.name] = parts_cost(message.role, message.parts, counter)
    return cached


def parts_cost(role: Role, parts: tuple[Part, ...], counter: Counter = SEED) -> MessageCost:
    """The estimate of a message that has these parts (not cached)."""
    return _seed_cost(role, parts) if counter is SEED else _compute_cost(role, parts, counter)


def merged_cost(costs: list[MessageCost], counter: Counter = SEED) -> MessageCost:
    """The estimate of one message holding the parts of messages of the same role, in order,
    computed from their estimates alone: the same as `parts_cost` of all their parts.

    >>> one = parts_cost(Role.USER, (Part(PartKind.TEXT, "abc"),))
    >>> merged_cost([one, one]).tokens  # ceil(6/4) + 4, not 2 * (ceil(3/4) + 4)
    6
    """
    vectors: dict[str, Vector] = {}
    for cost in costs:
        for kind, vector in cost.vectors.items():
            vectors[kind] = tuple(map(_add, vectors[kind], vector)) if kind in vectors else vector
    return _finish(
        vectors,
        [r for c in costs for r in c.results],
        sum(c.images for c in costs),
        sum(c.result_images for c in costs),
        sum(c.chars for c in costs),
        counter,
        sum(c.framing for c in costs),
    )


def _compute_cost(role: Role, parts: tuple[Part, ...], counter: Counter) -> MessageCost:
    """Any counter: every string measured, summed per kind, rounded once per kind."""
    measure = counter.measure
    kinds = _KIND_OF[role]
    per_block = block_framing(counter)
    vectors: dict[str, Vector] = {}
    results: list[int] = []
    image_tokens = chars = result_images = framing = 0
    for part in parts:
        kind = kinds[part.kind]
        image_tokens += part.image_tokens
        framing += per_block.get(kind, 0)
        own = None
        for text in (part.tool, part.text, part.call_id):
            if text:
                chars += len(text)
                own = measure(text) if own is None else tuple(map(_add, own, measure(text)))
        if kind == "tool_results":
            results.append((counter.tokens(own) if own else 0) + part.image_tokens)
            result_images += part.image_tokens
        if own is not None:
            vectors[kind] = tuple(map(_add, vectors[kind], own)) if kind in vectors else own
    return _finish(vectors, results, image_tokens, result_images, chars, counter, framing)


def seed_cost_read_off(message: Message, counter: Counter) -> MessageCost:
    """`message_cost(message, SEED)`, each non-ASCII string's counts read off its vector under
    `counter` when its vectors hold them (a profile's: `script_groups`), and kept as
    `message_cost` keeps it. For a counter whose vectors are already at hand (a log's, measured
    on other cores: `formats.measures`), so the seed rule does not measure every text again."""
    cached = message.memo.get(SEED.name)
    if cached is None:
        groups = getattr(counter, "script_groups", None)
        scripts = script_counts if groups is None else _read_off(counter, groups)
        cached = message.memo[SEED.name] = _seed_cost(message.role, message.parts, scripts)
    return cached


def script_sums(vector: Vector, groups: tuple[tuple[int, ...], ...]) -> tuple[int, int, int]:
    """The seed rule's (ascii, cjk, other) characters in a vector whose components `groups`
    sorts into the three (a profile's `script_groups`: exact, every class lies in one group)."""
    ascii_of, cjk_of, other_of = groups
    return sum([vector[i] for i in ascii_of]), sum([vector[i] for i in cjk_of]), sum([vector[i] for i in other_of])


def _read_off(counter: Counter, groups: tuple[tuple[int, ...], ...]) -> Callable[[str], tuple[int, int, int]]:
    """`script_counts` from `counter`'s vectors."""
    measure = counter.measure
    return lambda text: script_sums(measure(text), groups)


def _seed_cost(
    role: Role, parts: tuple[Part, ...], scripts: Callable[[str], tuple[int, int, int]] = script_counts
) -> MessageCost:
    """`_compute_cost` under the seed rule, written for speed: it runs for every message of
    every transcript read. Plain integers; a tool name and call id are measured together (the
    counts of a concatenation are the sums of the counts); ASCII strings answered inline, the
    others by `scripts`."""
    kinds = _KIND_OF[role]
    vectors: dict[str, Vector] = {}
    results: list[int] = []
    image_tokens = chars = result_images = 0
    for part in parts:
        kind = kinds[part.kind]
        image_tokens += part.image_tokens
        text, names = part.text, part.tool + part.call_id
        if text or names:
            chars += len(text) + len(names)
            a, c, o = (len(text), 0, 0) if text.isascii() else scripts(text)
            if names.isascii():
                a += len(names)
            else:
                x, y, z = scripts(names)
                a, c, o = a + x, c + y, o + z
            vector = vectors.get(kind)
            vectors[kind] = (a, c, o) if vector is None else (vector[0] + a, vector[1] + c, vector[2] + o)
        else:
            a = c = o = 0
        if kind == "tool_results":
            results.append(-(-a // 4) + c + -(-o // 2) + part.image_tokens)
            result_images += part.image_tokens
    return _finish(vectors, results, image_tokens, result_images, chars, SEED)


def _finish(
    vectors: dict[str, Vector],
    results: list[int],
    image_tokens: int,
    result_images: int,
    chars: int,
    counter: Counter,
    framing: int = 0,
) -> MessageCost:
    """Round each kind once and put the estimate together."""
    by_kind: dict[str, int] = {}
    script_chars = script_tokens = (0, 0, 0)
    if counter is SEED:  # the seed rule inline, per-script sums on the way (every message)
        a = c = o = ta = to = 0
        for kind, (x, y, z) in vectors.items():
            tx, tz = -(-x // 4), -(-z // 2)
            if kind != "tool_results":
                by_kind[kind] = tx + y + tz
            a, c, o, ta, to = a + x, c + y, o + z, ta + tx, to + tz
        script_chars, script_tokens = (a, c, o), (ta, c, to)
    else:
        for kind, vector in vectors.items():
            if kind != "tool_results":
                by_kind[kind] = counter.tokens(vector)
    if results:
        by_kind["tool_results"] = sum(results) - result_images
    if image_tokens:
        by_kind["images"] = by_kind.get("images", 0) + image_tokens
    by_kind["overhead"] = MESSAGE_OVERHEAD + framing
    naive = naive_tokens(chars) + image_tokens + MESSAGE_OVERHEAD + framing
    # Positional: this runs once per message, and keywords cost twice as much here.
    return MessageCost(
        sum(by_kind.values()),
        by_kind,
        vectors,
        script_chars,
        script_tokens,
        chars,
        naive,
        tuple(results),
        image_tokens,
        result_images,
        framing,
    )


def total_tokens(messages: Iterable[Message], counter: Counter = SEED) -> int:
    """Sum of the estimates of `messages`.

    >>> total_tokens([])
    0
    """
    return sum(message_cost(m, counter).tokens for m in messages)
