"""What each API accepts in a message, beside its content: the keys per dialect and role, and
which text blocks carry nothing. Shared by the validator (which refuses the rest) and the repair
(which removes it), and light enough for `estimate`'s start-up.
"""

from __future__ import annotations

from typing import Any

#: The keys each API accepts in a message (per role for OpenAI); any other is refused.
ANTHROPIC_KEYS = frozenset(("role", "content"))
OPENAI_KEYS: dict[object, frozenset[str]] = {
    "system": frozenset(("role", "content", "name")),
    "developer": frozenset(("role", "content", "name")),
    "user": frozenset(("role", "content", "name")),
    "assistant": frozenset(("role", "content", "name", "tool_calls", "refusal", "audio", "function_call")),
    # `name` on a tool message is outside the documented shape, but the API takes it (OpenAI's
    # own function-calling cookbook sent it; OpenHands, through LiteLLM, does).
    "tool": frozenset(("role", "content", "tool_call_id", "name")),
}


def unknown_keys(message: dict[str, Any], dialect: str) -> list[str]:
    """The keys of a message its API refuses, in the message's order.

    >>> unknown_keys({"role": "user", "content": "hi", "ts": 1}, "anthropic")
    ['ts']
    """
    if dialect == "anthropic":
        if len(message) == 2 and "role" in message and "content" in message:
            return []  # (the common case, asked of every message read)
        accepted = ANTHROPIC_KEYS
    else:
        accepted = OPENAI_KEYS.get(message.get("role"), OPENAI_KEYS["user"])
    return [key for key in message if key not in accepted]


def is_blank_text(block: object) -> bool:
    """A text block (or part) with no text but whitespace: every API refuses it or it carries
    nothing (see the module's notes)."""
    return (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and not block["text"].strip()
    )


#: Part fields that say something about the part's data, not data themselves (Gemini: the
#: validator asks a part for data beside them; `formats.gemini` never counts them).
PART_METADATA = frozenset(
    (
        "thought",
        "thoughtSignature",
        "thought_signature",
        "videoMetadata",
        "video_metadata",
        "partMetadata",
        "part_metadata",
        "mediaResolution",
        "media_resolution",
    )
)
