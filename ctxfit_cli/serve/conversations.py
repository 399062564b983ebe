"""The proxy's memory: one `Session` per conversation, bounded, and what it did for each.

A conversation is recognised from its request: whose it is (a digest of its credential, never
the key, `owner.py`), the conversation its agent names (Claude Code's session, Codex's
`prompt_cache_key`), the dialect, the system prompt and the first message (an agent resends
them unchanged at every step; a sub-agent has its own). So no client's request or reply ever
touches another's state (DESIGN §15), however alike their conversations start. Its `Session`
makes each request an incremental step of the same walk, so the ratchets of DESIGN §4 hold
across requests. Sessions live in the fitting worker that serves the conversation
(`Conversations`, one per worker, `worker.py`) and are kept for the most recently used
conversations only (LRU), within a number of bytes (`SESSION_MEMORY` per byte of the
conversation's last request body); one that was dropped is rebuilt from the next request, with
the same result (a plan depends only on the history) at the cost of one full walk. What the
proxy did for each conversation is kept apart, in the proxy's own process (`ledger.py`),
whichever worker fitted its requests.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

from ..api import Session
from ..core.model import Dialect


@dataclass
class Conversation:
    """One conversation's fitting state in the worker that serves it (one request at a time:
    a worker fits its requests one after the other)."""

    key: str
    dialect: str
    session: Session | None = None
    #: What the session was made for: the request's fixed part (`fixed_part`), the budget and
    #: the window (a change means a new session, with no provider's count).
    fixed: tuple = ()
    #: The fixed part of the request being fitted (set by `Conversations.get`).
    bound: bytes = b""
    #: Bytes of the last request body its session was fitted on.
    size: int = 0
    #: The last request fitted, as its reply's usage anchors it: (ticket, session, what it
    #: sent); forgotten with the conversation.
    last: tuple | None = None
    #: The share of its budget the conversation is fitted to: under 1 once the provider refused
    #: one of its requests as too long (`refusals.py`), so that the next attempt is tighter.
    tighter: float = 1.0

    def session_for(
        self, budget: int, window: int | None, dialect: Dialect, system: Any, tools: Any, counter: Any = None
    ) -> Session:
        # Another fixed part (system prompt, tools, a schema: byte for byte), budget, window or
        # counter (the agent switched model): a new walk, and no reply counted under the old one anchors it.
        fixed = (self.bound or orjson.dumps([system, tools]), budget, window, counter)
        if self.session is None or self.fixed != fixed:
            options = {"counter": counter} if counter is not None else {}
            self.session = Session(budget, system=system, tools=tools, dialect=dialect, window=window, **options)
            self.fixed = fixed
        return self.session


#: Memory a session holds per byte of its conversation's request body: the messages as the
#: fitting reads them (their bytes, parts and estimates). Measured in RSS on agent transcripts
#: at 2.6-3.3 bytes per body byte together with the body's reader (`body.READER_MEMORY`).
SESSION_MEMORY = 3


class Conversations:
    """The conversations a worker serves, most recent last, their sessions holding at most
    `memory` bytes (as estimated) and at most `capacity` of them: past either, the least
    recently used are forgotten first (rebuilt if they come back)."""

    def __init__(self, capacity: int | None = None, memory: int | None = None) -> None:
        self.capacity, self.memory = capacity, memory
        self._known: OrderedDict[str, Conversation] = OrderedDict()
        self._held = 0  # SESSION_MEMORY * size, summed over `_known`

    def get(self, key: str, dialect: str, bound: bytes = b"") -> Conversation:
        """Conversation `key`, about to fit a request whose fixed part is `bound` (`fixed_part`)."""
        conversation = self._known.get(key)
        if conversation is None:
            conversation = self._known[key] = Conversation(key, dialect)
        self._known.move_to_end(key)
        conversation.bound = bound
        return conversation

    def find(self, key: str) -> Conversation | None:
        """The conversation `key` if it is still kept (not counted as a use)."""
        return self._known.get(key)

    def fitted(self, conversation: Conversation, size: int) -> None:
        """`conversation` has just fitted a body of `size` bytes: forget the least recently
        used conversations past the memory or the count (this one too, when it alone is over)."""
        if conversation.key in self._known:
            self._held += SESSION_MEMORY * (size - conversation.size)
        conversation.size = size
        while self._known and (
            (self.memory is not None and self._held > self.memory)
            or (self.capacity is not None and len(self._known) > self.capacity)
        ):
            _, dropped = self._known.popitem(last=False)
            dropped.session = dropped.last = None
            self._held -= SESSION_MEMORY * dropped.size

    def held(self) -> int:
        """The memory the sessions hold, as estimated."""
        return self._held

    def __len__(self) -> int:
        return len(self._known)


def conversation_key(dialect: str, request: dict, client: str = "") -> str:
    """The conversation a request belongs to: whose it is (`client`, `owner.py`), the
    conversation its agent names, its dialect, system prompt and first message."""
    messages = request.get("messages") or []
    first = next((m for m in messages if not (isinstance(m, dict) and m.get("role") in ("system", "developer"))), None)
    system = (
        request.get("system")
        if dialect == "anthropic"
        else [m for m in messages[:4] if isinstance(m, dict) and m.get("role") in ("system", "developer")]
    )
    return keyed(client, request, dialect, system, first)


def keyed(client: str, request: dict, *parts: object) -> str:
    """A conversation's key: a short digest of `client`, the conversation the request names
    itself (`named`) and `parts` (what every step of it sends alike)."""
    digest = hashlib.blake2b(orjson.dumps([client, named(request), *parts]), digest_size=6)
    return digest.hexdigest()


def named(request: dict) -> list:
    """What names the conversation in a request's body, where its agent says: Claude Code's
    `metadata.user_id` (its device and session), the `prompt_cache_key` Codex sets to its
    conversation's id, a Code Assist request's `session_id`.

    >>> named({"metadata": {"user_id": '{"session_id":"ec5d"}'}, "messages": []})
    ['{"session_id":"ec5d"}', None, None]
    """
    metadata = request.get("metadata")
    user = metadata.get("user_id") if isinstance(metadata, dict) else None
    return [user, request.get("prompt_cache_key"), request.get("session_id")]


#: Fields that add nothing to the prompt the provider counts (and some that change at every
#: step: Codex's `client_metadata` names the turn): left out of what binds a reply's count.
UNCOUNTED = frozenset(
    {
        "metadata", "client_metadata", "stream", "stream_options", "store", "user", "prompt_cache_key",
        "prompt_cache_retention", "safety_identifier", "service_tier", "max_tokens", "max_completion_tokens",
        "max_output_tokens", "temperature", "top_p", "top_k", "seed", "n", "presence_penalty",
        "frequency_penalty", "logprobs", "top_logprobs", "logit_bias", "include", "background", "session_id",
        "user_prompt_id",
    }
)  # fmt: skip


def fixed_part(request: dict, array: str) -> bytes:
    """Everything `request` sends outside its conversation `array` that the provider may count
    (system prompt, tools, a schema: `response_format`, `text.format`, `output_config`, Gemini's
    `generationConfig.responseSchema`, the model, ...), as JSON: compared byte for byte, key order
    and `1` against `true` included. A reply's count anchors only requests with the same one.
    (Bytes, not a digest of them: hashing Claude Code's 39 KB of system prompt and tools took
    113 µs a request, their serializing 38 µs, a comparison a few.)

    >>> one = {"system": "s", "messages": [], "response_format": {"strict": True}}
    >>> fixed_part(one, "messages") == fixed_part({**one, "messages": [1], "stream": True}, "messages")
    True
    >>> fixed_part(one, "messages") == fixed_part({**one, "response_format": {"strict": 1}}, "messages")
    False
    """
    return orjson.dumps({key: value for key, value in request.items() if key != array and key not in UNCOUNTED})
