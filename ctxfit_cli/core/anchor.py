"""Counts the provider confirmed (DESIGN §11): every size anchored on the last reported one.

Every reply reports the exact size of the prompt it was given. The next request is that
request plus what changed since, so only the change is estimated:

    next = reported(last request) + est(messages added since)
           − est(what ctxfit removed from the counted part) + est(what it put in: notes)

ctxfit's own estimate of a request already adds and removes those parts, so the anchored size
is that estimate plus a correction (`Anchoring.offset`): the reported size minus ctxfit's
estimate of the request it counted (`Anchor.estimated`), the learned growth ratio applied to
the messages added since, and the reasoning Codex re-sends within a turn. A fitter that adds
the correction to every size it weighs, and counts what it removed since the counted request
at `Anchoring.removal_ratio`, decides with the anchored size.

- An anchor holds only while the prefix it counted is still the prefix sent: its `digest` (of
  the fixed part and the messages the request held) must match. A change ctxfit did not make
  (the agent's compaction, an edited history, another system prompt or tool list) drops it
  until the next reply; then the estimate alone is the count. A change the provider does not
  count is none: a `cache_control` marker that moved to the newest message (`core.uncounted`).
- Per conversation, the ratio of reported to estimated growth between two replies, learned
  online (`GrowthRatio`: bounded, smoothed, starting at 1), scales the estimate of new messages,
  and how far each reply's growth fell from it (the mean miss) says how sure it is: what was
  added is counted at the high end of that (`GrowthRatio.high`), what ctxfit removed at the low
  end (`GrowthRatio.low`). The estimated part of a request is then an upper bound as far as the
  replies can tell, so a request counted at the budget is not over it by the estimate's error.
- Codex sends a turn's encrypted reasoning back with each later request of the same turn and
  drops it at the next user turn: a reply's `reasoning` tokens (as reported) join the next
  request of its turn, and a new turn loses the reasoning the counted request held.

Plain data in, plain data out.

>>> anchor = Anchor(reported=164_831, messages=3, estimated=150_000)
>>> Anchoring([anchor]).offset(end=3, prefix=[0, 10, 20, 30])
14831
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from .growing import same_objects
from .model import Message, RecordedCall
from .uncounted import count_key

#: Growth (estimated tokens) below which a pair of replies teaches the ratio nothing: a few
#: tokens of framing would decide it.
LEARN_FROM = 200
#: The learned ratio stays within these bounds, whatever a few odd replies say.
RATIO_BOUNDS = (0.8, 1.5)
#: Weight of each new sample in the smoothed ratio and its mean miss (exponential, in log space).
RATIO_WEIGHT = 0.3
#: How many mean misses from the learned ratio an estimated change is counted at: additions at
#: the high end, removals at the low end. Each growth's text scatters around the ratio (by 7%
#: in the median on the real logs), more than the ratio itself can follow. With two, the real
#: logs' calls under by more than 3% are only those whose growth the log does not hold at all
#: (a file Claude Code injected, hook output: bench/anchored.py), and a 60-step loop reading
#: code stayed within its budget on each of 40 texts in both dialects (none of the 80 runs
#: over, against 5 at the ratio alone: tests/test_proxy_anchor.py's loop). Not a guarantee: a
#: piece of text denser than any before it can still put a request over by a step's error
#: (3 runs of 80, by 0.34% at most, with other system prompts).
SPREAD = 2.0
#: The mean miss before any reply (log space): a few replies that happen to agree say little
#: about the next growth's text (without it, a 60-step loop reading ctxfit's own code went 0.2%
#: over its budget on 2 texts of 40, after four agreeing replies; the texts the test reads now
#: do not need it). On the real logs the miss is 0.07 (median) to 0.10 (mean); starting lower
#: leaves the first growths near the counter's own estimate, which its profile was calibrated
#: to make err high (the bench's 95th percentile is 2.9% with it, 2.5% without).
MISS_PRIOR = 0.05


class Anchor(NamedTuple):
    """One reply's report of the request it was given."""

    #: The provider's count of the whole request.
    reported: int
    #: How many history messages that request held (the fixed part apart).
    messages: int
    #: ctxfit's estimate of that request as it was sent (same counter as the fit).
    estimated: int
    #: The digest of the fixed part and those messages (`PrefixDigests`); b"" when the history is the log's
    #: own record of what was sent (nothing to check).
    digest: bytes = b""
    #: Reasoning tokens the reply produced, which the next request of the same turn re-sends.
    reasoning: int = 0
    #: Reasoning of earlier replies of the same turn that `reported` includes.
    turn_reasoning: int = 0


