"""A new conversation's first request goes on at once, when its whole body provably fits.

A conversation's first request was the slowest the proxy sent: its worker reads and counts the
whole body before anything goes upstream (7-13 ms for a short one, queued behind the others when
many agents start together), where every later step takes the fast path (`bypass.py`). Yet a
request its worker holds no state of is counted by the counter `fit` picks for its model and
nothing else (no anchor, no lesson of a refusal: DESIGN §15), and a worker changes a body only
when that count passes the budget. So when the whole body's bound is within the budget, the
worker would send the agent's bytes on unchanged: they go on now, and the worker reads the body
meanwhile (`Proxy._at_once`), while the provider answers, for what a reply anchors and for the
passage the next request takes. The reply's first byte waits for that read (a provider answers
in seconds, the read takes milliseconds): the agent's next request finds it done. The worst case
is the old one: a reply quicker than the worker waits for it, as every first request did.

The bound is the fast path's, over the whole body: `bypass.per_byte` of the model's counter
times the body's bytes (each float allowed its longest repr, `bypass.float_bytes`), the system
prompt and tools included (their JSON is counted compact, never longer than it came). A body
with an image, a document, a file, audio or an empty text is not bounded so and goes to its
worker first, as does any body whose bound passes the budget (tests/test_proxy_opening.py checks
the bound through the worker itself, for every counter the proxy picks).

"No state" is known here: a worker holds state only for conversations of owners (`owner.py`'s
digest, the path, the window asked, the dialect) whose requests it was sent, and every request
is seen here first (`Owners`). An owner is new when no request of it was seen since the proxy
started, within the last `SEEN` owners (far more than the workers keep conversations of: a
worker forgets its least recently used first, and each request here makes its owner the most
recent). Only dialects whose body names its model are taken (Gemini's path names it: its first
request goes to its worker).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import NamedTuple

import orjson

from .bypass import float_bytes, per_byte
from .limits import LimitRule, Limits

#: Owners remembered (hashes, about 100 bytes each): a worker keeps at most a few hundred
#: conversations (`--conversations`), each of one owner.
SEEN = 1 << 16
#: The dialects whose body names its model, as `LimitRule.for_request` reads it.
MODEL_IN_BODY = frozenset({"anthropic", "openai", "responses"})


class Opening(NamedTuple):
    """Why a first request went on at once: the upper bound of its count, within its limits' budget."""

    bound: int
    limits: Limits


class Owners:
    """The owners of the conversations the proxy has seen (least recently seen forgotten first)."""

    def __init__(self, rule: LimitRule) -> None:
        self.rule = rule
        self._seen: OrderedDict[int, None] = OrderedDict()
        #: Tokens per byte of each model's counter (`bypass.per_byte`), once per model.
        self._rates: dict[str, float | None] = {}

    def saw(self, who: tuple) -> bool:
        """Remember a request of `who`: whether it is the first seen (no worker holds any of its state)."""
        key = hash(who)  # (two owners sharing a hash: the second is taken as seen, never the reverse)
        if key in self._seen:
            self._seen.move_to_end(key)
            return False
        self._seen[key] = None
        if len(self._seen) > SEEN:
            self._seen.popitem(last=False)
        return True

    def opening(self, dialect: str, body: bytes, window: int | None) -> Opening | None:
        """Whether a new owner's `body` provably needs no fitting: its bound within its budget."""
        if dialect not in MODEL_IN_BODY:
            return None
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None  # (its worker says why, and sends it on as it came)
        if not isinstance(request, dict):
            return None
        limits = self.rule.asking(window).for_request(request, dialect)
        rate = self.rate(limits.model)
        if rate is None or math.ceil(rate * len(body)) > limits.budget:
            return None
        floats = float_bytes(request)
        if floats is None:
            return None
        bound = math.ceil(rate * (len(body) + floats))
        return Opening(bound, limits) if bound <= limits.budget else None

    def rate(self, model: str) -> float | None:
        """The most tokens a byte of a request to `model` can cost by its counter's estimate."""
        if model not in self._rates:
            from ..core.choice import counter_for_model  # (the counter `fit` picks for the model)

            if len(self._rates) >= 1024:
                self._rates.clear()
            self._rates[model] = per_byte(counter_for_model(model)[0])
        return self._rates[model]
