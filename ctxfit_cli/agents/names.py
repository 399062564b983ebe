"""Model names as some agents write them, in the form the price and window tables use."""

from __future__ import annotations

import re

_VERSION_DOT = re.compile(r"(?<=\d)\.(?=\d)")


def claude_dashes(model: str) -> str:
    """A Claude model's version with dashes, as Anthropic names it (GitHub Copilot writes dots);
    any other model as it is (OpenAI's and Google's names have dots of their own).

    >>> claude_dashes("claude-sonnet-4.6"), claude_dashes("gpt-5.2"), claude_dashes("claude-opus-4-7")
    ('claude-sonnet-4-6', 'gpt-5.2', 'claude-opus-4-7')
    """
    return _VERSION_DOT.sub("-", model) if "claude" in model.lower() else model
