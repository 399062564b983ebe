"""Planning what to send: the three stages of DESIGN §4, cache-safe by construction.

The plan for a history is computed by walking it forward, request by request (a request is made
before every assistant message, and one more at the end). Two numbers only ever grow along the
walk: how many batches of old tool results are cleared, and where the kept history starts. So as
a conversation grows, each request's cleared set contains the previous one's and the kept start
never moves back — the provider's prefix cache keeps working — and the plan is still a pure
function of the history: fitting the same history twice gives the same plan.

Stages, each tried only when the one before was not enough:

1. **clear** — replace the oldest tool results by a constant note, in batches of `batch_size`
   counted from the oldest candidate. The newest results that fit together in
   `protect_share` of the budget stay whole (always at least one); results of at most
   `min_clear_tokens` are never cleared. Once it has to clear, it clears whole batches down to
   `lowwater` of the budget (0.55 by default), so the next several requests need no clearing
   and reuse the prompt cache; `lowwater=None` is DESIGN §4's strict rule (just under the budget).
2. **turns** — keep the first message (with a note), and the newest whole user turns.
3. **rounds** — inside the newest turn: the first message, the note, the turn's own opening
   message, and the newest whole tool rounds.

The kept start moves in steps of at least `drop_step` of the budget, so after a cut the
request is well under the budget and the next requests reuse the cache.

>>> from ctxfit_cli.core.model import Message, Part, PartKind, Role
>>> user = Message(Role.USER, (Part(PartKind.TEXT, "hi"),), b'{"role":"user","content":"hi"}')
>>> plan_fit([user], budget=100).stage
'none'
"""

from __future__ import annotations

import bisect
import operator
from typing import Callable, Iterator, NamedTuple, Sequence

from ..counters.seed import SEED, Counter
from .estimate import MessageCost, merged_cost, message_cost, parts_cost
from .model import Message, Part, PartKind, Role
from .notes import CLEARED_RESULT, TRIMMED_HISTORY
from .options import DEFAULT_LOWWATER, DEFAULT_WINDOW, FitOptions  # noqa: F401 (also importable from here)
from .plan import Batch, Plan, ResultRef

#: Requests over which `FitOptions.headroom` measures how fast the conversation grows.
GROWTH_WINDOW = 8
# Enum members as plain names: in Python 3.11 `PartKind.TOOL_RESULT` is a slow attribute
# lookup, and these are compared for every part of every message.
_TOOL_CALL, _TOOL_RESULT = PartKind.TOOL_CALL, PartKind.TOOL_RESULT
_USER, _ASSISTANT = Role.USER, Role.ASSISTANT


