"""What two requests of one walk have in common: the prompt cache's view of a walk (for replay).

A request is the fixed part, then — when trimmed — the first messages with the note (and, for
Anthropic and Gemini, a user message merged into it), then an optional anchor and the pinned
messages of what is left out, and one contiguous range of the history, with the oldest
candidates cleared. So the tokens a request shares with an earlier
one, and the tokens of the earlier one it still sends, follow from the two `Shape`s and the
history's prefix sums, without building either request.
"""

from __future__ import annotations

import bisect
from typing import NamedTuple

from ..costs import message_cost
from ..model import ALTERNATING
from .clearing import Clearing
from .history import History
from .trimming import Trimming


class Shape(NamedTuple):
    """What one request of the walk looks like, cheaply: enough to size it and to compare it
    with another request of the same walk (`Fitter.shared_tokens`). (A NamedTuple: a replay
    makes one per model call.)"""

    end: int  # the request holds the history before this message
    cleared: int  # this many candidates (oldest first) are cleared
    start: int  # kept start when trimmed, else 0
    anchor: int | None
    tokens: int
    stage: str
    #: What `tokens` adds to ctxfit's own estimate of the request (both 0 without anchoring):
    #: the correction of the recorded usage, which the walk carries in the fixed part
    #: (`Fitter._anchor`), and what the removal ratio adds for what the request leaves out
    #: (`History.anchored`).
    correction: int = 0
    removal: int = 0


class Sharing:
    """`shared_tokens` and `still_sent_tokens` between two shapes of one walk.

    Both are counted as `previous.tokens` counts them (`_counted`), so that a request that only
    appends shares exactly `previous.tokens` and one that changes anything shares less: a cache
    break is decided on the same basis as the size.
    """

    def __init__(self, history: History, clearing: Clearing, trimming: Trimming) -> None:
        self.history, self.clearing, self.trimming = history, clearing, trimming
        self.dialect = trimming.dialect
        self._appended_memo: tuple[tuple[int, int | None, int], int, int] | None = None  # (see `_appended`)

    def shared_tokens(self, previous: Shape, current: Shape) -> int:
        """Tokens at the start of `current` that are identical, message by message, to the
        start of `previous` (an earlier request of this walk): what a prefix cache can reuse."""
        if _appends(previous, current):
            return _counted(previous, self._appended(previous)[0])
        return _counted(previous, self._shared_run(previous, current))

    def still_sent_tokens(self, previous: Shape, current: Shape) -> int:
        """Tokens of `previous` (an earlier request of this walk) that `current` still sends,
        wherever they are in it: the most a prefix cache could reuse if every change were made
        after them (the replay's cache bound)."""
        if _appends(previous, current):
            return _counted(previous, self._appended(previous)[1])
        return _counted(previous, self._still_sent(previous, current))

    def _appended(self, shape: Shape) -> tuple[int, int]:
        """What a request that only appends to `shape` shares with it, and still sends of it.

        All of `shape`'s runs and ranges (`_appends`), as `shape` shares with itself. Those are
        the cut's parts (the fixed part, the head, the anchor, the kept range up to the end,
        results cleared) and `cost_prefix[end]`: all the results a shape clears come before its
        end. So the cut's part is computed once per cut, and most requests of a long walk,
        which keep the cut of the request before, pay a lookup.
        """
        key = (shape.start, shape.anchor, shape.cleared)
        memo = self._appended_memo
        here = self.history.cost_prefix[shape.end]
        if memo is None or memo[0] != key:
            memo = self._appended_memo = (
                key,
                self._shared_run(shape, shape) - here,
                self._still_sent(shape, shape) - here,
            )
        return memo[1] + here, memo[2] + here

    def _shared_run(self, previous: Shape, current: Shape) -> int:
        """`shared_tokens`, in general: the common run of both requests' segments, which ends
        early at the first result cleared since `previous`."""
        h = self.history
        shared = h.estimated_fixed  # (estimates: `_counted` adds the anchoring)
        if previous.start or current.start:
            if not (previous.start and current.start):
                return shared + h.cost_prefix[h.first]  # the first message gained the note
            shared += h.cost_prefix[h.first]
            partner = self.trimming.merge_partner(current.start)
            if self.dialect in ALTERNATING and partner != self.trimming.merge_partner(previous.start):
                return shared  # the first message is merged with another user message now
            shared += self._noted_head(current.start, partner)
        candidate_index = self.clearing.candidate_index
        for low, high in _common_run(self._segments(previous), self._segments(current)):
            changed = bisect.bisect_left(candidate_index, low, previous.cleared, current.cleared)
            if changed < current.cleared and candidate_index[changed] < high:
                return shared + self._range_tokens(low, candidate_index[changed], previous.cleared)
            shared += self._range_tokens(low, high, previous.cleared)
        return shared

    def _still_sent(self, previous: Shape, current: Shape) -> int:
        """`still_sent_tokens`, in general.

        A message counts when both requests send it the same way: the same message of the
        history with the same results cleared, or the same noted first message. Results cleared
        since `previous` change their message, so it is not counted.
        """
        tokens = self.history.estimated_fixed
        for low, high in overlapping_ranges(self._body(previous), self._body(current)):
            tokens += self._range_tokens(low, high, previous.cleared)
            tokens -= self._newly_cleared_tokens(low, high, previous.cleared, current.cleared)
        if previous.start and current.start:
            partner = self.trimming.merge_partner(current.start)
            if self.dialect not in ALTERNATING or partner == self.trimming.merge_partner(previous.start):
                tokens += self._noted_head(current.start, partner)
        return tokens

    def _noted_head(self, start: int, partner: int | None) -> int:
        """Tokens of the first message with the note (Anthropic, Gemini: with its merged partner)."""
        h = self.history
        counter = h.counter
        tokens = message_cost(h.messages[h.first], counter).tokens + h.note_tokens
        if self.dialect in ALTERNATING and partner is not None:
            tokens += self.trimming.merge_correction(start) + message_cost(h.messages[partner], counter).tokens
        return tokens

    def _body(self, shape: Shape) -> list[tuple[int, int]]:
        """The history ranges a request sends as they are (the noted first message aside)."""
        if not shape.start:
            return [(0, shape.end)]
        return [(0, self.history.first), *self._segments(shape)]

    def _newly_cleared_tokens(self, low: int, high: int, before: int, after: int) -> int:
        """Tokens (as sent with `before` candidates cleared) of the messages in [low, high) that
        hold a candidate among candidates[before:after]."""
        candidate_index = self.clearing.candidate_index
        a = bisect.bisect_left(candidate_index, low, before, after)
        b = bisect.bisect_left(candidate_index, high, before, after)
        return sum(self._range_tokens(m, m + 1, before) for m in dict.fromkeys(candidate_index[a:b]))

    def _segments(self, shape: Shape) -> list[tuple[int, int]]:
        """The history ranges a request sends after its first message, in order: the anchor and
        the pinned messages of what is left out (`Plan.sent`), then the kept range."""
        if not shape.start:
            return [(0, shape.end)]
        anchor, dropped = self.trimming.dropped(shape.start)
        kept = sorted((*self.history.pinned_in(dropped), *((anchor,) if anchor is not None else ())))
        partner = self.trimming.merge_partner(shape.start) if self.dialect in ALTERNATING else None
        # (the partner is merged into the first message: it is sent there, not in its place)
        segments = [(i, i + 1) for i in kept if i != partner]
        segments.append((shape.start + (partner == shape.start), shape.end))
        return [(low, high) for low, high in segments if high > low]

    def _range_tokens(self, low: int, high: int, cleared: int) -> int:
        """Tokens of messages [low, high) with the oldest `cleared` candidates cleared."""
        cost_prefix = self.history.cost_prefix
        return cost_prefix[high] - cost_prefix[low] - self.clearing.saved_in(low, high, cleared)


