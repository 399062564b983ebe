"""The history a fitter walks, held as running sums so that any request's size is a few lookups.

Append-only, one message at a time: each adds to the prefix sums (its tokens, and its tokens
with every clearable result cleared), records its tool results, and may be a turn start or a
round start — a place where stage 2 or 3 may start the kept history. The stages read it
(`clearing.py`, `trimming.py`); nothing here decides what to send.
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Sequence

from ...counters.seed import SEED
from ..costs import message_cost
from ..model import Message, Part, PartKind, Role
from ..notes import CLEARED_RESULT
from ..options import FitOptions
from ..plan import ResultRef
from .note import note_cost

# Enum members as plain names: in Python 3.11 `PartKind.TOOL_RESULT` is a slow attribute
# lookup, and these are compared for every part of every message.
_TOOL_CALL, _TOOL_RESULT = PartKind.TOOL_CALL, PartKind.TOOL_RESULT
_USER, _ASSISTANT = Role.USER, Role.ASSISTANT


class History:
    """The messages walked so far (the system prompt and tools apart, as `fixed`)."""

    def __init__(self, options: FitOptions, fixed: Sequence[Message] = ()) -> None:
        self.options = options
        self.counter = options.counter
        self.fixed = tuple(fixed)
        #: ctxfit's estimate of the fixed part; `fixed_tokens` adds the anchoring correction
        #: (`core.anchor`) of the request being weighed, so that every size is anchored.
        self.estimated_fixed = sum(message_cost(m, self.counter).tokens for m in self.fixed)
        self.fixed_tokens = self.estimated_fixed
        #: What an estimated token removed since the anchored request is worth, and the
        #: estimate of what that request had removed (`anchored`).
        self.removal_ratio = 1.0
        self.removed_at_anchor = 0
        #: The ceiling of a request's size apart from its anchor (`Anchoring.ceiling`): every
        #: estimated token at most `ceiling_ratio`, plus reasoning the estimate cannot see.
        self.ceiling: tuple[float, int] | None = None
        self.messages: list[Message] = []
        self.cost_prefix = [0]  # tokens of messages[:i]
        self.floor_prefix = [0]  # the same with every clearable result cleared
        #: Pinned messages (DESIGN §14: kept wherever the history is cut) and their tokens so far.
        self.pinned: list[int] = []
        self.pinned_prefix = [0]
        self.results: list[ResultRef] = []
        self.result_index: list[int] = []  # message index of each result, for bisect
        self.tool_names: dict[str, str] = {}
        #: The first message (the task, kept whatever is trimmed); -1 until a user message comes.
        self.first = -1
        self.note_tokens = 0  # what the trimmed-history note adds to the first message
        self.turn_starts: list[int] = []  # human user messages after the first message, no call open
        self.round_starts: list[int] = []  # assistant messages after the first message, no call open
        self.turn_steps: list[int] = []  # turn starts that are step positions (stable)
        self.round_steps: list[int] = []  # step positions among the newest turn's rounds
        self.all_round_steps: list[int] = []  # step positions among every turn's rounds
        self.open_calls = OpenCalls()
        self._cleared_memo: dict[int, int] = {}  # ASCII name and id lengths -> a cleared result's tokens
        self._note_vector: tuple[int, ...] | None = None
        self._cleared_by_tool: dict[str, tuple[int, ...]] = {}  # the note's vector plus a tool name's

    def append(self, message: Message) -> None:
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
                if self.first >= 0 and self.clearable(ref):
                    floor -= saving
        self.cost_prefix.append(self.cost_prefix[-1] + cost.tokens)
        self.floor_prefix.append(self.floor_prefix[-1] + floor)
        if message.pinned:
            self.pinned.append(i)
        self.pinned_prefix.append(self.pinned_prefix[-1] + (cost.tokens if message.pinned else 0))
        if self.first < 0:
            if message.role is _USER:
                self.first = i
                self.note_tokens = note_cost(message, self.counter)
        elif not boundary:
            pass  # inside a round: a user message with results and text is no turn start
        elif message.is_human_turn:
            self._add_turn(i)
        elif message.role is _ASSISTANT:
            self._add_round(i)

    def anchored(self, tokens: int, end: int) -> int:
        """A request before `end` weighed at `tokens` (its estimate with the anchoring
        correction in `fixed_tokens`), with what ctxfit removed since the anchored request
        counted at `removal_ratio` rather than at its raw estimate (`Anchoring.removal_ratio`
        says why). What was removed is what the full history's estimate has beyond it.

        Never more than the ceiling: crediting each removal at the low end of the ratio adds up
        when most of a long history is removed (a 5M-token log fitted to a budget said its
        smallest request was 1.4M tokens), while what is sent can be bounded directly, each of
        its estimated tokens at the high end. For a request that removed nothing the ceiling is
        never the lower of the two."""
        anchored = tokens
        if self.removal_ratio != 1.0:
            removed = self.fixed_tokens + self.cost_prefix[end] - tokens - self.removed_at_anchor
            anchored = tokens + round((1.0 - self.removal_ratio) * removed)
        if self.ceiling is None:
            return anchored
        ratio, reasoning = self.ceiling
        estimate = tokens - (self.fixed_tokens - self.estimated_fixed)
        return min(anchored, round(estimate * ratio) + reasoning)

    def clearable(self, ref: ResultRef) -> bool:
        """Whether stage 1 may ever clear this result: after the first message, big enough."""
        return ref.index > self.first and ref.tokens > self.options.min_clear_tokens and ref.saving > 0

    def trimmed(self, start: int) -> bool:
        """Whether a request whose kept history starts at `start` leaves messages out."""
        return self.first >= 0 and start > self.first + 1

    def pinned_tokens(self, start: int, end: int) -> int:
        """Tokens of the pinned messages in [start, end): kept when that range is left out."""
        return self.pinned_prefix[end] - self.pinned_prefix[start]

    def pinned_in(self, ranges: list[tuple[int, int]]) -> tuple[int, ...]:
        """The pinned messages inside these ranges (left out otherwise), in order."""
        pinned = self.pinned
        return tuple(
            pinned[k] for a, b in ranges for k in range(bisect.bisect_left(pinned, a), bisect.bisect_left(pinned, b))
        )

    def message_tokens(self, i: int) -> int:
        return self.cost_prefix[i + 1] - self.cost_prefix[i]

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
        named = self._cleared_by_tool.get(part.tool)  # (a few tool names, a replay clears thousands)
        if named is None:
            named = vector if not part.tool else tuple(map(operator.add, vector, self.counter.measure(part.tool)))
            self._cleared_by_tool[part.tool] = named
        if part.call_id:
            named = tuple(map(operator.add, named, self.counter.measure(part.call_id)))
        return self.counter.tokens(named)

    # Step positions: a cut moves in steps of at least `drop_step` of the budget (measured with
    # every clearable result cleared), so after a cut the next requests reuse the cache.

    def _add_turn(self, i: int) -> None:
        self.turn_starts.append(i)
        previous = self.turn_steps[-1] if self.turn_steps else self.first + 1
        if self.floor_prefix[i] - self.floor_prefix[previous] >= self._step_tokens():
            self.turn_steps.append(i)
        self.round_steps = []

    def _add_round(self, i: int) -> None:
        self.round_starts.append(i)
        turn = self.turn_starts[-1] if self.turn_starts else self.first + 1
        previous = self.round_steps[-1] if self.round_steps else turn
        if i > turn and self.floor_prefix[i] - self.floor_prefix[previous] >= self._step_tokens():
            self.round_steps.append(i)
            self.all_round_steps.append(i)

    def _step_tokens(self) -> float:
        return self.options.drop_step * self.options.budget


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
