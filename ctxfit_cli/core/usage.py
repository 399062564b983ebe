"""What a log's recorded usage says: the real prompt sizes, the part the log leaves out, and
the growth of the prompt from call to call (the ground truth that counters are calibrated on).

Logs that record usage (Claude Code `message.usage`, Codex `token_count`, OpenHands
`token_usages`) give, for each model call, the model's own count of the whole prompt
(`RecordedCall.prompt_tokens`). The readers put those calls on `Transcript.calls`; this module
reads them:

- `recorded_summary`: last and peak recorded prompt, number of calls, models;
- `infer_fixed`: the *unlogged fixed part* — system prompt, tool definitions, injected context,
  none of which a Claude Code log contains — as the first recorded prompt minus the estimate of
  what precedes that call in the log. Each conversation (a compaction starts a new one) gets
  its own;
- `growth_samples`: for consecutive calls, the messages added in between (measured with a
  counter, unrounded) against the recorded growth of the prompt.

Plain data in, plain data out; nothing here prints.

>>> from ctxfit_cli.core.model import Message, Part, PartKind, RecordedCall, Role, Transcript
>>> hi = Message(Role.USER, (Part(PartKind.TEXT, "hello there"),), b"")
>>> ok = Message(Role.ASSISTANT, (Part(PartKind.TEXT, "ok"),), b"")
>>> t = Transcript("log", "claude-code", "anthropic", (hi, ok),
...                calls=[RecordedCall(1, "m1", "claude-x", 5000, 3)])
>>> infer_fixed(t).tokens  # 5000 recorded - (3 + 4) estimated
4993
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from ..counters.seed import SEED, Counter, Vector
from .anchor import Anchoring, Count, log_anchors
from .costs import MESSAGE_OVERHEAD, MessageCost, block_counts, block_framing, message_cost
from .model import Message, RecordedCall, Role, Transcript, replays_a_call

if TYPE_CHECKING:
    from ..counters.profiles import ProfileCounter

#: Below this many recorded tokens of growth a call pair says little (a few tokens of framing
#: decide its ratio), so calibration and its scores leave it out.
MIN_GROWTH = 200


def prompt_of(call: RecordedCall) -> int:
    """The recorded prompt of a `usable` call, which always has one."""
    assert call.prompt_tokens is not None
    return call.prompt_tokens


def usable(calls: Sequence[RecordedCall]) -> list[RecordedCall]:
    """The calls that recorded a prompt size (`<synthetic>` replies and calls without usage, or
    with a zero prompt, are not model calls that can be compared), in message order."""
    return [c for c in calls if c.prompt_tokens and c.prompt_tokens > 0 and c.model != "<synthetic>"]


def recorded_summary(calls: Sequence[RecordedCall]) -> dict[str, Any] | None:
    """The JSON shape of what a log recorded: ``{last_prompt, peak_prompt, calls, model,
    models, window}``, or None when it recorded no usage.

    >>> recorded_summary([RecordedCall(1, "a", "m", 100), RecordedCall(3, "b", "m", 90)])
    {'last_prompt': 90, 'peak_prompt': 100, 'calls': 2, 'model': 'm', 'models': ['m'], 'window': None}
    """
    kept = usable(calls)
    if not kept:
        return None
    models = list(dict.fromkeys(c.model for c in kept if c.model))
    windows = [c.window for c in kept if c.window]
    return {
        "last_prompt": kept[-1].prompt_tokens,
        "peak_prompt": max(prompt_of(c) for c in kept),
        "calls": len(kept),
        "model": kept[-1].model or None,
        "models": models,
        "window": windows[-1] if windows else None,
    }


class FixedPart(NamedTuple):
    """The part of every prompt the log does not hold (system prompt, tools, injected context)."""

    tokens: int
    #: "inferred" (from the first recorded call), "given" (--fixed-tokens N), or "none".
    source: str
    #: Index of the message whose call it was inferred from (-1 when not inferred).
    call_message: int = -1

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "source": self.source}


NO_FIXED = FixedPart(0, "none")


def prefix_tokens(transcript: Transcript, counter: Counter = SEED) -> list[int]:
    """Estimated tokens of the system prompt, tools and the first *i* messages, for every i
    (``len(messages) + 1`` entries; the transcript must be materialized). The unlogged part
    is not included."""
    total = sum(message_cost(m, counter).tokens for m in transcript.fixed if m is not transcript.unlogged)
    sums = [total]
    for message in transcript.messages:
        total += message_cost(message, counter).tokens
        sums.append(total)
    return sums


def infer_fixed(transcript: Transcript, counter: Counter = SEED, prefix: list[int] | None = None) -> FixedPart:
    """The unlogged fixed part of a (materialized) conversation: the first recorded prompt
    minus the estimate of everything the log holds before that call; `NO_FIXED` when the log
    recorded no usage. Never negative."""
    return infer_fixed_from(transcript.calls, prefix if prefix is not None else prefix_tokens(transcript, counter))


def infer_fixed_from(calls: Sequence[RecordedCall], prefix: Sequence[int]) -> FixedPart:
    """`infer_fixed` from the calls and the prefix sums (`prefix_tokens`) alone."""
    kept = [c for c in usable(calls) if 0 <= c.message < len(prefix)]
    if not kept:
        return NO_FIXED
    first = kept[0]
    return FixedPart(max(prompt_of(first) - prefix[first.message], 0), "inferred", first.message)


def call_estimates(
    transcript: Transcript, counter: Counter = SEED, fixed: FixedPart | None = None
) -> list[tuple[RecordedCall, int]]:
    """Each recorded call with the estimate of its prompt: the fixed part plus everything the
    log holds before the call's reply."""
    sums = prefix_tokens(transcript, counter)
    fixed = fixed if fixed is not None else infer_fixed(transcript, counter, sums)
    return call_estimates_from(transcript.calls, sums, fixed)


