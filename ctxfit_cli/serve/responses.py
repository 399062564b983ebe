"""The proxy's side of the OpenAI Responses API (`POST /v1/responses`, what Codex CLI sends).

Fitted like Chat Completions (`fitting.py`): the body is read incrementally, its `input` items
fitted with the library's `Session` (`instructions` and `tools` as the fixed part), and written
back as the agent's own bytes with only the changed items serialized. A request that holds its
history on the provider's side (`previous_response_id`, `conversation`) sends only the newest
items: there is nothing here to fit, so it is forwarded as it came and its log line says why.
"""

from __future__ import annotations

import hashlib

import orjson

from ..errors import CannotFit
from .body import BodyError, Layout, Readers
from .conversations import Conversation
from .fitting import Limits, Outcome, provider_error

DIALECT = "responses"
KEY = "input"  # the array of the conversation in the body
#: Fields that make the provider prepend a history it stores: what is sent is not all there is.
SERVER_HISTORY = ("previous_response_id", "conversation")


def readers(capacity: int) -> Readers:
    return Readers(capacity, key=KEY)


def parse(readers: Readers, body: bytes) -> tuple[dict, Layout] | str:
    """The request as JSON and where its items are in `body`, or why it cannot be fitted."""
    try:
        request, layout = readers.read(body)
    except BodyError as error:
        if b'"input"' not in body:
            return "no input items to fit"
        return str(error)
    held = next((field for field in SERVER_HISTORY if request.get(field)), None)
    if held is not None:
        return f'"{held}" given: the provider holds the history, so only the newest items are sent and none can be fitted'
    if not request[KEY]:
        return '"input" is empty'
    return request, layout


def conversation_key(_dialect: str, request: dict) -> str:
    """The conversation a request belongs to: its instructions and first item."""
    items = request.get(KEY) or []
    first = next((i for i in items if not (isinstance(i, dict) and i.get("role") in ("system", "developer"))), None)
    digest = hashlib.blake2b(orjson.dumps([DIALECT, request.get("instructions"), first]), digest_size=6)
    return digest.hexdigest()


def fit_body(body: bytes, request: dict, layout: Layout, _dialect: str, conversation: Conversation,
             limits: Limits) -> Outcome:
    """Fit a parsed Responses request of `conversation` (the caller holds its lock)."""
    session = None
    try:
        session = conversation.session_for(limits.budget, limits.window, DIALECT, request.get("instructions"),
                                           request.get("tools"))
        items = session.fit(request[KEY])
    except CannotFit as error:
        return Outcome(body, conversation, session.plan, error=provider_error(DIALECT, str(error)))
    except Exception as error:  # fail open: a request ctxfit cannot fit still reaches the provider
        conversation.session = None
        return Outcome(body, conversation, skipped=f"{type(error).__name__}: {error}")
    plan = session.plan
    if not plan.dropped and not plan.cleared:
        return Outcome(body, conversation, plan)
    return Outcome(layout.write(items), conversation, plan)