class Count(NamedTuple):
    """A request's size, split into what a provider confirmed and what is estimated."""

    tokens: int
    #: The reported size it is anchored on (0: nothing confirmed, all estimated).
    confirmed: int = 0

    @property
    def estimated(self) -> int:
        """The estimated part: what changed since the confirmed request (may be negative
        when ctxfit removed more than was added)."""
        return self.tokens - self.confirmed

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "confirmed": self.confirmed, "estimated": self.estimated}


class PrefixDigests:
    """What an anchor compares: a digest of the fixed part's and the messages' bytes, in order,
    for the histories of one conversation. A message's bytes are its `count_key`: without what the
    provider does not count (a `cache_control` marker that moved, `core.uncounted`). Each history
    is hashed only past what it shares with the last one: a conversation grows by a message or
    two per request, and hashing all of it again was a third of a proxy worker's time per
    request (0.33 ms for a 300 KB history).

    >>> from ctxfit_cli.core.model import Message
    >>> one, two = Message("user", (), raw=b'"a"'), Message("assistant", (), raw=b'"b"')
    >>> digests = PrefixDigests([])
    >>> digests.of([one, two]) == PrefixDigests([]).of([one, two]), digests.of([one]) == digests.of([one, two])
    (True, False)
    """

    def __init__(self, fixed: Iterable[Message]) -> None:
        import hashlib  # (only where anchors are checked: `estimate` never needs it)

        base = hashlib.blake2b(digest_size=16)
        for message in fixed:
            _add(base, message)
        base.update(b"\x00")
        self._base = base
        #: The last history's messages, each as its bytes, its key and the hash of everything up to it.
        self._chain: list[tuple[bytes, bytes, Any]] = []
        #: The messages the chain was last found to hold: the very same ones (a message is never
        #: changed in place) are found so by comparing two lists of pointers, not by reading every
        #: message and chain entry again (cold in memory at the next request: 87 -> 558 µs a
        #: request under cProfile as a proxy worker's history grew from 160 to 1,300 messages).
        self._held: list[Message] = []

    def of(self, messages: Sequence[Message]) -> bytes:
        chain = self._chain
        shared = same_objects(messages, self._held[: len(chain)])
        for (raw, key, _), message in zip(chain[shared:], messages[shared:]):
            if raw is not message.raw and key != count_key(message):
                del chain[shared:]  # another history from here on
                break
            shared += 1
        state = chain[shared - 1][2] if shared else self._base
        if shared < len(messages):
            for message in messages[shared:]:
                state = state.copy()
                key = count_key(message)
                state.update(len(key).to_bytes(8, "little"))
                state.update(key)
                chain.append((message.raw, key, state))
        self._held = list(messages[: len(chain)])
        final = state.copy()
        final.update(b"\x00")
        return final.digest()


def prefix_digest(fixed: Iterable[Message], messages: Iterable[Message]) -> bytes:
    """The digest of one history (`PrefixDigests`, when a conversation's are asked in turn)."""
    return PrefixDigests(fixed).of(list(messages))


def _add(digest: Any, message: Message) -> None:
    digest.update(len(message.raw).to_bytes(8, "little"))
    digest.update(message.raw)  # (the fixed part: compared byte for byte, markers and all)


