"""What the proxy did for each conversation (`Stats`), kept in the proxy's own process
(`Ledger`), whichever worker fitted its requests (GET /ctxfit/stats)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from .channel import PlanSummary


@dataclass
class Stats:
    """What the proxy did for one conversation (GET /ctxfit/stats)."""

    dialect: str
    requests: int = 0
    fitted: int = 0  # requests whose body ctxfit changed
    failed_open: int = 0
    rejected: int = 0  # past the window: answered 400 without calling the provider
    fast_path: int = 0  # went on without a worker: provably within the budget (`bypass.py`)
    tokens_before: int = 0  # of the last request
    tokens_after: int = 0
    results_cleared: int = 0
    #: Tokens left out of the requests sent, over all of them (cleared and trimmed).
    tokens_kept_out: int = 0
    stage: str = ""
    #: Prompt tokens the provider reported, and how many of them it read from its cache.
    prompt_tokens: int = 0
    cache_read_tokens: int = 0
    #: Of the last request's `tokens_after`, what the provider confirmed (the reported size of
    #: an earlier request it is anchored on, DESIGN §11) and what is estimated; and how many
    #: requests were sized from a reported count.
    confirmed: int = 0
    estimated: int = 0
    anchored: int = 0
    #: Replies whose reported count was not used (far outside what the request can cost), and
    #: why, as the log said it the first time.
    usage_refused: int = 0
    usage_refused_why: str = ""

    def record_plan(self, plan: PlanSummary) -> None:
        self.tokens_before, self.tokens_after, self.stage = plan.tokens_before, plan.tokens_after, plan.stage
        self.confirmed, self.estimated = plan.confirmed, plan.estimated
        self.anchored += plan.confirmed > 0
        self.results_cleared = plan.results_cleared
        if plan.changed:
            self.fitted += 1
            self.tokens_kept_out += max(plan.tokens_before - plan.tokens_after, 0)

    def refused(self, why: str) -> bool:
        """A reply's count was not used, for `why`: whether this is the first time for this
        conversation (the log says so once)."""
        self.usage_refused += 1
        first = not self.usage_refused_why
        self.usage_refused_why = self.usage_refused_why or why
        return first

    def to_dict(self) -> dict:
        share = self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else None
        return {
            "dialect": self.dialect,
            "requests": self.requests,
            "fitted": self.fitted,
            "failed_open": self.failed_open,
            "rejected": self.rejected,
            "fast_path": self.fast_path,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "results_cleared": self.results_cleared,
            "tokens_kept_out": self.tokens_kept_out,
            "stage": self.stage,
            "tokens_confirmed": self.confirmed,
            "tokens_estimated": self.estimated,
            "requests_anchored": self.anchored,
            "prompt_tokens_reported": self.prompt_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_read_share": None if share is None else round(share, 4),
            "reported_usage_refused": self.usage_refused,
            "reported_usage_refused_why": self.usage_refused_why or None,
        }


class Ledger:
    """What the proxy did for the conversations seen lately (at most `remembered`, least
    recently used forgotten first), by conversation key."""

    def __init__(self, remembered: int = 1000) -> None:
        self.remembered = remembered
        self._known: OrderedDict[str, Stats] = OrderedDict()

    def get(self, key: str, dialect: str) -> Stats:
        stats = self._known.get(key)
        if stats is None:
            stats = self._known[key] = Stats(dialect)
            while len(self._known) > self.remembered:
                self._known.popitem(last=False)
        self._known.move_to_end(key)
        return stats

    def to_dict(self) -> dict[str, dict]:
        return {key: stats.to_dict() for key, stats in self._known.items()}
