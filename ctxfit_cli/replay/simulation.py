"""Replaying a recorded history under a policy: request sizes, rejections and the prompt cache.

The request before model call *k* is everything the agent had before its *k*-th assistant
message. For each request we record its size, the stage reached, whether it is **rejected**
(larger than the window: not processed, so not billed and not cached — `total_input` and the
cache figures count accepted requests only), and its **cache reuse**: the tokens of the longest
prefix it shares with the previous accepted request of the same policy, compared message by
message from the start (the system prompt and tools first), as providers compare cached blocks.
Two requests share a message when it is the same message of the history, sent the same way
(whole, or with the same results cleared); two different messages that happen to have the same
text are not counted as shared, which can only under-count reuse. Shares are counted as the
previous request's size is: where sizes are anchored on the usage a log records (DESIGN §11),
the anchoring's correction is part of the fixed prefix, which every request sends the same way.
A request **breaks** the cache when it does not start with all of the previous accepted request
(a request that only appends is no break, even when the size predicted for it, anchored on a
newer recorded size, comes out below the previous one's). The shared prefix is computed
from prefix sums (`Fitter.shared_tokens`), so a replay costs about the same per call however
long the history is. A shared prefix shorter than
`min_cacheable` is not cached at all. The rest of the request is written to the cache.

**The cache bound.** For each accepted request, the tokens of the previous accepted request
that it still sends, wherever they are in it (the same messages sent the same way; the fixed
part counts; again nothing below `min_cacheable`). No policy that sends the same kept content —
the same requests, message for message — can read more from a prefix cache that holds the
previous request, because a token read from that cache must be in both requests; it is reached
exactly when every change a request makes (a cleared result, a dropped turn, the note) comes
after everything it keeps. `cache_bound_share` is the bound over the total input;
`share_of_bound` is the cache read over the bound (1.0 when the bound is 0): how much of the
reuse that its own content allows a policy actually gets. Totals over several files add the
reads and the bounds before dividing.

Prices are relative to one uncached input token (defaults: cache write 1.25, cache read 0.1).

>>> Prices().cost(read=1000, write=100, uncached=0)
225.0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..core.model import Transcript
from ..core.options import FitOptions
from .policies import Policy, Request
from .prices import Prices


class Step(NamedTuple):
    """One model call of a replay. (A NamedTuple: a replay makes one per model call.)"""

    call: int
    tokens: int
    stage: str
    rejected: bool
    cache_read: int
    cache_write: int
    uncached: int
    cache_break: bool
    #: The most any policy sending this request's content could read from the cache.
    cache_bound: int = 0
    #: The recorded size of an earlier call that `tokens` is anchored on (0: all estimated).
    confirmed: int = 0


@dataclass
class PolicyReplay:
    """Totals of one policy over one history."""

    policy: str
    calls: int = 0
    rejected: int = 0
    first_rejected: int | None = None
    max_request: int = 0
    total_input: int = 0
    cache_read: int = 0
    cache_bound: int = 0
    cache_write: int = 0
    uncached: int = 0
    cache_breaks: int = 0
    over_budget: int = 0
    cost: float = 0.0
    steps: list[Step] = field(default_factory=list)

    def add(self, step: Step, budget: int, prices: Prices) -> None:
        self.calls += 1
        self.rejected += step.rejected
        if step.rejected and self.first_rejected is None:
            self.first_rejected = step.call
        self.max_request = max(self.max_request, step.tokens)
        self.total_input += step.cache_read + step.cache_write + step.uncached
        self.cache_read += step.cache_read
        self.cache_bound += step.cache_bound
        self.cache_write += step.cache_write
        self.uncached += step.uncached
        self.cache_breaks += step.cache_break
        self.over_budget += step.tokens > budget
        self.cost += prices.cost(read=step.cache_read, write=step.cache_write, uncached=step.uncached)
        self.steps.append(step)

    def merge(self, other: PolicyReplay) -> None:
        """Add another history's totals (for the total over several files)."""
        for name in (
            "calls",
            "rejected",
            "total_input",
            "cache_read",
            "cache_bound",
            "cache_write",
            "uncached",
            "cache_breaks",
            "over_budget",
            "cost",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.max_request = max(self.max_request, other.max_request)

    def to_dict(self, prices: Prices, *, steps: bool = False) -> dict[str, Any]:
        document: dict[str, Any] = {
            "calls": self.calls,
            "rejected": self.rejected,
            "first_rejected": self.first_rejected,
            "over_budget": self.over_budget,
            "max_request": self.max_request,
            "total_input": self.total_input,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "uncached": self.uncached,
            "cache_read_share": round(self.cache_read / self.total_input, 4) if self.total_input else 0.0,
            "cache_bound": self.cache_bound,
            "cache_bound_share": round(self.cache_bound / self.total_input, 4) if self.total_input else 0.0,
            "share_of_bound": round(self.cache_read / self.cache_bound, 4) if self.cache_bound else 1.0,
            "cache_breaks": self.cache_breaks,
            "cost": round(self.cost, 1),
            "relative_cost": round(self.cost / (self.total_input * prices.input), 4) if self.total_input else 0.0,
        }
        if steps:
            # `predicted`: the size ctxfit counts before sending (anchored on earlier calls'
            # recorded sizes where the log has them), split into its confirmed and estimated parts.
            document["steps"] = [
                {**step._asdict(), "predicted": step.tokens, "estimated": step.tokens - step.confirmed}
                for step in self.steps
            ]
        return document


def replay(
    transcript: Transcript, policy: Policy, options: FitOptions, *, prices: Prices = Prices(), min_cacheable: int = 1024
) -> PolicyReplay:
    """Simulate every request of a (materialized) transcript under one policy.

    >>> import io
    >>> from ctxfit_cli.formats import read_transcripts
    >>> from ctxfit_cli.replay.policies import POLICIES
    >>> log = b"".join(line + b"\\n" for line in (
    ...     b'{"role":"user","content":"Count to three."}',
    ...     b'{"role":"assistant","content":"One."}', b'{"role":"user","content":"Go on."}',
    ...     b'{"role":"assistant","content":"Two, three."}'))
    >>> [t] = read_transcripts("log.jsonl", io.BytesIO(log))
    >>> run = replay(t.materialize(), POLICIES["ctxfit"], FitOptions(budget=1000), min_cacheable=0)
    >>> run.calls, run.rejected, [s.cache_read for s in run.steps]
    (2, 0, [0, 8])
    """
    result = PolicyReplay(policy.name)
    add, budget, window = result.add, options.budget, options.window
    previous: Request | None = None
    for request in policy.requests(transcript, options):
        if request.tokens > window:
            # Rejected: not processed, not billed, nothing cached. The next request is compared
            # with the last request that was accepted.
            add(
                Step(request.call, request.tokens, request.stage, True, 0, 0, 0, False, 0, request.confirmed),
                budget,
                prices,
            )
            continue
        # Shares are counted as the previous request's size is (`Request.shared_with`), so a break
        # compares like with like: all of the previous request resent is no break, even when the
        # size predicted for this one (anchored on a newer recorded size) came out smaller. What
        # is read is never more than this request.
        shares = request.shared_with(previous) if previous is not None else 0
        shared = min(shares, request.tokens)
        bound = min(request.still_sent(previous), request.tokens) if previous is not None else 0
        read = shared if shared >= min_cacheable else 0
        write = request.tokens - read if request.tokens >= min_cacheable else 0
        # Positional: one step per model call, and keywords cost more here.
        step = Step(
            request.call,
            request.tokens,
            request.stage,
            False,
            read,
            write,  # not rejected
            request.tokens - read - write,
            previous is not None and shares < previous.tokens,
            bound if bound >= min_cacheable else 0,
            request.confirmed,
        )
        add(step, budget, prices)
        previous = request
    return result