class GrowthRatio:
    """Reported ÷ estimated growth between replies, learned online (bounded, smoothed).

    >>> ratio = GrowthRatio()
    >>> ratio.learn(reported=1200, estimated=1000); round(ratio.value, 3)
    1.056
    >>> ratio.learn(reported=10, estimated=5); round(ratio.value, 3)  # too small to say anything
    1.056
    >>> round(ratio.low, 3), round(ratio.high, 3)  # one reply so far: a wide margin
    (0.883, 1.264)
    """

    def __init__(self) -> None:
        self.value = 1.0
        self.samples = 0
        #: The mean miss: how far (in log space, smoothed) each sample fell from the ratio
        #: learned before it, starting at `MISS_PRIOR`.
        self.miss = MISS_PRIOR

    @property
    def high(self) -> float:
        """The ratio an estimated addition is counted at: the high end of what replies showed."""
        return self.value * math.exp(SPREAD * self.miss)

    @property
    def low(self) -> float:
        """The ratio an estimated removal is credited at: the low end of what replies showed."""
        return self.value * math.exp(-SPREAD * self.miss)

    def next_high(self) -> float:
        """The most `high` can be once one more reply is learned, whatever it reports (the
        proxy's fast path bounds a request with it: `serve/bypass.py`). It is convex in the
        sample, so the most is now or at a sample at either bound.

        >>> ratio = GrowthRatio(); round(ratio.high, 3), round(ratio.next_high(), 3)
        (1.105, 1.545)
        """
        highest = self.high
        for bound in RATIO_BOUNDS:
            after = GrowthRatio()
            after.value, after.miss = self.value, self.miss
            after.learn(reported=round(bound * 1_000_000), estimated=1_000_000)
            highest = max(highest, after.high)
        return highest

    def learn(self, *, reported: int, estimated: int) -> None:
        if estimated < LEARN_FROM or reported <= 0:
            return
        low, high = RATIO_BOUNDS
        sample = math.log(min(max(reported / estimated, low), high))
        before = math.log(self.value)
        self.miss = (1 - RATIO_WEIGHT) * self.miss + RATIO_WEIGHT * abs(sample - before)
        self.value = math.exp((1 - RATIO_WEIGHT) * before + RATIO_WEIGHT * sample)
        self.samples += 1


