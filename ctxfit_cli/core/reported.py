"""What a provider's reply says it was given: the prompt size it counted (DESIGN §11).

Every reply reports the exact size of the request it answered, each API in its own words:

- Anthropic Messages: `usage.input_tokens + cache_creation_input_tokens +
  cache_read_input_tokens` (input excludes what was read from or written to the cache), also in
  a stream's `message_start` event (`message.usage`);
- OpenAI Chat Completions: `usage.prompt_tokens` (cache reads included,
  `prompt_tokens_details.cached_tokens`), also in a stream's last chunk when the client asked for
  it (`stream_options.include_usage`);
- OpenAI Responses: `usage.input_tokens` (cache reads included, `input_tokens_details`);
- Gemini: `usageMetadata.promptTokenCount`;
- LangChain's `AIMessage.usage_metadata`: `input_tokens`, cache reads and writes included.

`reported_prompt` takes any of these as JSON — the whole reply, a stream event, or the usage
object alone — and gives the prompt size, or None when it carries none. Plain data in and out.

>>> reported_prompt({"usage": {"input_tokens": 12, "cache_read_input_tokens": 30_000,
...                            "cache_creation_input_tokens": 800, "output_tokens": 95}})
Reported(prompt=30812, cache_read=30000)
>>> reported_prompt({"prompt_tokens": 2048, "completion_tokens": 9,
...                  "prompt_tokens_details": {"cached_tokens": 1024}})
Reported(prompt=2048, cache_read=1024)
>>> reported_prompt({"type": "message_delta", "usage": {"output_tokens": 7}}) is None
True
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Reported(NamedTuple):
    """A provider's count of one request."""

    #: The whole prompt: everything the request sent, cached or not.
    prompt: int
    #: Of it, the tokens read from the provider's prompt cache.
    cache_read: int = 0


def reported_prompt(value: Any) -> Reported | None:
    """The prompt size a reply, a stream event or a usage object reports (None: it reports none)."""
    if not isinstance(value, dict):
        return None
    for usage in _usage_objects(value):
        found = _from_usage(usage)
        if found is not None:
            return found
    return None


def _usage_objects(value: dict[str, Any]) -> list[dict[str, Any]]:
    """Where the usage may sit: the value itself, its `usage`, an Anthropic stream's
    `message.usage`, a Responses stream's `response.usage`, Gemini's `usageMetadata`, and
    Google's Code Assist's `response.usageMetadata` (Gemini CLI signed in with Google)."""
    places = [value.get("usage"), value.get("usageMetadata"), value.get("usage_metadata")]
    for holder in ("message", "response"):
        inner = value.get(holder)
        if isinstance(inner, dict):
            places += [inner.get("usage"), inner.get("usageMetadata")]
    places.append(value)
    return [p for p in places if isinstance(p, dict)]


def _from_usage(usage: dict[str, Any]) -> Reported | None:
    if _is_count(usage.get("prompt_tokens")):  # OpenAI Chat Completions
        details = usage.get("prompt_tokens_details")
        return Reported(usage["prompt_tokens"], _count(details, "cached_tokens"))
    if _is_count(usage.get("promptTokenCount")):  # Gemini
        return Reported(usage["promptTokenCount"], _count(usage, "cachedContentTokenCount"))
    if not _is_count(usage.get("input_tokens")):
        return None
    if isinstance(usage.get("input_token_details"), dict):  # LangChain: input_tokens is the whole prompt
        return Reported(usage["input_tokens"], _count(usage["input_token_details"], "cache_read"))
    if isinstance(usage.get("input_tokens_details"), dict):  # OpenAI Responses: cache reads included
        return Reported(usage["input_tokens"], _count(usage["input_tokens_details"], "cached_tokens"))
    # Anthropic: input_tokens leaves out what the cache served and what it stored.
    read = _count(usage, "cache_read_input_tokens")
    return Reported(usage["input_tokens"] + read + _count(usage, "cache_creation_input_tokens"), read)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _count(holder: Any, key: str) -> int:
    value = holder.get(key) if isinstance(holder, dict) else None
    return value if isinstance(value, int) and _is_count(value) else 0
