"""The walk: every request of a history in turn, the two ratchets kept between them.

A request is made before every assistant message, and one more at the end. At each, stage 1
(`clearing.py`) clears whole batches while the request is over the budget, down to its target;
if that is not enough, stages 2 and 3 (`trimming.py`) move the kept start forward. The number of
cleared batches and the kept start only ever grow, so each request's cleared set holds the
previous one's and the provider's prefix cache keeps working, and the plan is still a pure
function of the history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from ..anchor import Anchoring
from ..model import WRITTEN_BY_AGENT, Message, Role
from ..options import FitOptions
from ..plan import Batch, Plan
from .clearing import Clearing, clear_target
from .history import History
from .sharing import Shape, Sharing
from .trimming import Trimming

_ASSISTANT = Role.ASSISTANT


def plan_fit(
    messages: Sequence[Message],
    *,
    budget: int,
    fixed: Sequence[Message] = (),
    options: FitOptions | None = None,
    **option_values: Any,
) -> Plan:
    """Plan the request for a conversation (system prompt and tools passed as `fixed`).

    Options are those of `FitOptions`: `window`, `batch_size`, `protect_share`,
    `min_clear_tokens`, `lowwater`, `drop_step`, `counter`. The input is never modified.

    >>> from ctxfit_cli.formats import to_message
    >>> history = [to_message(m, "openai") for m in (
    ...     {"role": "user", "content": "Read both files."},
    ...     {"role": "assistant", "content": None, "tool_calls": [
    ...         {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    ...         for i in (1, 2)]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "x" * 4000},
    ...     {"role": "tool", "tool_call_id": "c2", "content": "y" * 4000})]
    >>> plan = plan_fit(history, budget=1500)
    >>> plan.stage, [r.call_id for r in plan.cleared], plan.tokens_before, plan.tokens_after
    ('clear', ['c1'], 2026, 1057)
    """
    options = options or FitOptions(budget=budget, **option_values)
    fitter = Fitter(options, fixed)
    fitter.extend(messages)
    return fitter.plan()


class Fitter:
    """The forward walk, kept between calls so an agent loop pays only for what is new.

    >>> fitter = Fitter(FitOptions(budget=400_000))
    >>> # before each model request:  plan = fitter.update(history)
    """

    def __init__(
        self,
        options: FitOptions,
        fixed: Sequence[Message] = (),
        *,
        dialect: str = "openai",
        on_request: Callable[[Plan], None] | None = None,
        on_shape: Callable[[Shape], None] | None = None,
        replies_from: int = 0,
        anchoring: Anchoring | None = None,
    ) -> None:
        self.options = options
        #: The provider's reported sizes: every request is weighed at its anchored size.
        self.anchoring = anchoring
        #: Assistant messages before this index were given as history (a compaction's): no
        #: request was made before them.
        self.replies_from = replies_from
        #: Called with the plan of every request the walk passes (used by replay).
        self.on_request = on_request
        #: Called with the light `Shape` of every request the walk passes (used by replay:
        #: building a whole `Plan` per request would cost as much as the history is long).
        self.on_shape = on_shape
        self.history = History(options, fixed)
        self.clearing = Clearing(self.history)
        self.trimming = Trimming(self.history, self.clearing, dialect)
        self.sharing = Sharing(self.history, self.clearing, self.trimming)
        # The ratchets, committed at request points.
        self.cleared_batches = 0
        self.start = 0  # kept start; 0 while nothing is dropped
        self.requests = 0
        self.request_ends: list[int] = []  # the history length at each committed request
        self._cut: _Cut | None = None  # the last cut sized (see `_cut_for`)
        #: ctxfit's own estimate (no anchoring) of the request the last `plan()` described: what
        #: the provider's report of that request is compared with (`core.anchor.Anchor`).
        self.planned_estimate = 0
        self._planned: tuple[int, int, int] | None = None  # (end, batches, start) of the last plan()

    @property
    def messages(self) -> list[Message]:
        """The history walked so far."""
        return self.history.messages

    @property
    def first(self) -> int:
        """The index of the first message (the task, always kept), or -1 before it came."""
        return self.history.first

    # --- growing the history ----------------------------------------------------------------

    def update(self, history: Sequence[Message]) -> Plan:
        """The plan for `history`, which must extend the history seen before (same objects)."""
        messages = self.history.messages
        known = len(messages)
        if len(history) < known or (
            known and (history[0] is not messages[0] or history[known - 1] is not messages[-1])
        ):
            raise ValueError("update() needs the same history grown at the end; start a new Fitter")
        self.extend(history[known:])
        return self.plan()

    def extend(self, new: Iterable[Message]) -> None:
        """Add messages; the request made before each assistant message is walked through (none
        before one its agent wrote: `model.made_by_a_call`)."""
        history = self.history
        for message in new:
            if (
                message.role is _ASSISTANT
                and history.messages
                and len(history.messages) >= self.replies_from
                and WRITTEN_BY_AGENT not in message.memo
            ):
                self._commit(len(history.messages))
            history.append(message)

    # --- the walk -------------------------------------------------------------------------------

    def _commit(self, end: int) -> None:
        """Walk through the request made before message `end` and keep its ratchets."""
        self._anchor(end)
        batches, start = self._evaluate(end)
        planned = self._planned
        if planned is not None and planned[0] == end:
            # The request `plan()` gave for this history was sent as it was: a reply's count that
            # came since (anchoring) may find less would have done, but un-clearing what was sent
            # would break the cache and the ratchets, so what was sent is the least kept.
            batches, start = max(batches, planned[1]), max(start, planned[2])
        self.cleared_batches, self.start = batches, start
        self.requests += 1
        self.request_ends.append(end)
        if self.on_request is not None:
            self.on_request(self._describe(end, self.cleared_batches, self.start))
        if self.on_shape is not None:
            self.on_shape(self._shape(end, self.cleared_batches, self.start))

    def _anchor(self, end: int) -> None:
        """Weigh the request before message `end` at its anchored size: the correction of the
        newest reported size goes into the fixed part, which every size counts once, and what
        was removed since that request is counted at the anchoring's removal ratio."""
        history, anchoring = self.history, self.anchoring
        weights: tuple[int, float, int, tuple[float, int] | None] = (history.estimated_fixed, 1.0, 0, None)
        if anchoring is not None and (anchor := anchoring.anchor_for(end)) is not None:
            weights = (
                history.estimated_fixed + anchoring.offset(end, history.cost_prefix),
                anchoring.removal_ratio(end),
                # what the counted request had removed already, in estimated tokens
                history.estimated_fixed + history.cost_prefix[anchor.messages] - anchor.estimated,
                anchoring.ceiling(end),
            )
        if weights != (history.fixed_tokens, history.removal_ratio, history.removed_at_anchor, history.ceiling):
            history.fixed_tokens, history.removal_ratio, history.removed_at_anchor, history.ceiling = weights
            self._cut = None  # the cuts were sized with the old correction

    @property
    def correction(self) -> int:
        """What the anchoring adds to the estimate of the request weighed last (0: none)."""
        return self.history.fixed_tokens - self.history.estimated_fixed

    def anchored(self, estimate: int) -> int:
        """The anchored size of the request for the whole history that ctxfit's estimate puts
        at `estimate` (the request `plan()` weighed last)."""
        return self.history.anchored(estimate + self.correction, len(self.history.messages))

    def confirmed(self, end: int) -> int:
        """The reported size the request before message `end` is anchored on (0: none)."""
        return self.anchoring.confirmed(end) if self.anchoring is not None else 0

    def _evaluate(self, end: int) -> tuple[int, int]:
        """(cleared batches, kept start) for the request made before message `end`."""
        options, history, clearing = self.options, self.history, self.clearing
        clearing.protect(end)
        batches, start = self.cleared_batches, self.start
        if self._cut_for(start, batches).bound + history.cost_prefix[end] <= options.budget:
            return batches, start  # what most requests of a long walk find: nothing to change
        available = clearing.batch_count()
        target = clear_target(history, self.request_ends, end)
        while batches < available and self._request_tokens(start, end, batches) > target:
            batches += 1
        if self._request_tokens(start, end, batches) <= options.budget or history.first < 0 or not options.trim:
            return batches, start
        return self._trim(end, batches)

    def _trim(self, end: int, batches: int) -> tuple[int, int]:
        """(cleared batches, kept start) once stages 2-3 must cut: the oldest start that fits
        and keeps every protected result it does not leave out. Rather than drop the round a
        protected result is in, the protected results are released into the cleared batches,
        oldest first (newest last), and the cut is sized again; never those the next reply
        reads (after the newest assistant message). When none fits, the smallest request,
        with every releasable result cleared (unless it keeps none of them)."""
        clearing, trimming, current, original = self.clearing, self.trimming, self.start, batches
        newest_reply = _last_reply(self.history.messages, end)
        mark = clearing.mark()
        start = trimming.fitting_start(end, batches, current)
        while (start is None or not self._keeps_protected(start)) and clearing.release_oldest(newest_reply):
            batches = clearing.batch_count()
            start = trimming.fitting_start(end, batches, current)
        if start is None:
            start = trimming.smallest_start(end, batches, current)
        if clearing.protect_from > mark[0] and start > self.history.results[clearing.protect_from - 1].index:
            clearing.undo(mark)  # the cut keeps none of the results released: nothing gained
            batches, start = original, trimming.choose_start(end, original, current)
        return batches, start

    def _keeps_protected(self, start: int) -> bool:
        """Whether a cut at `start` keeps every protected result (those in the head always)."""
        first = self.history.first
        return all(r.index >= start or r.index <= first for r in self.clearing.protected())

    def _request_tokens(self, start: int, end: int, batches: int) -> int:
        """Upper bound of the request for the history before `end` with these ratchets."""
        return self.history.anchored(self._estimate(start, end, batches), end)

    def _exact_tokens(self, start: int, end: int, batches: int) -> int:
        """The size of the request as sent (the merge of Anthropic's head counted exactly)."""
        return self.history.anchored(self._exact_estimate(start, end, batches), end)

    def _exact_estimate(self, start: int, end: int, batches: int) -> int:
        tokens = self._estimate(start, end, batches)
        return tokens + self.trimming.merge_correction(start) if self.history.trimmed(start) else tokens

    def _estimate(self, start: int, end: int, batches: int) -> int:
        """`_request_tokens` with what was removed counted at its raw estimate."""
        history = self.history
        if history.trimmed(start):
            return self.trimming.kept_estimate(start, end, batches)
        return history.fixed_tokens + history.cost_prefix[end] - self.clearing.saved(batches)

    # --- the plan -----------------------------------------------------------------------------

    def plan(self) -> Plan:
        """The plan for the request made now, at the end of the history (nothing committed)."""
        end = len(self.history.messages)
        self._anchor(end)
        mark = self.clearing.mark()
        batches, start = self._evaluate(end)
        plan = self._describe(end, batches, start)
        self._planned = (end, batches, start)
        self.planned_estimate = self._exact_estimate(start, end, batches) - self.correction
        self.clearing.undo(mark)
        return plan

    def _describe(self, end: int, batches: int, start: int) -> Plan:
        options, history, clearing = self.options, self.history, self.clearing
        before = history.fixed_tokens + history.cost_prefix[end]
        described, running = [], before
        for number in range(clearing.batch_count()):
            refs = tuple(clearing.candidates[clearing.batch_end(number) : clearing.batch_end(number + 1)])
            freed = sum(r.saving for r in refs)
            running -= freed
            described.append(Batch(number + 1, refs, freed, running, number < batches))
        after, stage = self._exact_tokens(start, end, batches), self.trimming.stage(start, batches)
        anchor: int | None = None
        dropped: list[tuple[int, int]] = []
        if history.trimmed(start):
            anchor, dropped = self.trimming.dropped(start)
        else:
            start = max(history.first + 1, 0)
        return Plan(
            stage=stage,
            budget=options.budget,
            window=options.window,
            tokens_before=before,
            tokens_after=after,
            fixed_tokens=history.estimated_fixed,
            confirmed=self.confirmed(end),
            batches=tuple(described),
            protected=clearing.protected(),
            too_small=tuple(clearing.too_small),
            first=history.first,
            start=start,
            anchor=anchor,
            dropped=tuple(dropped),
            pinned=history.pinned_in(dropped),
            messages=end,
            overrun=options.budget < after <= options.window,
            cannot_fit=after > options.window,
        )

    # --- request shapes, for replay -------------------------------------------------------------

    def shared_tokens(self, previous: Shape, current: Shape) -> int:
        """Tokens at the start of `current` that are identical, message by message, to the
        start of `previous` (an earlier request of this walk): what a prefix cache can reuse.

        >>> from ctxfit_cli.core.model import Part, PartKind
        >>> fitter = Fitter(FitOptions(budget=100))
        >>> fitter.extend([Message(Role.USER, (Part(PartKind.TEXT, "abcd"),), b"")])
        >>> a = fitter._shape(1, 0, 0); b = fitter._shape(1, 0, 0)
        >>> fitter.shared_tokens(a, b) == fitter.still_sent_tokens(a, b) == a.tokens == 5
        True
        """
        return self.sharing.shared_tokens(previous, current)

    def still_sent_tokens(self, previous: Shape, current: Shape) -> int:
        """Tokens of `previous` that `current` still sends, wherever they are in it (the
        replay's cache bound; `sharing.Sharing.still_sent_tokens`)."""
        return self.sharing.still_sent_tokens(previous, current)

    def _shape(self, end: int, batches: int, start: int) -> Shape:
        cut = self._cut_for(start, batches)
        tokens = cut.exact + self.history.cost_prefix[end]
        return Shape(end, cut.cleared, cut.start, cut.anchor, tokens, cut.stage, self.correction, cut.removal)

    def _cut_for(self, start: int, batches: int) -> _Cut:
        """What the requests with this kept start and these cleared candidates have in common:
        all of their shape but the end. Their sizes differ only by the messages after `start`,
        so a size is the cut's own part plus `cost_prefix[end]`. Most requests of a long walk
        keep the cut of the request before, so it is made once per cut, not once per request."""
        cleared = self.clearing.batch_end(batches)
        cut = self._cut
        if cut is not None and cut.key == (start, batches, cleared):
            return cut
        history = self.history
        end = len(history.messages)  # any end past the cut gives the same parts
        here = history.cost_prefix[end]
        trimmed = history.trimmed(start)
        estimate = self._exact_estimate(start, end, batches)
        exact = history.anchored(estimate, end)  # `_exact_tokens`
        self._cut = cut = _Cut(
            (start, batches, cleared),
            cleared,
            start if trimmed else 0,
            self.trimming.anchor(start) if trimmed else None,
            self.trimming.stage(start, batches),
            self._request_tokens(start, end, batches) - here,
            exact - here,
            exact - estimate,  # the same for any end: see `History.anchored`
        )
        return cut


class _Cut(NamedTuple):
    """A kept start and a count of cleared batches, as `Fitter._cut_for` sizes them."""

    key: tuple[int, int, int]  # (start, batches, cleared candidates)
    cleared: int
    start: int  # the kept start when trimmed, else 0
    anchor: int | None
    stage: str
    bound: int  # `_request_tokens` less `cost_prefix[end]`
    exact: int  # `_exact_tokens` less `cost_prefix[end]`
    removal: int  # what the removal ratio adds (`Shape.removal`)


def _last_reply(messages: Sequence[Message], end: int) -> int:
    """The index of the newest assistant message before `end` (-1: none)."""
    for i in range(end - 1, -1, -1):
        if messages[i].role is _ASSISTANT:
            return i
    return -1