def _counted(previous: Shape, estimate: int) -> int:
    """ctxfit's estimate of a part of `previous` that starts with the fixed part, as
    `previous.tokens` counts it. The anchoring's correction is in the fixed part (the walk puts
    it there), so all of it counts. The removal ratio's share says what the messages `previous`
    keeps are worth together, not which of them: it is spread over the estimate. All of
    `previous` is then exactly `previous.tokens`, and any less is less.

    >>> shape = Shape(9, 0, 0, None, tokens=1500, stage="clear", correction=300, removal=200)
    >>> _counted(shape, 1000), _counted(shape, 500), _counted(shape, 0)
    (1500, 900, 300)
    """
    estimate_of_all = previous.tokens - previous.correction - previous.removal
    removal = previous.removal * estimate // estimate_of_all if estimate_of_all > 0 else previous.removal
    return max(estimate + previous.correction + removal, 0)


def _appends(previous: Shape, current: Shape) -> bool:
    """Whether `current` is `previous` with messages appended: the same cut, the same results
    cleared, a later end. Then each range `previous` sends is inside the same range of `current`
    (the ranges start at the same places), so the runs both requests start with, and the ranges
    both send, are exactly the ranges of `previous`."""
    return (
        previous.start == current.start
        and previous.anchor == current.anchor
        and previous.cleared == current.cleared
        and previous.end <= current.end
    )


def _common_run(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ranges both segment lists start with, index for index.

    >>> _common_run([(10, 11), (14, 20)], [(10, 11), (14, 30)])
    [(10, 11), (14, 20)]
    >>> _common_run([(10, 11)], [(10, 11), (11, 13)])
    [(10, 11)]
    """
    common, i, j = [], 0, 0
    a_low, b_low = (a[0][0] if a else None), (b[0][0] if b else None)
    while i < len(a) and j < len(b) and a_low == b_low:
        assert a_low is not None and b_low is not None  # (both runs still have a part)
        run = min(a[i][1] - a_low, b[j][1] - b_low)
        common.append((a_low, a_low + run))
        a_low, b_low = a_low + run, b_low + run
        if a_low == a[i][1]:
            i += 1
            a_low = a[i][0] if i < len(a) else None
        if b_low == b[j][1]:
            j += 1
            b_low = b[j][0] if j < len(b) else None
    return common


def overlapping_ranges(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ranges both sorted, disjoint range lists cover.

    >>> overlapping_ranges([(0, 3), (10, 20)], [(0, 2), (15, 30)])
    [(0, 2), (15, 20)]
    """
    return [(max(al, bl), min(ah, bh)) for al, ah in a for bl, bh in b if max(al, bl) < min(ah, bh)]