def plan_fit(messages: Sequence[Message], *, budget: int, fixed: Sequence[Message] = (),
             options: FitOptions | None = None, **option_values) -> Plan:
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

    def __init__(self, options: FitOptions, fixed: Sequence[Message] = (), *,
                 dialect: str = "openai", on_request: Callable[[Plan], None] | None = None,
                 on_shape: Callable[["Shape"], None] | None = None) -> None:
        self.options = options
        self.counter = options.counter
        self.dialect = dialect
        #: Called with the plan of every request the walk passes (used by replay).
        self.on_request = on_request
        #: Called with the light `Shape` of every request the walk passes (used by replay:
        #: building a whole `Plan` per request would cost as much as the history is long).
        self.on_shape = on_shape
        self._merge_memo: dict[int, int] = {}
        self._cleared_memo: dict[int, int] = {}  # ASCII name and id lengths -> a cleared result's tokens
        self._note_vector: tuple[int, ...] | None = None
        self.fixed = tuple(fixed)
        self.fixed_tokens = sum(message_cost(m, self.counter).tokens for m in self.fixed)
        self.messages: list[Message] = []
        self.cost_prefix = [0]  # tokens of messages[:i]
        self.floor_prefix = [0]  # the same with every clearable result cleared
        self.results: list[ResultRef] = []
        self.result_index: list[int] = []  # message index of each result, for bisect
        self.tool_names: dict[str, str] = {}
        self.candidates: list[ResultRef] = []
        self.candidate_index: list[int] = []
        self.saving_prefix = [0]  # savings of candidates[:i]
        self.batch_ends: list[int] = []  # candidates count at the end of each closed batch
        self.too_small: list[ResultRef] = []
        self.first = -1
        self.turn_starts: list[int] = []  # human user messages after the first message, no call open
        self.round_starts: list[int] = []  # assistant messages after the first message, no call open
        self.open_calls = OpenCalls()
        self.turn_steps: list[int] = []  # turn starts that are step positions (stable)
        self.round_steps: list[int] = []  # step positions among the newest turn's rounds
        self.note_tokens = 0
        # Walk state; the ratchets (cleared batches, start) are committed at request points.
        self.protect_from = 0  # results[protect_from:protected_end] are protected
        self.protected_end = 0
        self.protect_sum = 0
        self.cleared_batches = 0
        self.start = 0  # kept start; 0 while nothing is dropped
        self.requests = 0
        self.request_ends: list[int] = []  # the history length at each committed request
        self._cut: _Cut | None = None  # the last cut sized (see `_cut_for`)
        self._appended_memo: tuple | None = None  # (see `_appended`)

    # --- growing the history ----------------------------------------------------------------

    def update(self, history: Sequence[Message]) -> Plan:
        """The plan for `history`, which must extend the history seen before (same objects)."""
        known = len(self.messages)
        if len(history) < known or (known and (history[0] is not self.messages[0]
                                               or history[known - 1] is not self.messages[-1])):
            raise ValueError("update() needs the same history grown at the end; start a new Fitter")
        self.extend(history[known:])
        return self.plan()

    def extend(self, new: Sequence[Message]) -> None:
        """Add messages; the request made before each assistant message is walked through."""
        for message in new:
            if message.role is _ASSISTANT and self.messages:
                self._commit(len(self.messages))
            self._append(message)

    def _append(self, message: Message) -> None:
        # Runs for every message of every history fitted: one pass over the parts, locals.
        i = len(self.messages)
        self.messages.append(message)
        cost = message_cost(message, self.counter)
        floor = cost.tokens
        results, taken = cost.results, 0
        boundary = self.open_calls.add(message)
        tool_names = self.tool_names
        for j, part in enumerate(message.parts):
            kind = part.kind
            if kind is _TOOL_CALL:
                if part.call_id:
                    tool_names[part.call_id] = part.tool
            elif kind is _TOOL_RESULT:
                if taken == len(results):
                    continue  # a result inside a system message is system text, never cleared
                tokens = results[taken]
                taken += 1
                saving = tokens - self._cleared_tokens(part)
                ref = ResultRef(i, j, part.call_id, part.tool or tool_names.get(part.call_id, ""), tokens, saving)
                self.results.append(ref)
                self.result_index.append(i)
                if self.first >= 0 and self._clearable(ref):
                    floor -= saving
        self.cost_prefix.append(self.cost_prefix[-1] + cost.tokens)
        self.floor_prefix.append(self.floor_prefix[-1] + floor)
        if self.first < 0:
            if message.role is _USER:
                self.first = i
                self.note_tokens = self._note_delta(message)
        elif not boundary:
            pass  # inside a round: a user message with results and text is no turn start
        elif message.is_human_turn:
            self._add_turn(i)
        elif message.role is _ASSISTANT:
            self._add_round(i)

    def _clearable(self, ref: ResultRef) -> bool:
        return ref.index > self.first and ref.tokens > self.options.min_clear_tokens and ref.saving > 0

    def _cleared_tokens(self, part: Part) -> int:
        """What the result costs once cleared: the note, plus its tool name and call id.

        The same sum as `message_cost` makes for a cleared part, without building one."""
        if self._note_vector is None:
            self._note_vector = self.counter.measure(CLEARED_RESULT)
        vector = self._note_vector
        if self.counter is SEED and part.tool.isascii() and part.call_id.isascii():
            names = len(part.tool) + len(part.call_id)  # one result per message read: memoized
            tokens = self._cleared_memo.get(names)
            if tokens is None:
                tokens = self._cleared_memo[names] = self.counter.tokens((vector[0] + names, *vector[1:]))
            return tokens
        for text in (part.tool, part.call_id):
            if text:
                vector = tuple(map(operator.add, vector, self.counter.measure(text)))
        return self.counter.tokens(vector)

    def _note_delta(self, first: Message) -> int:
        return note_cost(first, self.counter)

    def _add_turn(self, i: int) -> None:
        self.turn_starts.append(i)
        previous = self.turn_steps[-1] if self.turn_steps else self.first + 1
        if self._floor(previous, i) >= self._step_tokens():
            self.turn_steps.append(i)
        self.round_steps = []

    def _add_round(self, i: int) -> None:
        self.round_starts.append(i)
        turn = self.turn_starts[-1] if self.turn_starts else self.first + 1
        previous = self.round_steps[-1] if self.round_steps else turn
        if i > turn and self.floor_prefix[i] - self.floor_prefix[previous] >= self._step_tokens():
            self.round_steps.append(i)

    def _step_tokens(self) -> float:
        return self.options.drop_step * self.options.budget

    def _floor(self, a: int, b: int) -> int:
        return self.floor_prefix[b] - self.floor_prefix[a]

    # --- the walk -------------------------------------------------------------------------------

    def _commit(self, end: int) -> None:
        """Walk through the request made before message `end` and keep its ratchets."""
        self.cleared_batches, self.start = self._evaluate(end)
        self.requests += 1
        self.request_ends.append(end)
        if self.on_request is not None:
            self.on_request(self._describe(end, self.cleared_batches, self.start))
        if self.on_shape is not None:
            self.on_shape(self._shape(end, self.cleared_batches, self.start))

    def _protect(self, end: int) -> None:
        """Move the protected suffix up to the results before `end` (it only moves forward)."""
        quarter = self.options.protect_share * self.options.budget
        keep = self.options.protect_count
        visible = bisect.bisect_left(self.result_index, end)
        while self.protected_end < visible:
            self.protect_sum += self.results[self.protected_end].tokens
            self.protected_end += 1
        while self.protected_end - self.protect_from > (keep or 1) and (
                keep is not None or self.protect_sum > quarter):
            released = self.results[self.protect_from]
            self.protect_sum -= released.tokens
            self.protect_from += 1
            self._release(released)

    def _release(self, ref: ResultRef) -> None:
        """A result left the protected quarter: it becomes a candidate, or stays as too small."""
        if ref.index <= self.first:
            return
        if not self._clearable(ref):
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

    def _batch_end(self, batches: int) -> int:
        """How many candidates the first `batches` batches hold (the open one counts too)."""
        if batches <= 0:
            return 0
        return self.batch_ends[batches - 1] if batches <= len(self.batch_ends) else len(self.candidates)

    def _batch_count(self) -> int:
        opened = self.batch_ends[-1] if self.batch_ends else 0
        return len(self.batch_ends) + (1 if len(self.candidates) > opened else 0)

    def _saved(self, batches: int) -> int:
        return self.saving_prefix[self._batch_end(batches)]

    def _trimmed(self, start: int) -> bool:
        return self.first >= 0 and start > self.first + 1

    def _request_tokens(self, start: int, end: int, batches: int) -> int:
        """Upper bound of the request for the history before `end` with these ratchets."""
        if self._trimmed(start):
            return self._kept_tokens(start, end, batches)
        return self.fixed_tokens + self.cost_prefix[end] - self._saved(batches)

    def _evaluate(self, end: int) -> tuple[int, int]:
        """(cleared batches, kept start) for the request made before message `end`."""
        options = self.options
        self._protect(end)
        batches, start = self.cleared_batches, self.start
        if self._cut_for(start, batches).bound + self.cost_prefix[end] <= options.budget:
            return batches, start  # what most requests of a long walk find: nothing to change
        available = self._batch_count()
        target = self._clear_target(end)
        while batches < available and self._request_tokens(start, end, batches) > target:
            batches += 1
        if self._request_tokens(start, end, batches) <= options.budget or self.first < 0 or not options.trim:
            return batches, start
        return batches, self._choose_start(end, batches)

    def _clear_target(self, end: int) -> float:
        """How small stage 1 makes a request once it has to clear (DESIGN §4: the budget)."""
        options = self.options
        target = options.budget * (options.lowwater or 1.0)
        if options.headroom is not None:
            target = min(target, options.budget - options.headroom * self._growth(end))
        return target

    def _growth(self, end: int) -> float:
        """Tokens the history grew by per request, over the last `GROWTH_WINDOW` requests."""
        ends = self.request_ends[-GROWTH_WINDOW:]
        if not ends:
            return 0.0
        return (self.cost_prefix[end] - self.cost_prefix[ends[0]]) / len(ends)

    # --- stages 2 and 3 -----------------------------------------------------------------------

    def _kept_tokens(self, start: int, end: int, batches: int) -> int:
        """Upper bound of the request keeping the head, the note, an anchor and [start, end)."""
        tokens = self.fixed_tokens + self.cost_prefix[self.first + 1] + self.note_tokens
        tokens += self._anchor_tokens(start) + self.cost_prefix[end] - self.cost_prefix[start]
        cleared = self._batch_end(batches)
        first_kept = bisect.bisect_left(self.candidate_index, start, 0, cleared)
        return tokens - (self.saving_prefix[cleared] - self.saving_prefix[first_kept])

    def _anchor(self, start: int) -> int | None:
        """The opening message of the turn that `start` is inside of (kept in stage 3)."""
        at = bisect.bisect_right(self.turn_starts, start) - 1
        if at < 0:
            return None
        turn = self.turn_starts[at]
        return None if turn == start else turn

    def _choose_start(self, end: int, batches: int) -> int:
        """The oldest allowed start, never before the current one, whose request fits."""
        for start in self._start_options(end):
            if self._kept_tokens(start, end, batches) <= self.options.budget:
                return start
        # None fits: the smallest request, from the newest cut -- unless it would be the first cut
        # and what it leaves out costs no more than the note it adds (trimming must not enlarge a
        # request). Judged on the history alone, not on the walk so far, so that fitting the
        # payload again makes the same choice.
        newest = self._newest_cut(end)
        if newest is None or newest <= self.start:
            return self.start
        if not self._trimmed(self.start) and self._left_out(newest) <= self.note_tokens:
            return self.start
        return newest

    def _left_out(self, start: int) -> int:
        """Tokens of the history a cut at `start` leaves out (before any clearing): what lies
        between the first message and `start`, but the turn's opening message kept as anchor."""
        return self.cost_prefix[start] - self.cost_prefix[self.first + 1] - self._anchor_tokens(start)

    def _anchor_tokens(self, start: int) -> int:
        """Tokens of the anchor a cut at `start` keeps (0 when it keeps none)."""
        anchor = self._anchor(start)
        return 0 if anchor is None else self.cost_prefix[anchor + 1] - self.cost_prefix[anchor]

    def _start_options(self, end: int) -> Iterator[int]:
        """Starts to try, oldest first: the current one, turn steps, then the newest turn's rounds."""
        current = self.start
        if self._trimmed(current):
            yield current
        for step in self.turn_steps[bisect.bisect_right(self.turn_steps, current):]:
            if step >= end:
                return
            yield step
        last_turn = self._last_before(self.turn_starts, end)
        if last_turn is not None and last_turn > current:
            yield last_turn
        for step in self.round_steps[bisect.bisect_right(self.round_steps, current):]:
            if step < end and (last_turn is None or step > last_turn):
                yield step

    @staticmethod
    def _last_before(positions: list[int], end: int) -> int | None:
        at = bisect.bisect_left(positions, end) - 1
        return positions[at] if at >= 0 else None

    def _newest_cut(self, end: int) -> int | None:
        """The newest place a request can start: the newest round or turn before `end`."""
        cuts = [c for c in (self._last_before(self.round_starts, end),
                            self._last_before(self.turn_starts, end)) if c is not None]
        return max(cuts) if cuts else None

    # --- the plan -----------------------------------------------------------------------------

    def plan(self) -> Plan:
        """The plan for the request made now, at the end of the history (nothing committed)."""
        end = len(self.messages)
        saved = (self.protect_from, self.protected_end, self.protect_sum,
                 len(self.candidates), len(self.too_small), len(self.batch_ends))
        batches, start = self._evaluate(end)
        plan = self._describe(end, batches, start)
        protect_from, protected_end, protect_sum, candidates, too_small, batch_ends = saved
        self.protect_from, self.protected_end, self.protect_sum = protect_from, protected_end, protect_sum
        del self.candidates[candidates:], self.candidate_index[candidates:]
        del self.saving_prefix[candidates + 1:], self.too_small[too_small:]
        del self.batch_ends[batch_ends:]
        return plan

    def _describe(self, end: int, batches: int, start: int) -> Plan:
        options = self.options
        before = self.fixed_tokens + self.cost_prefix[end]
        described, running = [], before
        for number in range(self._batch_count()):
            refs = tuple(self.candidates[self._batch_end(number):self._batch_end(number + 1)])
            freed = sum(r.saving for r in refs)
            running -= freed
            described.append(Batch(number + 1, refs, freed, running, number < batches))
        after, stage = self._exact_tokens(start, end, batches), self._stage(start, batches)
        anchor, dropped = None, []
        if self._trimmed(start):
            anchor = self._anchor(start)
            upto = anchor if anchor is not None else start
            if upto > self.first + 1:
                dropped.append((self.first + 1, upto))
            if anchor is not None and start > anchor + 1:
                dropped.append((anchor + 1, start))
        else:
            start = max(self.first + 1, 0)
        return Plan(
            stage=stage, budget=options.budget, window=options.window,
            tokens_before=before, tokens_after=after, fixed_tokens=self.fixed_tokens,
            batches=tuple(described),
            protected=tuple(self.results[self.protect_from:self.protected_end]),
            too_small=tuple(self.too_small), first=self.first, start=start, anchor=anchor,
            dropped=tuple(dropped), messages=end,
            overrun=options.budget < after <= options.window,
            cannot_fit=after > options.window,
        )

    def _stage(self, start: int, batches: int) -> str:
        if self._trimmed(start):
            at = bisect.bisect_left(self.turn_starts, start)
            is_turn = at < len(self.turn_starts) and self.turn_starts[at] == start
            return "turns" if is_turn and self._anchor(start) is None else "rounds"
        return "clear" if batches else "none"

    # --- request shapes, for replay -------------------------------------------------------------

    def _exact_tokens(self, start: int, end: int, batches: int) -> int:
        """The size of the request as sent (the merge of Anthropic's head counted exactly)."""
        tokens = self._request_tokens(start, end, batches)
        return tokens + self._merge_correction(start) if self._trimmed(start) else tokens

    def _shape(self, end: int, batches: int, start: int) -> "Shape":
        cut = self._cut_for(start, batches)
        return Shape(end, cut.cleared, cut.start, cut.anchor, cut.exact + self.cost_prefix[end], cut.stage)

    def _cut_for(self, start: int, batches: int) -> "_Cut":
        """What the requests with this kept start and these cleared candidates have in common:
        all of their shape but the end. Their sizes differ only by the messages after `start`,
        so a size is the cut's own part plus `cost_prefix[end]`. Most requests of a long walk
        keep the cut of the request before, so it is made once per cut, not once per request."""
        cleared = self._batch_end(batches)
        cut = self._cut
        if cut is not None and cut.key == (start, batches, cleared):
            return cut
        end = len(self.messages)  # any end past the cut gives the same parts
        trimmed = self._trimmed(start)
        self._cut = cut = _Cut(
            (start, batches, cleared), cleared, start if trimmed else 0, self._anchor(start) if trimmed else None,
            self._stage(start, batches), self._request_tokens(start, end, batches) - self.cost_prefix[end],
            self._exact_tokens(start, end, batches) - self.cost_prefix[end])
        return cut

    def shared_tokens(self, previous: "Shape", current: "Shape") -> int:
        """Tokens at the start of `current` that are identical, message by message, to the
        start of `previous` (an earlier request of this walk): what a prefix cache can reuse.

        >>> fitter = Fitter(FitOptions(budget=100))
        >>> fitter.extend([Message(Role.USER, (Part(PartKind.TEXT, "abcd"),), b"")])
        >>> a = fitter._shape(1, 0, 0); b = fitter._shape(1, 0, 0)
        >>> fitter.shared_tokens(a, b) == fitter.still_sent_tokens(a, b) == a.tokens == 5
        True
        """
        if _appends(previous, current):
            return self._appended(previous)[0]
        return self._shared_run(previous, current)

    def still_sent_tokens(self, previous: "Shape", current: "Shape") -> int:
        """Tokens of `previous` (an earlier request of this walk) that `current` still sends,
        wherever they are in it: the most a prefix cache could reuse if every change were made
        after them (the replay's cache bound)."""
        if _appends(previous, current):
            return self._appended(previous)[1]
        return self._still_sent(previous, current)

    def _appended(self, shape: "Shape") -> tuple[int, int]:
        """What a request that only appends to `shape` shares with it, and still sends of it.

        All of `shape`'s runs and ranges (`_appends`), as `shape` shares with itself. Those are
        the cut's parts (the fixed part, the head, the anchor, the kept range up to the end,
        results cleared) and `cost_prefix[end]`: all the results a shape clears come before its
        end. So the cut's part is computed once per cut, and most requests of a long walk,
        which keep the cut of the request before, pay a lookup.
        """
        key = (shape.start, shape.anchor, shape.cleared)
        memo = self._appended_memo
        if memo is None or memo[0] != key:
            here = self.cost_prefix[shape.end]
            memo = self._appended_memo = (key, self._shared_run(shape, shape) - here,
                                          self._still_sent(shape, shape) - here)
        here = self.cost_prefix[shape.end]
        return memo[1] + here, memo[2] + here

    def _shared_run(self, previous: "Shape", current: "Shape") -> int:
        """`shared_tokens`, in general.

        A request is the fixed part, then — when trimmed — the first messages with the note
        (and, for Anthropic, a user message merged into it), then an optional anchor and one
        contiguous range of the history. So two requests share a common run of such segments,
        which ends early at the first result cleared since `previous`.
        """
        shared = self.fixed_tokens
        if previous.start or current.start:
            if not (previous.start and current.start):
                return shared + self.cost_prefix[self.first]  # the first message gained the note
            shared += self.cost_prefix[self.first]
            partner = self._merge_partner(current.start)
            if self.dialect == "anthropic" and partner != self._merge_partner(previous.start):
                return shared  # the first message is merged with another user message now
            shared += message_cost(self.messages[self.first], self.counter).tokens + self.note_tokens
            if self.dialect == "anthropic" and partner is not None:
                shared += self._merge_correction(current.start) + message_cost(
                    self.messages[partner], self.counter).tokens
        common = _common_run(self._segments(previous), self._segments(current))
        for low, high in common:
            changed = bisect.bisect_left(self.candidate_index, low, previous.cleared, current.cleared)
            if changed < current.cleared and self.candidate_index[changed] < high:
                return shared + self._range_tokens(low, self.candidate_index[changed], previous.cleared)
            shared += self._range_tokens(low, high, previous.cleared)
        return shared

    def _still_sent(self, previous: "Shape", current: "Shape") -> int:
        """`still_sent_tokens`, in general.

        A message counts when both requests send it the same way: the same message of the
        history with the same results cleared, or the same noted first message. Results cleared
        since `previous` change their message, so it is not counted.
        """
        tokens = self.fixed_tokens
        for low, high in overlapping_ranges(self._body(previous), self._body(current)):
            tokens += self._range_tokens(low, high, previous.cleared)
            tokens -= self._newly_cleared_tokens(low, high, previous.cleared, current.cleared)
        if previous.start and current.start:
            partner = self._merge_partner(current.start)
            if self.dialect != "anthropic" or partner == self._merge_partner(previous.start):
                tokens += message_cost(self.messages[self.first], self.counter).tokens + self.note_tokens
                if self.dialect == "anthropic" and partner is not None:
                    tokens += self._merge_correction(current.start) + message_cost(
                        self.messages[partner], self.counter).tokens
        return tokens

    def _body(self, shape: "Shape") -> list[tuple[int, int]]:
        """The history ranges a request sends as they are (the noted first message aside)."""
        if not shape.start:
            return [(0, shape.end)]
        return [(0, self.first), *self._segments(shape)]

    def _newly_cleared_tokens(self, low: int, high: int, before: int, after: int) -> int:
        """Tokens (as sent with `before` candidates cleared) of the messages in [low, high) that
        hold a candidate among candidates[before:after]."""
        a = bisect.bisect_left(self.candidate_index, low, before, after)
        b = bisect.bisect_left(self.candidate_index, high, before, after)
        return sum(self._range_tokens(m, m + 1, before) for m in dict.fromkeys(self.candidate_index[a:b]))

    def _segments(self, shape: "Shape") -> list[tuple[int, int]]:
        """The history ranges a request sends after its first message, in order."""
        if not shape.start:
            return [(0, shape.end)]
        segments = [(shape.anchor, shape.anchor + 1)] if shape.anchor is not None else []
        segments.append((shape.start, shape.end))
        if self.dialect == "anthropic" and self._merge_partner(shape.start) is not None:
            low, high = segments[0]  # the partner is merged into the first message
            segments[0] = (low + 1, high)
        return [(low, high) for low, high in segments if high > low]

    def _range_tokens(self, low: int, high: int, cleared: int) -> int:
        """Tokens of messages [low, high) with the oldest `cleared` candidates cleared."""
        a = bisect.bisect_left(self.candidate_index, low, 0, cleared)
        b = bisect.bisect_left(self.candidate_index, high, 0, cleared)
        return self.cost_prefix[high] - self.cost_prefix[low] - (self.saving_prefix[b] - self.saving_prefix[a])

    def _merge_partner(self, start: int) -> int | None:
        """The user message merged into the first message when the request is trimmed to
        `start` (Anthropic needs alternating roles): the anchor, or the message at `start`."""
        if not self._trimmed(start):
            return None
        anchor = self._anchor(start)
        follows = anchor if anchor is not None else start
        if follows < len(self.messages) and self.messages[follows].role is Role.USER:
            return follows
        return None

    def _merge_correction(self, start: int) -> int:
        """Anthropic needs alternating roles: a user message right after the first message is
        merged into it. The plan's sum counted them apart; this is the (≤ 0) difference."""
        if self.dialect != "anthropic":
            return 0
        if start not in self._merge_memo:
            self._merge_memo[start] = self._compute_merge_correction(start)
        return self._merge_memo[start]

    def _compute_merge_correction(self, start: int) -> int:
        partner = self._merge_partner(start)
        if partner is None:
            return 0
        head, following = self.messages[self.first], self.messages[partner]
        merged = merged_cost([noted_cost(head, self.counter), message_cost(following, self.counter)],
                             self.counter).tokens
        apart = (message_cost(head, self.counter).tokens + self.note_tokens
                 + message_cost(following, self.counter).tokens)
        return merged - apart