class Anchoring:
    """The anchors of one conversation, in the order its replies came, and the correction
    they give a request: `offset(end, prefix)` for the request holding the history's first
    `end` messages, where `prefix[i]` is the estimate of the first i messages.

    Only anchors of requests no longer than `end` are used (the newest of them; shorter only,
    with `earlier_only`); each new one teaches the growth ratio what the growth since the one
    before really cost.
    """

    def __init__(
        self, anchors: Iterable[Anchor] = (), *, turn_starts: Sequence[int] = (), earlier_only: bool = False
    ) -> None:
        #: Use only anchors of shorter requests: a log's replay predicts each call from the
        #: calls before it, not from its own recorded size.
        self.earlier_only = earlier_only
        self.pending = list(anchors)
        self.pending.sort(key=lambda a: a.messages)
        self.latest: Anchor | None = None
        self.ratio = GrowthRatio()
        #: Indices of messages that open a user turn (where Codex drops a turn's reasoning).
        self.turn_starts = turn_starts

    def add(self, anchor: Anchor) -> None:
        """A new reply's report (after every anchor given so far)."""
        self.pending.append(anchor)

    def restarted(self, holds: Callable[[Anchor], bool]) -> Anchoring:
        """The anchoring for a new walk of the same conversation (its history was edited, or
        read again): the learned ratio carries over, and the newest anchor if `holds` finds the
        prefix it counted still the prefix sent; and the anchor before it if that one's prefix
        holds too, so that the growth between the two is learned as it is without a new walk
        (Claude Code's moving cache marker makes a new walk of every request of it)."""
        fresh = Anchoring(turn_starts=self.turn_starts, earlier_only=self.earlier_only)
        fresh.ratio = self.ratio
        newest = self.pending[-1] if self.pending else self.latest
        if newest is not None and holds(newest):
            before = self.pending[-2] if len(self.pending) > 1 else self.latest
            if before is not None and before.messages < newest.messages and holds(before):
                fresh.add(before)
            fresh.add(newest)
        return fresh

    def drop(self) -> None:
        """Forget the anchor: the prefix it counted is no longer what is sent."""
        self.latest = None
        self.pending.clear()

    def anchor_for(self, end: int) -> Anchor | None:
        """The newest anchor of a request of at most `end` messages (learning from each passed)."""
        while self.pending and self.pending[0].messages < end + (not self.earlier_only):
            anchor = self.pending.pop(0)
            if self.latest is not None and anchor.messages > self.latest.messages:
                grew = anchor.reported - self.latest.reported - self._reasoning(self.latest, anchor.messages)
                self.ratio.learn(reported=grew, estimated=anchor.estimated - self.latest.estimated)
            self.latest = anchor
        return self.latest

    def offset(self, end: int, prefix: Sequence[int]) -> int:
        """What to add to ctxfit's estimate of the request before message `end` (0 without
        an anchor)."""
        anchor = self.anchor_for(end)
        if anchor is None:
            return 0
        added = prefix[end] - prefix[anchor.messages]
        return anchor.reported - anchor.estimated + round((self.ratio.high - 1) * added) + self._reasoning(anchor, end)

    def removal_ratio(self, end: int) -> float:
        """What one estimated token that ctxfit removes (a cleared result, a dropped turn) is
        worth in the provider's count, for the request before message `end` (1 without an
        anchor).

        The correction of `offset` is one constant per request, so without this a removal is
        credited at its raw estimate. Where the estimate runs high that over-credits what
        clearing frees, and the anchored size comes out lower than the request really is: the
        one error of this count that sends a request over the budget. So a removal is scaled
        like an addition, by the learned growth ratio, but never by more than the counted
        request's own ratio (reported ÷ estimated): that is what its removed parts were
        confirmed at, and before the ratio has learned anything (it starts at 1) it is the only
        evidence. Of the two the smaller, and the ratio at the low end of what the replies
        showed (`GrowthRatio.low`): crediting too little only clears a little more than needed
        until the next reply counts the request exactly."""
        anchor = self.anchor_for(end)
        if anchor is None or anchor.estimated <= 0:
            return 1.0
        counted = anchor.reported - anchor.turn_reasoning  # (reasoning is not in the estimate)
        return max(min(self.ratio.low, counted / anchor.estimated), 0.0)

    def ceiling(self, end: int) -> tuple[float, int] | None:
        """A bound on the request before message `end` apart from its anchor: (the most one
        estimated token is worth, the reasoning it carries that no estimate sees). The most is
        the high end of the learned ratio, or the counted request's own ratio if that is more,
        never under 1: so the bound is never below the anchored size of a request that removed
        nothing, and it takes over only where removals credited at the low end add up."""
        anchor = self.anchor_for(end)
        if anchor is None or anchor.estimated <= 0:
            return None
        counted = anchor.reported - anchor.turn_reasoning
        new_turn = turn_between(self.turn_starts, anchor.messages, end)
        reasoning = 0 if new_turn else anchor.turn_reasoning + anchor.reasoning
        return max(1.0, self.ratio.high, counted / anchor.estimated), reasoning

    def confirmed(self, end: int) -> int:
        """The reported size the request before message `end` is anchored on (0: none)."""
        anchor = self.anchor_for(end)
        return anchor.reported if anchor is not None else 0

    def _reasoning(self, anchor: Anchor, end: int) -> int:
        """The reasoning a request at `end` carries beyond what `anchor` counted: the reply's
        own within its turn, minus the turn's earlier reasoning once a new turn began."""
        if not anchor.reasoning and not anchor.turn_reasoning:
            return 0
        if turn_between(self.turn_starts, anchor.messages, end):
            return -anchor.turn_reasoning
        return anchor.reasoning


def turn_between(turn_starts: Sequence[int], after: int, before: int) -> bool:
    """Whether a human turn starts strictly between two message indices (`turn_starts` ascending,
    as `core.usage.turn_starts` makes them): by bisection, since this is asked once per call and
    per request, and a long log has thousands of turns (a scan made estimate quadratic).

    >>> turn_between([3, 8], 3, 8), turn_between([3, 8], 2, 8)
    (False, True)
    """
    return bisect.bisect_right(turn_starts, after) < bisect.bisect_left(turn_starts, before)


