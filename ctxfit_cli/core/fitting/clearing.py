"""Stage 1: clear the oldest tool results, in batches, never the newest ones (DESIGN §4).

The newest results that fit together in `protect_share` of the budget (or the newest
`protect_count`) are protected, always at least one. As the history grows, results leave the
protected suffix oldest first and become candidates, in order; candidates are grouped into
batches of `batch_size` (or of `batch_tokens` freed), counted from the oldest. A request clears
the first *k* batches; *k* only grows along a walk, so each request's cleared set holds the
previous one's and the prompt cache keeps working.
"""

from __future__ import annotations

import bisect

from ..plan import ResultRef
from .history import History

#: Requests over which `FitOptions.headroom` measures how fast the conversation grows.
GROWTH_WINDOW = 8


class Clearing:
    """The protected results, the candidates behind them and their batches, for one history."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.options = history.options
        self.candidates: list[ResultRef] = []
        self.candidate_index: list[int] = []  # message index of each candidate, for bisect
        self.saving_prefix = [0]  # savings of candidates[:i]
        self.batch_ends: list[int] = []  # candidates count at the end of each closed batch
        self.too_small: list[ResultRef] = []
        self.protect_from = 0  # results[protect_from:protected_end] are protected
        self.protected_end = 0
        self.protect_sum = 0

    def protect(self, end: int) -> None:
        """Move the protected suffix up to the results before `end` (it only moves forward)."""
        quarter = self.options.protect_share * self.options.budget
        keep = self.options.protect_count
        results = self.history.results
        visible = bisect.bisect_left(self.history.result_index, end)
        while self.protected_end < visible:
            self.protect_sum += results[self.protected_end].tokens
            self.protected_end += 1
        while self.protected_end - self.protect_from > (keep or 1) and (keep is not None or self.protect_sum > quarter):
            released = results[self.protect_from]
            self.protect_sum -= released.tokens
            self.protect_from += 1
            self._release(released)

    def release_oldest(self, before: int) -> bool:
        """Release the oldest protected result if it lies before message `before` (the newest
        assistant message: the results after it are what the next reply reads, never cleared).
        Stage 3 does this rather than drop the round that holds it (DESIGN §4: the smallest
        request keeps the newest round); whether it did."""
        if self.protected_end == self.protect_from or self.history.results[self.protect_from].index >= before:
            return False
        released = self.history.results[self.protect_from]
        self.protect_sum -= released.tokens
        self.protect_from += 1
        self._release(released)
        return True

    def protected(self) -> tuple[ResultRef, ...]:
        return tuple(self.history.results[self.protect_from : self.protected_end])

    def _release(self, ref: ResultRef) -> None:
        """A result left the protected quarter: it becomes a candidate, or stays as too small."""
        if ref.index <= self.history.first:
            return
        if not self.history.clearable(ref):
            self.too_small.append(ref)
            return
        self.candidates.append(ref)
        self.candidate_index.append(ref.index)
        self.saving_prefix.append(self.saving_prefix[-1] + ref.saving)
        opened = self.batch_ends[-1] if self.batch_ends else 0
        if self.options.batch_tokens is not None:
            full = self.saving_prefix[-1] - self.saving_prefix[opened] >= self.options.batch_tokens
        else:
            full = len(self.candidates) - opened >= self.options.batch_size
        if full:
            self.batch_ends.append(len(self.candidates))

    def batch_end(self, batches: int) -> int:
        """How many candidates the first `batches` batches hold (the open one counts too)."""
        if batches <= 0:
            return 0
        return self.batch_ends[batches - 1] if batches <= len(self.batch_ends) else len(self.candidates)

    def batch_count(self) -> int:
        opened = self.batch_ends[-1] if self.batch_ends else 0
        return len(self.batch_ends) + (1 if len(self.candidates) > opened else 0)

    def saved(self, batches: int) -> int:
        """Tokens the first `batches` batches free."""
        return self.saving_prefix[self.batch_end(batches)]

    def saved_from(self, start: int, cleared: int) -> int:
        """Tokens that clearing the oldest `cleared` candidates frees from message `start` on."""
        first_kept = bisect.bisect_left(self.candidate_index, start, 0, cleared)
        return self.saving_prefix[cleared] - self.saving_prefix[first_kept]

    def saved_in(self, low: int, high: int, cleared: int) -> int:
        """Tokens that clearing the oldest `cleared` candidates frees in messages [low, high)."""
        a = bisect.bisect_left(self.candidate_index, low, 0, cleared)
        b = bisect.bisect_left(self.candidate_index, high, 0, cleared)
        return self.saving_prefix[b] - self.saving_prefix[a]

    def mark(self) -> tuple[int, int, int, int, int, int]:
        """Where the state is now, to go back to it (`undo`): planning a request that is not
        committed moves it forward."""
        return (
            self.protect_from,
            self.protected_end,
            self.protect_sum,
            len(self.candidates),
            len(self.too_small),
            len(self.batch_ends),
        )

    def undo(self, mark: tuple[int, int, int, int, int, int]) -> None:
        self.protect_from, self.protected_end, self.protect_sum, candidates, too_small, batch_ends = mark
        del self.candidates[candidates:], self.candidate_index[candidates:]
        del self.saving_prefix[candidates + 1 :], self.too_small[too_small:]
        del self.batch_ends[batch_ends:]


def clear_target(history: History, request_ends: list[int], end: int) -> float:
    """How small stage 1 makes a request once it has to clear (DESIGN §4: the budget; by
    default `lowwater` of it, so the next several requests need no clearing)."""
    options = history.options
    target = options.budget * (options.lowwater or 1.0)
    if options.headroom is not None:
        target = min(target, options.budget - options.headroom * _growth(history, request_ends, end))
    return target


def _growth(history: History, request_ends: list[int], end: int) -> float:
    """Tokens the history grew by per request, over the last `GROWTH_WINDOW` requests."""
    ends = request_ends[-GROWTH_WINDOW:]
    if not ends:
        return 0.0
    return (history.cost_prefix[end] - history.cost_prefix[ends[0]]) / len(ends)