class OpenCalls:
    """The calls not answered yet as a history is read, message by message.

    A cut (where stage 2 or 3 starts the kept history) may only fall where no call is open
    (DESIGN §2: a round is never split): a user message that holds results *and* text (Claude
    Code's "[Request interrupted by user]") is inside a round, not a turn start. Calls that an
    assistant message leaves unanswered when the next assistant message comes are abandoned.

    >>> from ctxfit_cli.formats import to_message
    >>> calls = OpenCalls()
    >>> [calls.add(to_message(m, "anthropic")) for m in (
    ...     {"role": "user", "content": "Read it."},
    ...     {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
    ...     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "..."},
    ...                                  {"type": "text", "text": "[Request interrupted by user]"}]},
    ...     {"role": "assistant", "content": "Stopped."})]
    [True, True, False, True]
    """

    __slots__ = ("ids",)

    def __init__(self) -> None:
        self.ids: set[str] = set()

    def add(self, message: Message) -> bool:
        """Read the next message; whether no call was open before it (a place to cut)."""
        ids = self.ids
        boundary = not ids
        if message.role is _ASSISTANT:
            ids.clear()
        for part in message.parts:
            kind = part.kind
            if kind is _TOOL_CALL:
                ids.add(part.call_id)
            elif kind is _TOOL_RESULT:
                ids.discard(part.call_id)
        return boundary


