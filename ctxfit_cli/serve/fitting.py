"""Fitting one request body on its way to the provider (no HTTP here: bytes in, bytes out).

The body is read incrementally (`body.py`: only the bytes that changed since the conversation's
last request are parsed) and fitted with the library's own `Session` (the same core and
defaults as `fit`), counting with the counter `fit` picks for the request's model (the claude
profile for a Claude model, `core.choice.counter_for_model`) until a reply anchors it: so a
fresh proxy, a restart or an eviction sends what `fit` would (DESIGN §15). When nothing had to
change, the body goes on as the very bytes the agent
sent; when something did, it is the agent's bytes with the messages the fitting left alone
spliced in unchanged and only the changed ones serialized. What ctxfit cannot read raises here
(`BodyError`, or whatever a value it cannot handle raises); the proxy forwards such a body
unchanged (fail open, in one place: `Proxy._fit`). Nothing is refused here: a conversation whose
smallest request is still past the model's window by ctxfit's count goes on as that smallest
request, and the provider judges it — its own error reaches the agent, whose own recovery (lower
`max_tokens`, compact) then runs, and a count that errs high never stops a request the provider
would take (DESIGN §14: a stuck session goes on).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..api import SentRequest, Session
from ..core.choice import counter_for_model
from ..core.model import Dialect
from ..core.plan import Plan
from .body import BodyError, Layout, Readers
from .bypass import MOVED, Mark, per_byte
from .conversations import Conversation
from .limits import Limits
from .paths import CODE_ASSIST as CODE_ASSIST  # (re-exported for `dialects.py`)

#: The window a proxy's session is given: it never refuses (the limits' window is checked here,
#: and a request past it forwarded all the same).
NEVER_REFUSED = 1 << 53


@dataclass
class Outcome:
    """What to do with one request: forward `body` (maybe changed), or answer `error` (400)."""

    body: bytes
    conversation: Conversation | None = None
    plan: Plan | None = None
    #: Why the request was forwarded unchanged although it was not fitted (fail open), or "".
    skipped: str = ""
    #: A provider-shaped error body to answer instead of forwarding (none is made here: a request
    #: past the window is forwarded, for the provider to answer).
    error: bytes | None = None
    #: The budget and window this request was fitted to (its model's).
    limits: Limits | None = None
    #: The session that fitted the request and what it sent: the reply's usage anchors the
    #: conversation's next request on it (DESIGN §11).
    session: Session | None = None
    sent: SentRequest | None = None


def parse(readers: Readers, body: bytes) -> tuple[dict, Layout]:
    """The request as JSON and where its messages are in `body` (raises `BodyError`)."""
    return read_conversation(readers, body, "messages")


def read_conversation(
    readers: Readers, body: bytes, key: str, server_history: tuple[str, ...] = (), why_held: str = ""
) -> tuple[dict, Layout]:
    """The request as JSON and where its conversation array `key` is in `body`; raises
    `BodyError` saying why it cannot be fitted (the proxy then forwards it as it came): no such
    array, an empty one, or a field of `server_history` given (`why_held` says what that means)."""
    try:
        request, layout = readers.read(body)
    except BodyError:
        if f'"{key}"'.encode() not in body:
            raise BodyError(f'no "{key}" to fit') from None
        raise
    held = next((field for field in server_history if request.get(field)), None)
    if held is not None:
        raise BodyError(f'"{held}" given: {why_held}')
    if not request[key]:
        raise BodyError(f'"{key}" is empty')
    return request, layout


def fit_body(
    body: bytes, request: dict, layout: Layout, dialect: Dialect, conversation: Conversation, limits: Limits
) -> Outcome:
    """Fit a parsed request of `conversation` (the caller holds its lock)."""
    system = request.get("system") if dialect == "anthropic" else None
    return fit_conversation(
        body, request["messages"], layout, dialect, conversation, limits, system, request.get("tools")
    )


def fit_conversation(
    body: bytes,
    conversation_array: list,
    layout: Layout,
    dialect: Dialect,
    conversation: Conversation,
    limits: Limits,
    system: object,
    tools: object,
) -> Outcome:
    """Fit a request's conversation array (messages, items, contents) with `conversation`'s
    session, `system` and `tools` its fixed part: every dialect's `fit_body` ends here. The
    smallest request past the window is forwarded, and its limits' `about` says so for the log."""
    counter, _ = counter_for_model(limits.model)  # (what `ctxfit fit` counts this model with)
    limits = tightened(limits, conversation.tighter)
    try:
        session = conversation.session_for(limits.budget, NEVER_REFUSED, dialect, system, tools, counter)
        fitted = session.fit(conversation_array)
    except Exception:
        conversation.session = None  # in an unknown state now: rebuilt from the next request
        raise  # the proxy forwards the body unchanged (fail open, in one place: `Proxy._fit`)
    plan = session.plan
    assert plan is not None  # set by the fit just made
    forwarded = body if not plan.dropped and not plan.cleared else layout.write(fitted)
    told = past_window(limits, plan.tokens_after)
    return Outcome(forwarded, conversation, plan, limits=told, session=session, sent=session.sent)


def tightened(limits: Limits, share: float) -> Limits:
    """`limits` with its budget at `share` of itself, after the provider refused a request of the
    conversation as too long (`refusals.py`); its `about` says so."""
    if share >= 1:
        return limits
    budget = max(int(limits.budget * share), 1)
    about = f"{limits.about}; fitted to {share:.0%} of the budget since the provider refused one as too long"
    return replace(limits, budget=budget, about=about)


def past_window(limits: Limits, tokens: int) -> Limits:
    """`limits`, whose `about` says so when even the smallest request (`tokens`) is past the
    window by ctxfit's count (it is forwarded all the same: the provider's count decides)."""
    if limits.window is None or tokens <= limits.window:
        return limits
    about = f"{limits.about}; past the window by ctxfit's count: forwarded, for the provider to judge (fail open)"
    return replace(limits, about=about)


def mark(outcome: Outcome, layout: Layout) -> Mark | None:
    """What the proxy needs to send the conversation's next request on without a worker
    (`bypass.py`), when this one goes on as the agent sent it, within its budget, by a counter
    whose tokens per byte are bounded; else None."""
    plan, limits = outcome.plan, outcome.limits
    if plan is None or limits is None or outcome.error is not None or outcome.body is not layout.raw:
        return None
    if plan.dropped or plan.cleared or plan.overrun or plan.tokens_after > limits.budget or not layout.spans:
        return None
    rate = per_byte(counter_for_model(limits.model)[0])
    if rate is None or outcome.session is None:
        return None
    starts = tuple(start for start, _ in layout.spans[-MOVED:])
    return Mark(layout.spans[-1][1], starts, plan.tokens_after, limits.budget, rate * outcome.session.growth_weight())
