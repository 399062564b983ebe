"""What the proxy's log line says of a request it fitted, or forwarded as it came."""

from __future__ import annotations

import re

from .channel import Fitted

_NUMBER = re.compile(r"\d[\d,.]*")


def kind_of(reason: str, limit: int = 120) -> str:
    """A reason with its numbers and parenthesised detail left out, so that requests left
    unfitted (or refused) for the same reason are counted together.

    >>> kind_of("BadInput: messages[1]: role must be user or assistant, not 'system' (answer every tool call)")
    "BadInput: messages[N]: role must be user or assistant, not 'system'"
    >>> kind_of("prompt is too long: 212,345 tokens > 200000 maximum")
    'prompt is too long: N tokens > N maximum'
    """
    text = _NUMBER.sub("N", reason.split(" (", 1)[0].strip())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def conversation(outcome: Fitted) -> str:
    return f"conversation {outcome.key}" if outcome.key else "request"


def describe(outcome: Fitted) -> str:
    """'conversation 3f2a… 120,400 -> 98,200 tokens (clear, 14 results cleared; …); model …'."""
    if outcome.skipped:
        return f"{conversation(outcome)} forwarded unchanged, not fitted: {outcome.skipped}"
    if outcome.bound:
        budget = f", budget {outcome.limits.budget:,}" if outcome.limits else ""
        return f"{conversation(outcome)} ≤ {outcome.bound:,} tokens{budget}: fast path, unchanged without a worker"
    plan = outcome.plan
    assert plan is not None  # (not skipped: fitted)
    stage = plan.stage if plan.stage == "none" else f"{plan.stage}, {plan.results_cleared} results cleared"
    over = ", over the budget: the smallest request" if plan.overrun else ""
    limits = f"; {outcome.limits.about}, budget {outcome.limits.budget:,}" if outcome.limits else ""
    counted = (
        f"{plan.confirmed:,} confirmed {'+' if plan.estimated >= 0 else '-'} {abs(plan.estimated):,} estimated"
        if plan.confirmed
        else "estimated"
    )
    return (
        f"{conversation(outcome)} {plan.tokens_before:,} -> {plan.tokens_after:,} tokens "
        f"({stage}{over}; {counted}){limits}"
    )