class _Cut(NamedTuple):
    """A kept start and a count of cleared batches, as `Fitter._cut_for` sizes them."""

    key: tuple[int, int, int]  # (start, batches, cleared candidates)
    cleared: int
    start: int  # the kept start when trimmed, else 0
    anchor: int | None
    stage: str
    bound: int  # `_request_tokens` less `cost_prefix[end]`
    exact: int  # `_exact_tokens` less `cost_prefix[end]`


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


def _appends(previous: Shape, current: Shape) -> bool:
    """Whether `current` is `previous` with messages appended: the same cut, the same results
    cleared, a later end. Then each range `previous` sends is inside the same range of `current`
    (the ranges start at the same places), so the runs both requests start with, and the ranges
    both send, are exactly the ranges of `previous`."""
    return (previous.start == current.start and previous.anchor == current.anchor
            and previous.cleared == current.cleared and previous.end <= current.end)


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


#: The trimmed-history note as a part of the first message.
TRIM_NOTE_PART = Part(PartKind.TEXT, TRIMMED_HISTORY)


def noted_cost(first: Message, counter: Counter = SEED) -> MessageCost:
    """The estimate of the first message once it carries the note, from its own estimate (a
    big transcript's messages may be held without their text)."""
    cost = message_cost(first, counter)
    if has_trim_note(first):
        return cost
    return merged_cost([cost, parts_cost(first.role, (TRIM_NOTE_PART,), counter)], counter)


def note_cost(first: Message, counter: Counter = SEED) -> int:
    """What adding the trimmed-history note to the first message costs (0 if it has it)."""
    return noted_cost(first, counter).tokens - message_cost(first, counter).tokens


def has_trim_note(message: Message) -> bool:
    """Whether a first message already carries the note (a payload fitted before)."""
    return any(p.kind is PartKind.TEXT and p.text == TRIMMED_HISTORY for p in message.parts)
