"""Fitting one request body on its way to the provider (no HTTP here: bytes in, bytes out).

The body is read incrementally (`body.py`: only the bytes that changed since the conversation's
last request are parsed) and fitted with the library's own `Session` (the same core and
defaults as `fit`). When nothing had to change, the body goes on as the very bytes the agent
sent; when something did, it is the agent's bytes with the messages the fitting left alone
spliced in unchanged and only the changed ones serialized. Anything ctxfit cannot read or fit is
forwarded unchanged (fail open) with the reason for the log; only a conversation past the
model's window is answered here, as the provider would answer it, without calling the provider.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from ..api import SentRequest, Session
from ..core.plan import Plan
from ..errors import CannotFit
from .body import BodyError, Layout, Readers
from .conversations import Conversation

#: Which API each fitted path speaks.
DIALECTS = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai"}


@dataclass
class Outcome:
    """What to do with one request: forward `body` (maybe changed), or answer `error` (400)."""

    body: bytes
    conversation: Conversation | None = None
    plan: Plan | None = None
    #: Why the request was forwarded unchanged although it was not fitted (fail open), or "".
    skipped: str = ""
    #: The provider-shaped error body, when the conversation cannot be sent at all.
    error: bytes | None = None
    #: The session that fitted the request and what it sent: the reply's usage anchors the
    #: conversation's next request on it (DESIGN §11).
    session: Session | None = None
    sent: SentRequest | None = None


@dataclass(frozen=True)
class Limits:
    budget: int
    window: int | None = None


def parse(readers: Readers, body: bytes) -> tuple[dict, Layout] | str:
    """The request as JSON and where its messages are in `body`, or why it cannot be fitted."""
    try:
        request, layout = readers.read(body)
    except BodyError as error:
        return str(error)
    if not request["messages"]:
        return '"messages" is empty'
    return request, layout


def fit_body(body: bytes, request: dict, layout: Layout, dialect: str, conversation: Conversation,
             limits: Limits) -> Outcome:
    """Fit a parsed request of `conversation` (the caller holds its lock)."""
    system = request.get("system") if dialect == "anthropic" else None
    try:
        session = conversation.session_for(limits.budget, limits.window, dialect, system, request.get("tools"))
        messages = session.fit(request["messages"])
    except CannotFit as error:
        return Outcome(body, conversation, session.plan, error=provider_error(dialect, str(error)))
    except Exception as error:  # fail open: a request ctxfit cannot fit still reaches the provider
        conversation.session = None
        return Outcome(body, conversation, skipped=f"{type(error).__name__}: {error}")
    plan = session.plan
    forwarded = body if not plan.dropped and not plan.cleared else layout.write(messages)
    return Outcome(forwarded, conversation, plan, session=session, sent=session.sent)


def provider_error(dialect: str, message: str) -> bytes:
    """A 400 body as the provider sends it for a request over the context window."""
    if dialect == "anthropic":
        return orjson.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
    return orjson.dumps({"error": {"message": message, "type": "invalid_request_error", "param": "messages",
                                   "code": "context_length_exceeded"}})
