"""The proxy's side of the OpenAI Responses API (`POST /v1/responses`, what Codex CLI sends).

Fitted like Chat Completions (`fitting.py`): the body is read incrementally, its `input` items
fitted with the library's `Session` (`instructions` and `tools` as the fixed part), and written
back as the agent's own bytes with only the changed items serialized. A request that holds its
history on the provider's side (`previous_response_id`, `conversation`) sends only the newest
items: there is nothing here to fit, so it is forwarded as it came and its log line says why.
"""

from __future__ import annotations

from ..core.model import Dialect
from .body import Layout, Readers
from .conversations import Conversation, keyed
from .fitting import Limits, Outcome, fit_conversation, read_conversation

DIALECT: Dialect = "responses"
KEY = "input"  # the array of the conversation in the body
#: Fields that make the provider prepend a history it stores: what is sent is not all there is.
SERVER_HISTORY = ("previous_response_id", "conversation")


def parse(readers: Readers, body: bytes) -> tuple[dict, Layout]:
    """The request as JSON and where its items are in `body` (raises `BodyError` saying why it
    cannot be fitted: the proxy then forwards it as it came)."""
    why = "the provider holds the history, so only the newest items are sent and none can be fitted"
    return read_conversation(readers, body, KEY, SERVER_HISTORY, why)


def conversation_key(_dialect: str, request: dict, client: str = "") -> str:
    """The conversation a request belongs to: whose it is, the conversation it names (Codex's
    `prompt_cache_key`: its first item, the repository's `AGENTS.md`, is the same in every
    conversation there), its instructions and first item."""
    items = request.get(KEY) or []
    first = next((i for i in items if not (isinstance(i, dict) and i.get("role") in ("system", "developer"))), None)
    return keyed(client, request, DIALECT, request.get("instructions"), first)


def fit_body(
    body: bytes, request: dict, layout: Layout, _dialect: str, conversation: Conversation, limits: Limits
) -> Outcome:
    """Fit a parsed Responses request of `conversation` (the caller holds its lock)."""
    instructions, tools = request.get("instructions"), request.get("tools")
    return fit_conversation(body, request[KEY], layout, DIALECT, conversation, limits, instructions, tools)
