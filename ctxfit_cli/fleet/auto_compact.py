"""Where each agent compacts its own conversation, so a live view can say how many calls are left
before it does. Looked up in the agents' own code (the numbers move between versions):

- **Claude Code** (`services/compact/autoCompact.ts`): the threshold is the effective window
  minus `AUTOCOMPACT_BUFFER_TOKENS` = 13,000, where the effective window is the model's window
  minus what it keeps for the summary, `min(max output tokens, 20,000)`. On a 200,000 window:
  167,000 tokens, 83.5%. (`CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` can only lower it.)
- **Codex** (`model_family.rs`, `default_auto_compact_limit`): 90% of the model's window, unless
  `model_auto_compact_token_limit` is configured.
- **Gemini CLI** (`chatCompressionService.ts`): `DEFAULT_COMPRESSION_TOKEN_THRESHOLD` = 0.5 of the
  model's token limit (it was 0.7 and 0.95 in earlier versions).

Other agents have no threshold here (None): they compact on their own rules or not at all.

>>> compaction_at("claude-code", 200_000), compaction_at("codex", 272_000), compaction_at("cline", 200_000)
(167000, 244800, None)
"""

from __future__ import annotations

CLAUDE_CODE_BUFFER = 13_000
CLAUDE_CODE_SUMMARY_RESERVE = 20_000
CODEX_SHARE = 0.9
GEMINI_CLI_SHARE = 0.5


def compaction_at(format: str, window: int) -> int | None:
    """The prompt size at which the agent that wrote a log of `format` compacts it, or None."""
    if format == "claude-code":
        return max(window - min(CLAUDE_CODE_SUMMARY_RESERVE, window // 4) - CLAUDE_CODE_BUFFER, window // 2)
    if format == "codex":
        return int(window * CODEX_SHARE)
    if format == "gemini-cli":
        return int(window * GEMINI_CLI_SHARE)
    from ..agents import BY_NAME

    agent = BY_NAME.get(format)
    return agent.compaction_at(window) if agent is not None else None
