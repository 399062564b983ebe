"""Stages 2 and 3: leave out the oldest history, keeping the first message with a note (DESIGN §4).

Stage 2 keeps the newest whole user turns; stage 3, inside the newest turn, keeps the turn's
own opening message (the *anchor*) and the newest whole tool rounds. A cut may also fall at a
round inside an older turn (its opening kept as anchor), and a newest turn that has no round yet
(a fresh prompt: a resumed session's "continue") keeps the rounds before it that fit, and when
none fits, the newest of them still (the smallest request holds the newest round): the request
keeps as much of the newest work as fits. Rather than drop a round for a protected result in it,
the fitter clears that result (`Fitter._trim`). Pinned messages
(DESIGN §14) in what is left out are kept where they are, and counted. The kept history
may start only at a turn or round start (no call open, `history.OpenCalls`), in steps of at
least `drop_step` of the budget, and never moves back: after a cut the request is well under the
budget and the next requests reuse the cache.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from ..costs import merged_cost, message_cost
from ..model import ALTERNATING, Role
from .clearing import Clearing
from .history import History
from .note import noted_cost


class Trimming:
    """Where a request's kept history may start, and what a request kept from there costs."""

    def __init__(self, history: History, clearing: Clearing, dialect: str) -> None:
        self.history, self.clearing, self.dialect = history, clearing, dialect
        self._merge_memo: dict[int, int] = {}

    def kept_tokens(self, start: int, end: int, batches: int) -> int:
        """Upper bound of the request keeping the head, the note, an anchor and [start, end)."""
        return self.history.anchored(self.kept_estimate(start, end, batches), end)

    def kept_estimate(self, start: int, end: int, batches: int) -> int:
        """`kept_tokens` with what was removed counted at its raw estimate."""
        h = self.history
        tokens = h.fixed_tokens + h.cost_prefix[h.first + 1] + h.note_tokens
        tokens += self.anchor_tokens(start) + h.cost_prefix[end] - h.cost_prefix[start]
        tokens += h.pinned_tokens(h.first + 1, start)  # pinned messages are kept where they are
        return tokens - self.clearing.saved_from(start, self.clearing.batch_end(batches))

    def sent_tokens(self, start: int, end: int, batches: int) -> int:
        """`kept_tokens` as sent: the first message and the user message after it merged."""
        return self.history.anchored(self.kept_estimate(start, end, batches) + self.merge_correction(start), end)

    def choose_start(self, end: int, batches: int, current: int) -> int:
        """The oldest allowed start, never before `current`, whose request fits; else the smallest."""
        start = self.fitting_start(end, batches, current)
        return self.smallest_start(end, batches, current) if start is None else start

    def fitting_start(self, end: int, batches: int, current: int) -> int | None:
        """The oldest allowed start, never before `current`, whose request fits (None: none)."""
        budget = self.history.options.budget
        for start in self._start_options(end, current):
            if self.kept_tokens(start, end, batches) <= budget:
                return start
        return None

    def smallest_start(self, end: int, batches: int, current: int) -> int:
        """Where the smallest request starts when none fits: the newest cut, keeping the newest
        round before a fresh prompt (DESIGN §4: the smallest request holds the newest round, and
        the note says the most recent steps are shown) unless that alone passes the window --
        but never the first cut when what it leaves out costs no more than the note it adds
        (trimming must not enlarge a request). Judged on the history alone, not on the walk so
        far, so that fitting the payload again makes the same choice."""
        h = self.history
        newest = self.newest_cut(end)
        if newest is None or newest <= current:
            return current
        if not h.trimmed(current) and self.left_out(newest) <= h.note_tokens:
            return current
        if newest == _last_before(h.turn_starts, end) and not self._has_round(newest, end):
            round_start = _last_before(h.round_starts, newest)
            if (
                round_start is not None
                and round_start > current
                and self.sent_tokens(newest, end, batches) > h.options.budget  # (the prompt alone may fit as sent)
                and self.kept_tokens(round_start, end, batches) <= h.options.window
            ):
                return round_start if h.trimmed(round_start) else current  # (a refit of this request)
        return newest

    def anchor(self, start: int) -> int | None:
        """The opening message of the turn that `start` is inside of (kept in stage 3)."""
        turn_starts = self.history.turn_starts
        at = bisect.bisect_right(turn_starts, start) - 1
        if at < 0:
            return None
        turn = turn_starts[at]
        return None if turn == start else turn

    def anchor_tokens(self, start: int) -> int:
        """Tokens of the anchor a cut at `start` keeps (0 when it keeps none)."""
        anchor = self.anchor(start)
        return 0 if anchor is None else self.history.message_tokens(anchor)

    def left_out(self, start: int) -> int:
        """Tokens of the history a cut at `start` leaves out (before any clearing): what lies
        between the first message and `start`, but the turn's opening message kept as anchor."""
        h = self.history
        kept = h.pinned_tokens(h.first + 1, start)  # (an anchor is a user turn, never pinned)
        return h.cost_prefix[start] - h.cost_prefix[h.first + 1] - self.anchor_tokens(start) - kept

    def _start_options(self, end: int, current: int) -> Iterator[int]:
        """Starts to try, oldest first: the current one, then every step after it -- turn steps,
        round steps inside any turn (the turn's opening kept as anchor), the newest turn -- so
        that the request keeps as much of the newest work as fits, never a turn's tail dropped
        for want of a whole turn. A fresh prompt (a newest turn with no round yet) is tried alone
        only after the rounds just before it (`_tail_rounds`)."""
        h = self.history
        if h.trimmed(current):
            yield current
        steps = set(_between(h.turn_steps, current, end)) | set(_between(h.all_round_steps, current, end))
        last_turn = _last_before(h.turn_starts, end)
        if last_turn is not None and last_turn > current:
            steps.add(last_turn)
            if not self._has_round(last_turn, end):
                steps.update(self._tail_rounds(last_turn, current))
        yield from sorted(steps)

    def _has_round(self, turn: int, end: int) -> bool:
        newest = _last_before(self.history.round_starts, end)
        return newest is not None and newest > turn

    def _tail_rounds(self, turn: int, current: int) -> list[int]:
        """The round starts after `current` and before the turn starting at `turn`, counted back
        from the newest in finer steps (a quarter of a step, before clearing): where a fresh
        prompt's request may start so as to keep the work it continues. That work is complete, so these places stay
        the same for every request of the new turn (the prompt cache holds)."""
        h = self.history
        fine = h.options.drop_step * h.options.budget / 4
        tail: list[int] = []
        for start in reversed(_between(h.round_starts, current, turn)):
            # Measured before clearing: a round whose result is big is a place of its own, so
            # clearing that result (`Fitter._trim`) can keep it rather than drop it.
            if not tail or h.cost_prefix[tail[-1]] - h.cost_prefix[start] >= fine:
                tail.append(start)
        return tail

    def newest_cut(self, end: int) -> int | None:
        """The newest place a request can start: the newest round or turn before `end`."""
        h = self.history
        cuts = [c for c in (_last_before(h.round_starts, end), _last_before(h.turn_starts, end)) if c is not None]
        return max(cuts) if cuts else None

    def stage(self, start: int, batches: int) -> str:
        """The stage a request with this kept start and these cleared batches reached."""
        if self.history.trimmed(start):
            turn_starts = self.history.turn_starts
            at = bisect.bisect_left(turn_starts, start)
            is_turn = at < len(turn_starts) and turn_starts[at] == start
            return "turns" if is_turn and self.anchor(start) is None else "rounds"
        return "clear" if batches else "none"

    def dropped(self, start: int) -> tuple[int | None, list[tuple[int, int]]]:
        """The anchor a cut at `start` keeps, and the ranges of the history it leaves out."""
        h = self.history
        anchor, dropped = self.anchor(start), []
        upto = anchor if anchor is not None else start
        if upto > h.first + 1:
            dropped.append((h.first + 1, upto))
        if anchor is not None and start > anchor + 1:
            dropped.append((anchor + 1, start))
        return anchor, dropped

    # --- Alternating roles: the first message and a user message after it are sent as one ------

    def merge_partner(self, start: int) -> int | None:
        """The user message merged into the first message when the request is trimmed to
        `start` (Anthropic and Gemini need alternating roles): the anchor, or the message at `start`."""
        h = self.history
        if not h.trimmed(start):
            return None
        anchor = self.anchor(start)
        follows = anchor if anchor is not None else start
        if follows < len(h.messages) and h.messages[follows].role is Role.USER:
            return follows
        return None

    def merge_correction(self, start: int) -> int:
        """Anthropic and Gemini need alternating roles: a user message right after the first
        message is merged into it. The plan's sum counted them apart; this is the (≤ 0) difference."""
        if self.dialect not in ALTERNATING:
            return 0
        if start not in self._merge_memo:
            self._merge_memo[start] = self._merged_minus_apart(start)
        return self._merge_memo[start]

    def _merged_minus_apart(self, start: int) -> int:
        partner = self.merge_partner(start)
        if partner is None:
            return 0
        h = self.history
        counter = h.counter
        head, following = h.messages[h.first], h.messages[partner]
        merged = merged_cost([noted_cost(head, counter), message_cost(following, counter)], counter).tokens
        apart = message_cost(head, counter).tokens + h.note_tokens + message_cost(following, counter).tokens
        return merged - apart


def _between(positions: list[int], low: int, high: int) -> list[int]:
    """The positions p with low < p < high (`positions` sorted)."""
    return positions[bisect.bisect_right(positions, low) : bisect.bisect_left(positions, high)]


def _last_before(positions: list[int], end: int) -> int | None:
    at = bisect.bisect_left(positions, end) - 1
    return positions[at] if at >= 0 else None
