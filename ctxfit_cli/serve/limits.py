"""Each request's budget and window, from the model it names (issue #22: the model decides).

The window is the model's (the CLI's table, `counters/models.py`) unless `--window` says
otherwise. What the request may take of it is the window less the room it asks for its reply
(`max_tokens`, `max_completion_tokens`, `max_output_tokens`), as the provider counts (prompt +
`max_tokens` <= window) — but never more than `REPLY_SHARE` of the window: an agent asking a
64,000-token reply of a 70,000-token window would otherwise have its prompt cut to 6,000 tokens,
where the provider answers a prompt that fits but leaves too little room with an error the agent
recovers from itself (Anthropic's "input length and `max_tokens` exceed context limit: X + Y >
N": Claude Code lowers `max_tokens` to what is left and sends again). A request asking more than
three quarters of that share is given all of it, so that such a retry, its `max_tokens` lowered
to a little less, is fitted to the same budget -- the same request, which the lowered room fits.
(GPT-5's prompt limit, 272,000, is already less than its whole context less any reply room it
allows: its requests get 272,000 whatever room they ask.) The budget is that by default, or what
`--budget` asks -- tokens (`150000`) or a share of the window (`80%`) -- never more. A model the
table does not know keeps the old defaults: a 400,000-token budget in a 1,000,000-token window.

>>> limits = LimitRule().for_request({"model": "claude-sonnet-4-5", "max_tokens": 32000})
>>> limits.budget, limits.window
(168000, 168000)
>>> limits.about
'claude-sonnet-4-5, window 200,000 (Claude 4.6 and older window (2026-12 table)) less 32,000 for the reply'
>>> LimitRule(window=70_000).for_request({"model": "claude-opus-4-8", "max_tokens": 64000}).budget  # a quarter at most
52500
>>> LimitRule(share=0.8).for_request({"model": "gpt-5-codex"}).budget
217600
>>> LimitRule().for_request({"model": "gpt-5-codex", "max_output_tokens": 32000}).budget  # (272,000 in, 400,000 in all)
272000
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from ..core.options import DEFAULT_WINDOW
from ..counters.models import total_context, window_for

#: The budget for a model the table does not know (the proxy's default before models decided).
UNKNOWN_MODEL_BUDGET = 400_000
#: Anthropic's 1M-token context, opted into per request (Claude Code's `sonnet[1m]` sends it):
#: the `anthropic-beta` header names it.
ONE_MILLION_BETA, ONE_MILLION = "anthropic-beta: context-1m", 1_000_000
#: Where each API asks for the room of its reply, in the order looked at.
REPLY_FIELDS = ("max_output_tokens", "max_completion_tokens", "max_tokens")
#: The most of the window kept out of the prompt for the reply: past it the agent's own
#: recovery (it lowers its `max_tokens` on the provider's error) gives the reply its room, not
#: a prompt cut to nothing.
REPLY_SHARE = 1 / 4


@dataclass(frozen=True)
class Limits:
    """One request's budget and window (kept here, not with the fitting: `ctxfit wrap` checks
    its options with `LimitRule` before it starts the agent, and must not wait for the fitting
    side's imports)."""

    budget: int
    window: int | None = None
    #: The model the request named, and its window as the log line tells it.
    model: str = ""
    about: str = ""


def parse_budget(text: str) -> tuple[int | None, float | None]:
    """`--budget` as (tokens, None) or (None, share of the window).

    >>> parse_budget("150000"), parse_budget("80%"), parse_budget("150_000")
    ((150000, None), (None, 0.8), (150000, None))
    """
    text = text.strip()
    try:
        if text.endswith("%"):
            share = float(text[:-1]) / 100
            if 0 < share <= 1:
                return None, share
        else:
            tokens = int(text)
            if tokens > 0:
                return tokens, None
    except ValueError:
        pass
    raise ValueError(f"--budget takes tokens (150000) or a share of the model's window (80%), not {text!r}")


@dataclass(frozen=True)
class LimitRule:
    """What the user asked for (`--budget`, `--window`), applied to each request's model."""

    budget: int | None = None
    share: float | None = None
    window: int | None = None
    #: What set `window`: the user (`--window`), or the request itself (`asked_window`).
    window_source: str = "--window"

    def asking(self, window: int | None) -> LimitRule:
        """This rule for a request that asks for a larger window of its own (None: none), unless
        the user set the window."""
        if window is None or self.window:
            return self
        return replace(self, window=window, window_source=ONE_MILLION_BETA)

    def for_request(self, request: dict, _dialect: str = "") -> Limits:
        model = request.get("model")
        model = model if isinstance(model, str) else ""
        listed, source, whole = _model_window(model)
        window, source = (self.window, self.window_source) if self.window else (listed, source)
        known = window is not None
        window = window or DEFAULT_WINDOW
        # The prompt and the reply's room share the whole context: for most models that is
        # the window, for some (GPT-5) more, while the prompt alone is held to the window.
        total = (None if self.window else whole) or window
        room = reply_room_kept(_reply_room(request), round(total * REPLY_SHARE))
        hard = min(window, total - room) if 0 < room < total else window
        if self.budget is not None:
            budget = self.budget
        elif self.share is not None:
            budget = int(window * self.share)
        else:
            budget = hard if known else UNKNOWN_MODEL_BUDGET
        about = f"{model or 'no model named'}, window {window:,} ({source if known else 'default'})"
        if hard < window:
            about += f" less {room:,} for the reply"
        return Limits(min(budget, hard), hard, model, about)

    def describe(self) -> str:
        """The rule, for the proxy's start line."""
        window = f"window {self.window:,} (--window)" if self.window else "each request's window from its model"
        if self.budget is not None:
            budget = f"budget {self.budget:,} tokens"
        elif self.share is not None:
            budget = f"budget {self.share:.0%} of the window"
        else:
            budget = (
                f"budget the window less the reply's max tokens, at most {REPLY_SHARE:.0%} of it "
                f"({UNKNOWN_MODEL_BUDGET:,} for a model not in ctxfit's table)"
            )
        return f"{window}, {budget}"


@lru_cache(maxsize=256)
def _model_window(model: str) -> tuple[int | None, str, int | None]:
    """(window, its source, whole context) of `model` from the tables: the same for every request
    naming it, and a model the tables do not name is searched for in the whole catalog (358
    names: 0.2 ms, a quarter of a worker's step of an ongoing conversation), so once per model."""
    window, source = window_for([model])
    return window, source, total_context(model)


def asked_window(anthropic_beta: str) -> int | None:
    """The window a request's `anthropic-beta` header opts into, if any.

    >>> asked_window("interleaved-thinking-2025-05-14,context-1m-2025-08-07"), asked_window("")
    (1000000, None)
    """
    betas = (beta.strip() for beta in anthropic_beta.split(","))
    return ONE_MILLION if any(beta.startswith("context-1m") for beta in betas) else None


def reply_room_kept(asked: int, most: int) -> int:
    """The reply's room out of the window: what the request asks, at most `most`; all of `most`
    past three quarters of it (an agent's retry with `max_tokens` lowered to what was left is
    fitted alike).

    >>> kept = reply_room_kept
    >>> kept(32_000, 50_000), kept(64_000, 50_000), kept(16_500, 17_500), kept(64_000, 17_500)
    (32000, 50000, 17500, 17500)
    """
    return most if asked > most * 3 // 4 else asked


def _reply_room(request: dict) -> int:
    for name in REPLY_FIELDS:
        value = request.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0
