"""Context policies to compare in a replay: ctxfit's and the ones it replaces.

Each policy turns a recorded history into the requests the agent would have sent, one before
each assistant message a model call made (none before those of a history the conversation was
given, `Transcript.given`, nor before one the agent wrote itself, `model.replays_a_call`).
Policies that clear tool results are presets of the same `Fitter`, so a comparison isolates
exactly the parameter that differs.

| name              | what it does                                                             |
|-------------------|--------------------------------------------------------------------------|
| `ctxfit`          | the default (`FitOptions()`): batches of 4, newest quarter protected, and  |
|                   | once it must clear, whole batches down to the low-water mark; then turns, rounds |
| `ctxfit-strict`   | DESIGN §4's seed rule: the same, clearing only until under the budget     |
| `none`            | send everything                                                          |
| `turns`           | the old behaviour: first message + note + newest whole user turns         |
| `clear-each`      | clear the oldest result one at a time until it fits (no batches)          |
| `keep-6`          | clear oldest first, one at a time, always keeping the 6 newest results    |
| `clear-at-least`  | Anthropic style: when over, clear oldest until ≥ N tokens are freed, keep 3 newest |

The clearing-only policies (`clear-each`, `keep-6`, `clear-at-least`) do not leave out turns:
when clearing is not enough, the request is sent as it is.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, Protocol

from ..core.costs import merged_cost, message_cost
from ..core.fitting import FitOptions, Fitter, OpenCalls, Shape, note_cost, noted_cost, overlapping_ranges
from ..core.model import ALTERNATING, Role, Transcript, replays_a_call
from ..core.usage import log_anchoring
from ..errors import InvalidRequest
from .validity import RequestCheck


class Request(NamedTuple):
    """One simulated request: its size, and how much of it an earlier request shares.
    (A NamedTuple: a replay makes one per model call.)"""

    call: int  # 1-based model call
    tokens: int
    stage: str
    #: Tokens at the start of this request identical to `earlier` (a request of the same walk),
    #: counted as `earlier.tokens` counts them: all of it when this request only appends.
    shared_with: Callable[[Request], int]
    #: Tokens of `earlier` this request still sends, wherever they are in it (the cache bound),
    #: counted the same way.
    still_sent: Callable[[Request], int]
    #: What the policy cut (a fitter `Shape`, `OldTurns`' (start, end), None): each policy compares only its own.
    shape: Any = None
    #: The recorded size of an earlier call that `tokens` is anchored on (0: all estimated).
    confirmed: int = 0


class Policy(Protocol):
    @property
    def name(self) -> str: ...

    #: Whether `requests` walks the messages once, in order, so that they may be streamed (a
    #: big file's replay walks while later pieces are read); else they must be a tuple.
    @property
    def streams(self) -> bool: ...

    def describe(self) -> str: ...

    def requests(self, transcript: Transcript, options: FitOptions) -> Iterator[Request]: ...


def _against(measure: Callable[[Shape, Shape], int], current: Shape) -> Callable[[Request], int]:
    """`measure` of `current` against an earlier request of the same walk."""
    return lambda earlier: measure(earlier.shape, current)


@dataclass(frozen=True)
class FitterPolicy:
    """A policy that is the `Fitter` with some options changed."""

    name: str
    summary: str
    adjust: Callable[[FitOptions], FitOptions]

    def describe(self) -> str:
        return self.summary

    #: Walks the history once, in order: it may be streamed (`simulation.replay`).
    streams = True

    def requests(self, transcript: Transcript, options: FitOptions) -> Iterator[Request]:
        shapes: list[Shape] = []
        fitter = Fitter(
            self.adjust(options),
            transcript.fixed,
            dialect=transcript.dialect,
            on_shape=shapes.append,
            replies_from=transcript.given,
            anchoring=log_anchoring(transcript, options.counter),
        )

        shared, still_sent = fitter.sharing.shared_tokens, fitter.sharing.still_sent_tokens
        check = RequestCheck(transcript)
        streamed = check.streamed
        messages = iter(transcript.messages)
        try:
            for message in messages:
                if streamed:
                    check.add(message)
                fitter.extend((message,))
                for shape in shapes:
                    if shape.start:
                        check.trimmed(
                            call=fitter.requests,
                            first=fitter.first,
                            anchor=shape.anchor,
                            start=shape.start,
                            end=shape.end,
                        )
                    yield Request(
                        fitter.requests,
                        shape.tokens,
                        shape.stage,
                        _against(shared, shape),
                        _against(still_sent, shape),
                        shape,
                        fitter.confirmed(shape.end),
                    )
                shapes.clear()
        except InvalidRequest:
            if streamed:  # the history itself may be what is invalid: as for a held one, say so
                for message in messages:
                    check.add(message)
                check.finish()
            raise
        if streamed:
            check.finish()


@dataclass(frozen=True)
class SendAll:
    name: str = "none"
    #: Walks the history once, in order: it may be streamed (`simulation.replay`).
    streams = True

    def describe(self) -> str:
        return "send everything"

    def requests(self, transcript: Transcript, options: FitOptions) -> Iterator[Request]:
        fixed_tokens = sum(message_cost(m, options.counter).tokens for m in transcript.fixed)
        anchoring = log_anchoring(transcript, options.counter)
        prefix, call = [0], 0
        for i, message in enumerate(transcript.messages):
            if replays_a_call(transcript, i, message):
                call += 1
                tokens = fixed_tokens + prefix[i]
                confirmed = 0
                if anchoring is not None:
                    tokens, confirmed = tokens + anchoring.offset(i, prefix), anchoring.confirmed(i)
                only_appends = lambda earlier: earlier.tokens  # noqa: E731
                yield Request(call, tokens, "none", only_appends, only_appends, None, confirmed)
            prefix.append(prefix[-1] + message_cost(message, options.counter).tokens)


@dataclass(frozen=True)
class OldTurns:
    """DESIGN §1's old trimming: cut only where a user turn starts, newest whole turns that fit.

    With nowhere to cut (a sub-agent has one user message) the whole history is sent.
    """

    name: str = "turns"
    #: Looks back over the history at each request: it needs the history held.
    streams = False

    def describe(self) -> str:
        return "first message + note + newest whole user turns (the old behaviour)"

    def requests(self, transcript: Transcript, options: FitOptions) -> Iterator[Request]:
        counter = options.counter
        fixed_tokens = sum(message_cost(m, counter).tokens for m in transcript.fixed)
        # Sizes anchored on the log's recorded calls as the other policies' are: the correction
        # is part of the fixed part, which every request sends (as the Fitter counts it).
        anchoring = log_anchoring(transcript, counter)
        messages = transcript.messages
        prefix, first, call = [0], -1, 0
        turns: list[int] = []
        turn_prefix: list[int] = []  # prefix[t] for each turn start t, for bisect
        open_calls = OpenCalls()
        check = RequestCheck(transcript)
        for i, message in enumerate(messages):
            boundary = open_calls.add(message)
            if replays_a_call(transcript, i, message):
                call += 1
                fixed, confirmed = fixed_tokens, 0
                if anchoring is not None:
                    fixed, confirmed = fixed_tokens + anchoring.offset(i, prefix), anchoring.confirmed(i)
                start = self._start(messages, prefix, first, turns, turn_prefix, i, fixed, options)
                if start is not None:
                    check.trimmed(call=call, first=first, anchor=None, start=start, end=i)
                if start is None:
                    yield Request(
                        call,
                        fixed + prefix[i],
                        "none",
                        lambda earlier: earlier.tokens,
                        _whole_after_whole(self._still_sent(transcript, first, 0, i, fixed, prefix, options)),
                        (0, i),
                        confirmed,
                    )
                else:
                    request = self._request(transcript, call, first, start, i, options, fixed, prefix)
                    yield request._replace(confirmed=confirmed)
            if first < 0 and message.role is Role.USER:
                first = i
            elif first >= 0 and boundary and message.is_human_turn:
                turns.append(i)
                turn_prefix.append(prefix[-1])
            prefix.append(prefix[-1] + message_cost(message, counter).tokens)

    @staticmethod
    def _start(messages, prefix, first, turns, turn_prefix, end, fixed_tokens, options) -> int | None:
        """The oldest turn start whose suffix fits (each request anew: no steps, no ratchet)."""
        if fixed_tokens + prefix[end] <= options.budget or not turns:
            return None
        head = fixed_tokens + prefix[first + 1] + note_cost(messages[first], options.counter)
        # The suffix from turn t costs prefix[end] - prefix[t]: it fits once prefix[t] is large enough.
        at = bisect.bisect_left(turn_prefix, prefix[end] - (options.budget - head))
        return turns[min(at, len(turns) - 1)]

    @staticmethod
    def _request(transcript, call, first, start, end, options, fixed_tokens, prefix) -> Request:
        counter = options.counter
        head = transcript.messages[first]
        before_head = fixed_tokens + prefix[first]
        noted_head = message_cost(head, counter).tokens + note_cost(head, counter)
        tokens = before_head + noted_head + prefix[end] - prefix[start]
        if transcript.dialect in ALTERNATING:  # the turn's opening user message joins the head
            following = transcript.messages[start]
            merged = merged_cost([noted_cost(head, counter), message_cost(following, counter)], counter).tokens
            tokens += merged - noted_head - message_cost(following, counter).tokens

        def shared(earlier: Request) -> int:
            if earlier.shape[0] == start:
                return earlier.tokens  # same cut: this request only appends
            if earlier.shape[0] and transcript.dialect == "openai":
                return before_head + noted_head  # the same first message, with the note
            return before_head  # the first message gained the note, or merged another message

        return Request(
            call,
            tokens,
            "turns",
            shared,
            OldTurns._still_sent(transcript, first, start, end, fixed_tokens, prefix, options),
            (start, end),
        )

    @staticmethod
    def _still_sent(transcript, first, start, end, fixed_tokens, prefix, options) -> Callable[[Request], int]:
        """The cache bound against an earlier request of this policy: the fixed part, the
        messages both send unchanged, and the noted first message when both carry the same one
        (for Anthropic and Gemini it is merged with the message at the cut, so only the same cut)."""
        anthropic = transcript.dialect in ALTERNATING  # (merges as Anthropic does)

        def ranges(cut: int, upto: int) -> list[tuple[int, int]]:
            return [(0, upto)] if not cut else [(0, first), (cut + anthropic, upto)]

        def still_sent(earlier: Request) -> int:
            earlier_start, earlier_end = earlier.shape
            tokens = fixed_tokens + sum(
                prefix[high] - prefix[low]
                for low, high in overlapping_ranges(ranges(earlier_start, earlier_end), ranges(start, end))
            )
            if start and earlier_start and (not anthropic or start == earlier_start):
                head = transcript.messages[first]
                if anthropic:  # the first message merged with the message at the cut
                    tokens += merged_cost(
                        [noted_cost(head, options.counter), message_cost(transcript.messages[start], options.counter)],
                        options.counter,
                    ).tokens
                else:
                    tokens += message_cost(head, options.counter).tokens + note_cost(head, options.counter)
            return tokens

        return still_sent


def _whole_after_whole(still_sent: Callable[[Request], int]) -> Callable[[Request], int]:
    """The cache bound of an uncut request of `turns`: all of an earlier uncut one, as its size
    was counted (anchored, as `none` counts it), else `still_sent`."""
    return lambda earlier: earlier.tokens if not earlier.shape[0] else still_sent(earlier)


#: Clear only until the request is under the budget (the seed rule; what the policies ctxfit is
#: compared with do).
_UNTIL_IT_FITS: dict[str, Any] = {"lowwater": None, "headroom": None}

POLICIES: dict[str, Policy] = {
    "ctxfit": FitterPolicy(
        "ctxfit",
        "the options given (default: batches of 4 down to the low-water mark, "
        "newest quarter protected, then turns and rounds)",
        lambda o: o,
    ),
    "ctxfit-strict": FitterPolicy(
        "ctxfit-strict",
        "DESIGN §4's seed rule: clear batches only until under the budget",
        lambda o: replace(o, **_UNTIL_IT_FITS),
    ),
    "none": SendAll(),
    "turns": OldTurns(),
    "clear-each": FitterPolicy(
        "clear-each",
        "clear the oldest result one at a time until it fits",
        lambda o: replace(o, batch_size=1, protect_share=0.0, min_clear_tokens=0, trim=False, **_UNTIL_IT_FITS),
    ),
    "keep-6": FitterPolicy(
        "keep-6",
        "clear oldest first, always keep the 6 newest results whole",
        lambda o: replace(o, batch_size=1, protect_count=6, min_clear_tokens=0, trim=False, **_UNTIL_IT_FITS),
    ),
    "clear-at-least": FitterPolicy(
        "clear-at-least",
        "when over, clear oldest until 5% of the budget is freed, keep the 3 newest",
        lambda o: replace(
            o, batch_tokens=max(1, o.budget // 20), protect_count=3, min_clear_tokens=0, trim=False, **_UNTIL_IT_FITS
        ),
    ),
}

DEFAULT_POLICIES = ("ctxfit", "ctxfit-strict", "turns", "clear-each", "keep-6", "clear-at-least", "none")


def policy(name: str) -> Policy:
    """A policy by name (see `POLICIES`)."""
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; choose from {', '.join(POLICIES)}") from None


__all__ = ["POLICIES", "DEFAULT_POLICIES", "Policy", "Request", "policy"]