def call_estimates_from(
    calls: Sequence[RecordedCall], prefix: Sequence[int], fixed: FixedPart
) -> list[tuple[RecordedCall, int]]:
    """`call_estimates` from the calls and the prefix sums alone."""
    return [(c, fixed.tokens + prefix[c.message]) for c in usable(calls) if 0 <= c.message < len(prefix)]


def log_anchoring(transcript: Transcript, counter: Counter = SEED) -> Anchoring | None:
    """The anchoring (DESIGN §11) a (materialized) log's recorded calls give its requests: each
    request is sized from the newest call before it (never from its own recorded size); None
    when the log recorded no usage."""
    if not usable(transcript.calls) or not isinstance(transcript.messages, tuple):
        return None
    sums = prefix_tokens(transcript, counter)
    fixed = sum(message_cost(m, counter).tokens for m in transcript.fixed) - sums[0]
    return anchoring_from(transcript.calls, sums, fixed, turn_starts(transcript.messages))


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """The messages after the first that start a human turn (what reasoning is reset at)."""
    return [i for i, m in enumerate(messages) if i and m.is_human_turn]


def anchoring_from(
    calls: Sequence[RecordedCall], prefix: Sequence[int], unlogged: int, turns: Sequence[int]
) -> Anchoring | None:
    """`log_anchoring` from the calls, the prefix sums, the unlogged part's estimate and the
    turn starts alone."""
    if not usable(calls):
        return None
    return Anchoring(log_anchors(calls, prefix, unlogged, turns), turn_starts=turns, earlier_only=True)


def next_request(transcript: Transcript, counter: Counter = SEED) -> Count:
    """The size of the request the (materialized) log would send next, everything kept:
    anchored on its last recorded call (DESIGN §11), or the estimate alone without usage."""
    estimate = sum(message_cost(m, counter).tokens for m in (*transcript.fixed, *transcript.messages))
    anchoring = log_anchoring(transcript, counter)
    if anchoring is None:
        return Count(estimate)
    return next_request_from(anchoring, prefix_tokens(transcript, counter), estimate)


