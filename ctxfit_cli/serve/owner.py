"""Whose a request is: a digest of the credential it carries and of the conversation its agent names.

A proxy shared by a team keeps each conversation's state (its session, the provider's counts)
apart per client (DESIGN §15): two teammates whose conversations start alike (the same system
prompt, Codex's same `AGENTS.md` first item) must never size each other's requests. The key is
never kept or logged: only a keyed BLAKE2 digest of it, under a salt drawn when the proxy starts
(so the digest says nothing outside this process, nor across restarts). The conversation an agent
names in its headers narrows it further (Claude Code's `x-claude-code-session-id`, Codex's
`session-id`, OpenCode's `x-session-id`); what it names in the body is read by the worker
(`conversations.conversation_key`).

>>> owner({"x-api-key": "sk-a"}, {}) == owner({"X-Api-Key": "sk-a"}, {}) != owner({"x-api-key": "sk-b"}, {})
True
>>> len(owner({}, {"key": "AIza..."})), owner({}, {}) == owner({}, {})
(32, True)
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

#: Where a client's credential travels: Anthropic's, OpenAI's (and any bearer token), Gemini's.
CREDENTIAL_HEADERS = ("x-api-key", "authorization", "x-goog-api-key", "api-key")
#: Gemini's key may come in the URL instead.
CREDENTIAL_QUERY = ("key",)
#: Headers in which an agent names its own conversation (the same at every step of it).
CONVERSATION_HEADERS = (
    "x-claude-code-session-id",
    "session-id",
    "session_id",
    "x-session-id",
    "conversation-id",
    "conversation_id",
)
#: Drawn once per proxy process: the digests cannot be matched against a guessed key elsewhere.
_SALT = os.urandom(32)


def owner(headers: Mapping[str, str], query: Mapping[str, str]) -> str:
    """A digest of the request's credential and named conversation (hex; never the key itself).
    `headers` looked up case-insensitively when it is aiohttp's (a `CIMultiDict`)."""
    if not hasattr(headers, "getall"):  # a plain dict: looked up by any case
        headers = {name.lower(): value for name, value in headers.items()}
    values = [headers.get(name) or "" for name in _HEADERS] + [query.get(name) or "" for name in CREDENTIAL_QUERY]
    # Each value after its length (no two fields run together), hashed in one call: a request
    # is digested twice (its connection's share, its conversation's key) by the event loop.
    data = b"".join(_field(value.encode("utf-8", "surrogateescape")) for value in values)
    return hashlib.blake2b(data, key=_SALT, digest_size=16).hexdigest()


_HEADERS = CREDENTIAL_HEADERS + CONVERSATION_HEADERS


def _field(data: bytes) -> bytes:
    return len(data).to_bytes(8, "little") + data
