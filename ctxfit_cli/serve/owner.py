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
    digest = hashlib.blake2b(key=_SALT, digest_size=16)
    for name in CREDENTIAL_HEADERS + CONVERSATION_HEADERS:
        _add(digest, _get(headers, name))
    for name in CREDENTIAL_QUERY:
        _add(digest, query.get(name, ""))
    return digest.hexdigest()


def _get(headers: Mapping[str, str], name: str) -> str:
    value = headers.get(name)
    if value is None and not hasattr(headers, "getall"):  # a plain dict: look it up by any case
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value or ""


def _add(digest: hashlib.blake2b, value: str) -> None:  # (the length first: no two fields run together)
    data = value.encode("utf-8", "surrogateescape")
    digest.update(len(data).to_bytes(8, "little"))
    digest.update(data)
