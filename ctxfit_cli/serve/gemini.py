"""The proxy's side of Gemini (`POST /v1beta/models/{model}:generateContent` and
`:streamGenerateContent`, what Gemini CLI and the google-genai SDKs send).

Fitted like the other dialects (`fitting.py`): the body is read incrementally, its `contents`
fitted with the library's `Session` (`systemInstruction` and `tools` as the fixed part; a
`functionCall` and the `functionResponse` answering it are never split), and written back as the
agent's own bytes with only the changed contents serialized. The model is named in the path,
not in the body. A request that holds part of its history on the provider's side
(`cachedContent`) is forwarded as it came, and its log line says why.

The budget and window come from the model (`limits.py`): the default target is the model's
window less the reply's room, `generationConfig.maxOutputTokens`. Gemini counts a prompt
against its input limit alone (the output has a limit of its own), so a conversation is
refused here only when its smallest request is past the whole window.
"""

from __future__ import annotations

from ..core.model import Dialect
from .body import Layout, Readers
from .conversations import Conversation, keyed
from .fitting import Limits, Outcome, fit_conversation, read_conversation
from .limits import LimitRule

DIALECT: Dialect = "gemini"
KEY = "contents"  # the array of the conversation in the body
#: The fields of a generateContent body, in both of the spellings the API reads.
SYSTEM_KEYS = ("systemInstruction", "system_instruction")
CONFIG_KEYS = ("generationConfig", "generation_config")
REPLY_KEYS = ("maxOutputTokens", "max_output_tokens")
#: A context cache the request builds on: the provider puts its contents before these.
SERVER_HISTORY = ("cachedContent", "cached_content")


def parse(readers: Readers, body: bytes) -> tuple[dict, Layout]:
    """The request as JSON and where its contents are in `body` (raises `BodyError` saying why
    it cannot be fitted: the proxy then forwards it as it came)."""
    why = "the provider puts a cached history before the contents sent, which cannot be fitted here"
    return read_conversation(readers, body, KEY, SERVER_HISTORY, why)


def conversation_key(_dialect: str, request: dict, client: str = "") -> str:
    """The conversation a request belongs to: whose it is, its system instruction and first content."""
    contents = request.get(KEY) or []
    first = contents[0] if contents else None
    return keyed(client, request, DIALECT, system_of(request), first)


def limits_for(rule: LimitRule, request: dict, model: str) -> Limits:
    """The budget and window of a request to `model` (from its path), the reply's room its
    `generationConfig.maxOutputTokens`.

    >>> limits = limits_for(LimitRule(), {"generationConfig": {"maxOutputTokens": 8192}}, "gemini-2.5-pro")
    >>> limits.budget, limits.window
    (1040384, 1048576)
    >>> limits_for(LimitRule(share=0.5), {"generation_config": {"max_output_tokens": 8192}}, "gemini-2.5-flash").budget
    524288
    """
    config = _first(request, CONFIG_KEYS)
    room = _first(config, REPLY_KEYS) if isinstance(config, dict) else None
    asked = rule.for_request({"model": model, "max_output_tokens": room})
    whole = asked if asked.window is None or room is None else rule.for_request({"model": model})
    return Limits(asked.budget, whole.window, model, asked.about)


def fit_body(
    body: bytes, request: dict, layout: Layout, _dialect: str, conversation: Conversation, limits: Limits
) -> Outcome:
    """Fit a parsed generateContent request of `conversation` (the caller holds its lock)."""
    return fit_conversation(
        body, request[KEY], layout, DIALECT, conversation, limits, system_of(request), request.get("tools")
    )


def system_of(request: dict) -> object:
    return _first(request, SYSTEM_KEYS)


def _first(holder: dict, keys: tuple[str, ...]) -> object:
    """The value of the first of `keys` present (the API's two spellings of one field)."""
    return next((holder[key] for key in keys if holder.get(key) is not None), None)
