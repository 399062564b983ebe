"""A provider's "prompt too long" refusal, read: how much tighter the conversation's next attempt is fitted.

ctxfit's count of a request is an estimate until a reply anchors it (DESIGN §11), and a refusal
carries no usage: retried as it was, the same request is refused again, every time. So the
refusal teaches the conversation (DESIGN §15): where the provider says its own count of the
prompt (S) and what it allows (A: its window, less the reply's room where it says it), the next
attempt gets the budget that ctxfit's count (T) of what the provider allows comes to, A x T / S,
a little under; where it says no number (the Responses API), 10% less. Each refusal tightens
once more, never by more than half, so a provider's message that errs cannot shrink a
conversation to nothing at once. What the provider allows the prompt of a refusal that gives the
reply's room (prompt + `max_tokens` > window) is its window less the room the proxy itself keeps
for that reply (`limits.py`: at most a quarter of the window); a prompt the provider counts within
that was refused for the agent's `max_tokens` alone, which the agent lowers on this very message
(Claude Code does), so it teaches nothing: fitted tighter, the retry would only lose its newest
steps (a resumed session at a 70,000-token window went from 45 messages to 3).

>>> refusal = read_refusal("prompt is too long: 212,345 tokens > 200000 maximum")
>>> refusal
Refusal(counted=212345, allowed=200000)
>>> round(tighter(refusal, counted=168_000, budget=168_000), 3)
0.914
>>> tighter(read_refusal("Your input exceeds the context window of this model."), counted=1, budget=1)
0.9
>>> room = read_refusal("input length and `max_tokens` exceed context limit: 34937 + 64000 > 70000")
>>> room.allowed, tighter(room, counted=52_000, budget=52_500) is None  # (70,000 less a quarter)
(52500, True)
>>> read_refusal("rate limited") is None
True
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .limits import REPLY_SHARE, reply_room_kept


class Refusal(NamedTuple):
    """What a too-long refusal says: the provider's count of the prompt, and the most it allows
    for the prompt (its window less the reply's room, where it gives both), when it says them."""

    counted: int | None = None
    allowed: int | None = None


_N = r"([\d,]+)"
#: (pattern, groups: which of (counted, room, window) each number is), the providers' own messages.
_SAID = tuple(
    (re.compile(pattern, re.I), groups)
    for pattern, groups in (
        # Anthropic
        (rf"prompt is too long: {_N} tokens > {_N} maximum", ("counted", "window")),
        (rf"input length and `?max_tokens`? exceed context limit: {_N} \+ {_N} > {_N}", ("counted", "room", "window")),
        # OpenAI Chat Completions
        (
            rf"maximum context length is {_N} tokens\. However, you requested {_N} tokens \({_N} in the messages, "
            rf"{_N} in the completion\)",
            ("window", "total", "counted", "room"),
        ),  # fmt: skip
        (
            rf"maximum context length is {_N} tokens\. However, your messages resulted in {_N} tokens",
            ("window", "counted"),
        ),  # fmt: skip
        # Gemini (the reply's room is not in its window)
        (rf"input token count \({_N}\) exceeds the maximum number of tokens allowed \({_N}\)", ("counted", "window")),
    )
)
#: What says "too long" without a number: the Responses API's message, OpenAI's error code.
_WORDLESS = re.compile(r"exceeds the context window|context_length_exceeded|prompt is too long|too many tokens", re.I)
#: An attempt after a refusal gets at most this share of the budget its refused one had (a
#: little under what the provider's numbers allow: the estimate of the rest still errs) ...
MARGIN = 0.97
#: ... at least this share (one refusal never shrinks a conversation by more than half) ...
LEAST = 0.5
#: ... and this share when the provider gave no number.
WORDLESS = 0.9


def read_refusal(message: str, body: bytes = b"") -> Refusal | None:
    """The refusal in a provider's error `message` (its raw `body` too, for an error code), or
    None when it does not say the prompt is too long."""
    for pattern, groups in _SAID:
        found = pattern.search(message)
        if found:
            said = {name: int(value.replace(",", "")) for name, value in zip(groups, found.groups())}
            room = reply_room_kept(said.get("room", 0), round(said["window"] * REPLY_SHARE))
            return Refusal(said["counted"], said["window"] - room)
    if _WORDLESS.search(message) or b"context_length_exceeded" in body:
        return Refusal()
    return None


def tighter(refusal: Refusal, *, counted: int, budget: int) -> float | None:
    """The share of `budget` (the refused request's, `counted` by ctxfit) its conversation's
    next attempt is fitted to; None when the provider counts the prompt within what it allows
    (the reply's room was refused, not the prompt: nothing to tighten)."""
    if refusal.counted is not None and refusal.allowed is not None and refusal.counted <= refusal.allowed:
        return None
    if refusal.counted and refusal.allowed and counted > 0 and budget > 0:
        share = MARGIN * refusal.allowed * counted / (refusal.counted * budget)
    else:
        share = WORDLESS
    return min(max(share, LEAST), MARGIN)