def next_request_from(anchoring: Anchoring | None, prefix: Sequence[int], estimate: int) -> Count:
    """`next_request` from the anchoring, the prefix sums and the estimate of the whole request."""
    if anchoring is None:
        return Count(estimate)
    end = len(prefix) - 1
    return Count(estimate + anchoring.offset(end, prefix), anchoring.confirmed(end))


def recorded_by_call(transcript: Transcript) -> dict[int, int]:
    """Recorded prompt size by model call, numbered as replays number them: call *k* is the
    one that produced the *k*-th assistant message (1-based) after the given history that a
    request was made before (not the first message, not one its agent wrote)."""
    numbers: dict[int, int] = {}
    for index, message in enumerate(transcript.messages):
        if replays_a_call(transcript, index, message):
            numbers[index] = len(numbers) + 1
    return {numbers[c.message]: prompt_of(c) for c in usable(transcript.calls) if c.message in numbers}


class Growth(NamedTuple):
    """The messages added between two consecutive calls, and what the log says they cost."""

    #: Unrounded measurement of every string of those messages (the counter's vector).
    vector: Vector
    #: Messages added (each costs `MESSAGE_OVERHEAD`) and image tokens among them.
    messages: int
    images: int
    #: Recorded growth of the prompt between the two calls.
    recorded: int
    #: Where: the transcript's path and the index of the later call's message.
    path: str
    message: int
    #: Tool calls, tool results and thinking blocks among the added messages (a counter may
    #: frame each block: `costs.block_framing`).
    tool_calls: int = 0
    tool_results: int = 0
    thinking: int = 0

    @property
    def framing(self) -> int:
        """Tokens the estimate adds whatever the counter: message overhead and images."""
        return self.messages * MESSAGE_OVERHEAD + self.images

    @property
    def tool_blocks(self) -> int:
        """Tool calls and results together: what a per-block framing cost is fitted on."""
        return self.tool_calls + self.tool_results

    def block_tokens(self, counter: Counter) -> int:
        """Tokens of `counter`'s per-block framing (`costs.block_framing`) for these blocks."""
        per_block = block_framing(counter)
        return (
            self.tool_calls * per_block.get("tool_calls", 0)
            + self.tool_results * per_block.get("tool_results", 0)
            + self.thinking * per_block.get("thinking", 0)
        )


def growth_samples(transcript: Transcript, counter: Counter) -> list[Growth]:
    """One `Growth` per pair of consecutive recorded calls of a (materialized) transcript
    whose prompt grew. A pair whose calls answer the same message, whose prompt shrank (the
    agent cleared old results itself), or whose two calls went to different models (each may
    count the whole prompt its own way) says nothing about the messages in between and is
    left out."""
    out: list[Growth] = []
    calls = usable(transcript.calls)
    messages = transcript.messages
    assert isinstance(messages, Sequence), "materialize() the transcript first"
    for a, b in zip(calls, calls[1:]):
        if not 0 <= a.message < b.message <= len(messages):
            continue
        grew = prompt_of(b) - prompt_of(a)
        if grew <= 0 or a.model != b.model:
            continue
        added = messages[a.message : b.message]
        blocks = block_counts(added)
        out.append(
            Growth(
                _measure(added, counter),
                len(added),
                sum(_images(m) for m in added),
                grew,
                transcript.path,
                b.message,
                blocks.get("tool_calls", 0),
                blocks.get("tool_results", 0),
                blocks.get("thinking", 0),
            )
        )
    return out


def _measure(messages: Sequence[Message], counter: Counter) -> Vector:
    total: list[int] | None = None
    for message in messages:
        for part in message.parts:
            for text in (part.tool, part.text, part.call_id):
                if text:
                    vector = counter.measure(text)
                    total = list(vector) if total is None else [x + y for x, y in zip(total, vector)]
    return tuple(total) if total is not None else tuple(0 for _ in counter.classes)


def _images(message: Message) -> int:
    return sum(p.image_tokens for p in message.parts)


