"""What a fit is asked to do: the budget, the window and the knobs of DESIGN §4's three stages.

Apart from the fitter so that what only needs the options (the CLI's defaults, choosing a
counter and window per log, many-log jobs) does not load the fitter (issue #10: start-up).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any, SupportsIndex, TypeGuard

from ..counters.seed import SEED, Counter

DEFAULT_WINDOW = 1_000_000
#: Stage 1 clears down to this share of the budget by default: the lowest relative cost of every
#: candidate replayed on samples, real logs and generated logs (docs/replay.md, issue #14).
DEFAULT_LOWWATER = 0.55


@dataclass(frozen=True, slots=True)
class FitOptions:
    """How to fit. Defaults are DESIGN §4's, except that stage 1 clears down to a low-water mark
    (`lowwater=None` gives DESIGN §4's strict seed rule)."""

    budget: int
    window: int = DEFAULT_WINDOW
    batch_size: int = 4
    protect_share: float = 0.25
    #: Results this small are left alone: clearing one would save next to nothing (the note
    #: itself costs ~30 tokens) and would still change the prefix and break the cache.
    min_clear_tokens: int = 100
    #: Once stage 1 has to clear, it clears whole batches until the request is at most this share
    #: of the budget, so the next several requests need no clearing and the prompt cache holds.
    #: None: the strict seed rule, clearing only until the request is under the budget.
    lowwater: float | None = DEFAULT_LOWWATER
    #: If set (e.g. 16), stage 1 clears whole batches until the request leaves room for this
    #: many more requests at the conversation's recent growth (`fitting.GROWTH_WINDOW` requests), so
    #: the clearing adapts to how fast the conversation grows. With `lowwater`, the lower mark wins.
    headroom: float | None = None
    drop_step: float = 0.25
    #: Protect the newest N results whatever their size, instead of a share of the budget.
    protect_count: int | None = None
    #: Close a batch once it frees this many tokens, instead of after `batch_size` results
    #: (Anthropic's `clear_at_least`).
    batch_tokens: int | None = None
    #: Stages 2 and 3 (leave out old turns and rounds). Off: clearing is all there is.
    trim: bool = True
    counter: Counter = SEED

    def __post_init__(self) -> None:
        _check_tokens("budget", self.budget)
        _check_tokens("window", self.window)
        if self.batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if not 0 <= self.protect_share <= 1 or not 0 < self.drop_step <= 1:
            raise ValueError("protect_share must be in [0, 1] and drop_step in (0, 1]")
        if self.lowwater is not None and not 0 < self.lowwater <= 1:
            raise ValueError("lowwater must be in (0, 1]")
        if self.headroom is not None and not self.headroom >= 0:  # (nan too)
            raise ValueError("headroom must be at least 0 requests")
        if self.protect_count is not None and self.protect_count < 1:
            raise ValueError("protect_count must be at least 1")


def _check_tokens(name: str, value: object) -> None:
    """A budget or window is a positive whole number of tokens. `True` (an int to Python) and
    nan (which every comparison lets through) are slips, refused like any other non-integer."""
    if isinstance(value, bool) or not _is_integer(value):
        hint = f": round it, e.g. {name}=int({value!r})" if isinstance(value, float) and math.isfinite(value) else ""
        raise TypeError(f"{name} must be a whole number of tokens (an int), not {value!r}{hint}")
    if operator.index(value) <= 0:
        raise ValueError(f"{name} must be positive, not {value}")


def _is_integer(value: Any) -> TypeGuard[SupportsIndex]:
    try:
        operator.index(value)  # int, and numpy's integers
    except TypeError:
        return False
    return True