#: A recorded prompt under this share of ctxfit's estimate of the log's history before it is
#: no count of that history: the agent sent less than its log holds (Cline drops old turns
#: itself), and anchoring on it would count the whole history at the agent's trimmed size. (The
#: estimate of a whole request errs by 20% at the 95th percentile, docs/accuracy.md.)
PLAUSIBLE_SHARE = 0.5


#: A reported count over this many times ctxfit's estimate of the request, plus `EXCESS_ROOM`
#: tokens, is no count of it either. Generous: a provider adds what no estimate sees (its own
#: tool-use prompt, a few hundred tokens; the reasoning Codex re-sends within a turn, thousands),
#: and an estimate errs low on a dense text by a fifth at worst; a gateway that reports a
#: session's running total, or another request's, goes past it.
EXCESS_RATIO, EXCESS_ROOM = 8, 32_768


def implausible(reported: int, estimated: int) -> str | None:
    """Why a provider's count of a request is no count of it, or None when it may be: far
    under what the request can cost (under `PLAUSIBLE_SHARE` of ctxfit's `estimated`: a server
    that truncated the prompt to its own context, a gateway that misreports) or far over it
    (`EXCESS_RATIO`). Such a count anchors nothing: the estimate is the count (DESIGN §15).

    >>> implausible(10, 50_000)
    'the provider reports 10 tokens for a request of ≥ 25,000: its count is not used'
    >>> implausible(48_000, 50_000) is None, implausible(432_769, 50_000) is not None
    (True, True)
    """
    if estimated <= 0:
        return None
    floor = math.ceil(PLAUSIBLE_SHARE * estimated)
    ceiling = EXCESS_RATIO * estimated + EXCESS_ROOM
    if reported < floor:
        return f"the provider reports {reported:,} tokens for a request of ≥ {floor:,}: its count is not used"
    if reported > ceiling:
        return f"the provider reports {reported:,} tokens for a request of ≤ {ceiling:,}: its count is not used"
    return None


def log_anchors(
    calls: Sequence[RecordedCall], prefix: Sequence[int], fixed: int, turn_starts: Sequence[int] = ()
) -> list[Anchor]:
    """The anchors a log's recorded calls give: each call's reported prompt, as a request of
    the log's own history before the call's message (estimated as `fixed + prefix[i]`), unless
    it is far smaller than that history (`PLAUSIBLE_SHARE`): the agent sent less than its log
    holds, and from then on no call counts the log's history, so the anchors end there. (An
    agent that drops less than half of its history is not told apart from an estimate that
    errs high.)

    >>> log_anchors([RecordedCall(2, prompt_tokens=900)], [0, 100, 250], 500)
    [Anchor(reported=900, messages=2, estimated=750, digest=b'', reasoning=0, turn_reasoning=0)]
    >>> log_anchors([RecordedCall(1, prompt_tokens=600), RecordedCall(2, prompt_tokens=300),
    ...              RecordedCall(2, prompt_tokens=800)], [0, 100, 250], 500)  # (then the agent sent less)
    [Anchor(reported=600, messages=1, estimated=600, digest=b'', reasoning=0, turn_reasoning=0)]
    """
    anchors: list[Anchor] = []
    turn_reasoning = 0
    for call in calls:
        if not call.prompt_tokens or call.model == "<synthetic>" or not 0 <= call.message < len(prefix):
            continue
        if call.prompt_tokens < PLAUSIBLE_SHARE * (fixed + prefix[call.message]):
            break  # (a prompt that shrinks, in itself, is no sign: Codex's do within a turn)
        if anchors and turn_between(turn_starts, anchors[-1].messages, call.message):
            turn_reasoning = 0  # a new user turn: the previous turn's reasoning is not re-sent
        reasoning = call.reasoning_tokens or 0
        anchors.append(
            Anchor(
                call.prompt_tokens,
                call.message,
                fixed + prefix[call.message],
                reasoning=reasoning,
                turn_reasoning=turn_reasoning,
            )
        )
        turn_reasoning += reasoning
    return anchors