def growth_estimate(sample: Growth, counter: Counter) -> int:
    """The counter's estimate of a growth sample: its text rounded once, plus the framing
    (message overhead, images, and the counter's own per-block framing)."""
    return counter.tokens(sample.vector) + sample.framing + sample.block_tokens(counter)


class _AnyCounter(dict[object, Any]):
    """A message's estimate cache that holds the same estimate for every counter."""

    def __init__(self, cost: MessageCost) -> None:
        super().__init__()
        self.cost = cost

    def get(self, key: object, default: object = None) -> MessageCost:
        return self.cost


def unlogged_message(tokens: int) -> Message:
    """A stand-in for the unlogged fixed part: a system message of no content whose estimate,
    under any counter, is `tokens` of kind ``unlogged``. It is counted wherever the system
    prompt is (budgets, reports, replays) and never written into a payload."""
    cost = MessageCost(tokens, {"unlogged": tokens}, {}, (0, 0, 0), (0, 0, 0), 0, tokens)
    return Message(Role.SYSTEM, (), b"", memo=_AnyCounter(cost))


def with_unlogged(transcript: Transcript, fixed: FixedPart) -> Transcript:
    """The transcript with its unlogged fixed part counted (unchanged when it is 0).

    >>> t = Transcript("t", "codex", "openai", ())
    >>> [m.memo.get("seed").tokens for m in with_unlogged(t, FixedPart(900, "given")).fixed]
    [900]
    """
    if fixed.tokens <= 0:
        return transcript
    return replace(transcript, unlogged=unlogged_message(fixed.tokens))


#: In `fit_from_usage`, every this-many-th call pair of each log is held out for the report.
HOLD_OUT_EVERY = 4


def score_growth(samples: Sequence[Growth], counter: Counter) -> dict[str, Any]:
    """How a counter does on growth samples of at least `MIN_GROWTH` recorded tokens: the
    aggregate ratio estimate ÷ recorded, the median, and the share under by more than 10%."""
    kept = [s for s in samples if s.recorded >= MIN_GROWTH]
    if not kept:
        return {"pairs": 0, "ratio": None, "median": None, "under10_share": None}
    ratios = sorted(growth_estimate(s, counter) / s.recorded for s in kept)
    return {
        "pairs": len(kept),
        "ratio": round(sum(growth_estimate(s, counter) for s in kept) / sum(s.recorded for s in kept), 4),
        "median": round(ratios[len(ratios) // 2], 4),
        "under10_share": round(sum(r < 0.9 for r in ratios) / len(ratios), 4),
    }


def fit_from_usage(
    transcripts: Sequence[Transcript], *, name: str, base: ProfileCounter, hold_out_every: int = HOLD_OUT_EVERY
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fit a profile to the recorded prompt growth of (materialized) transcripts.

    Every `hold_out_every`-th call pair of each transcript is held out; the profile is fitted
    on the others and scored on those (`score_growth`). Returns (profile, evaluation); raises
    ValueError when the logs record no usable growth.
    """
    from ..counters.calibrate import calibrate_from_growth

    fit: list[Growth] = []
    held: list[Growth] = []
    calls = 0
    for transcript in transcripts:
        calls += len(usable(transcript.calls))
        for i, sample in enumerate(growth_samples(transcript, base)):
            (held if hold_out_every and i % hold_out_every == hold_out_every - 1 else fit).append(sample)
    if not fit:
        raise ValueError("no two consecutive model calls with recorded usage and a growing prompt")
    profile = calibrate_from_growth(
        [s.vector for s in fit],
        [s.recorded - s.framing for s in fit],
        [s.path for s in fit],
        name=name,
        base=base,
        blocks=[s.tool_blocks for s in fit],
    )
    from ..counters.profiles import ProfileCounter

    fitted = ProfileCounter(profile, source=name)
    evaluation = {
        "logs": len({t.path for t in transcripts if usable(t.calls)}),
        "calls": calls,
        "pairs_fitted": len(fit),
        "held_out": score_growth(held, fitted),
        "fitted_on": score_growth(fit, fitted),
        "base_held_out": score_growth(held, base),
    }
    return profile, evaluation
