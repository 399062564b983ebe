"""Which counter and which context window a model's log is measured with.

A log that names its model (Claude Code `message.model`, Codex `turn_context.model`, OpenHands
`llm_metrics`) is counted with that family's calibrated profile, and fitted against that
model's window, unless the user says otherwise (`--profile`, `--tokenizer`, `--window`). A log
that names no model keeps the seed rule (DESIGN §3) and the default window.

Windows are the providers' published input limits as of **February 2026**; a log that records
its window (Codex `model_context_window`) is believed over this table. Opt-in larger windows
(Anthropic's 1M-token context beta for Sonnet 4/4.5 and Opus 4.6) are not assumed for a log:
pass ``--window 1000000`` when your agent uses them (the proxy sees a request opt in, by its
`anthropic-beta` header, and fits it to 1,000,000).

>>> family("claude-opus-4-6").profile, family("claude-opus-4-6").window
('claude', 200000)
>>> family("openrouter/openai/gpt-4.1-mini").profile
'o200k'
>>> family("deepseek-v3") is None
True
>>> family("gemini-2.5-pro").window
1048576
>>> family("gpt-5.3-codex").window, total_context("gpt-5.3-codex")
(272000, 400000)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .seed import Counter

#: When the window table below was last checked against the providers' model pages.
TABLE_DATE = "2026-02"


class Family(NamedTuple):
    name: str
    #: Built-in profile that counts this family's text.
    profile: str
    #: Input context window in tokens.
    window: int
    #: The whole context, prompt and reply together, where it is more than the input window
    #: (GPT-5: 400,000, of which at most 272,000 the prompt); None: the input window is it.
    total: int | None = None


#: (pattern searched in the lower-cased model name, family), first match wins: specific
#: names before general ones.
FAMILIES: tuple[tuple[re.Pattern[str], Family], ...] = tuple(
    (re.compile(p), f)
    for p, f in (
        (r"claude", Family("Claude", "claude", 200_000)),
        (r"gpt-4\.1", Family("GPT-4.1", "o200k", 1_047_576)),
        (r"gpt-4o|chatgpt-4o", Family("GPT-4o", "o200k", 128_000)),
        # 272,000 in, up to 128,000 out: the prompt limit Codex itself fits to (`context_window`).
        (r"gpt-5|codex", Family("GPT-5", "o200k", 272_000, 400_000)),
        (r"(^|[/:])o[134](-|$)", Family("OpenAI o-series", "o200k", 200_000)),
        (r"gpt-oss", Family("gpt-oss", "o200k", 131_072)),
        (r"gpt-4-turbo|gpt-4-1106|gpt-4-0125", Family("GPT-4 Turbo", "cl100k", 128_000)),
        (r"gpt-4", Family("GPT-4", "cl100k", 8_192)),
        (r"gpt-3\.5", Family("GPT-3.5", "cl100k", 16_385)),
        (r"mistral|mixtral|codestral|devstral|ministral|magistral|pixtral", Family("Mistral", "tekken", 128_000)),
        (r"qwen|qwq", Family("Qwen", "qwen", 131_072)),
        # Llama 4's tokenizer is not among ctxfit's; on the recorded growth of a real OpenHands run
        # (bench/real_usage.py) o200k's profile errs high on every call pair (1.22), safe by 1.58.
        (r"llama-4", Family("Llama 4", "o200k", 1_000_000)),
        # Gemini's tokenizer (SentencePiece, the Gemma vocabulary) is not among ctxfit's, and no
        # recorded log is long enough to calibrate a profile on: the seed rule, which errs high on
        # every script for it (Gemma spends fewer tokens than chars/4 on English, /2 on Cyrillic).
        (r"gemini-1\.5-pro", Family("Gemini 1.5 Pro", "seed", 2_097_152)),
        (r"gemini", Family("Gemini", "seed", 1_048_576)),
    )
)

#: Profile for a model that is named but not in the table: `safe` never counts below any
#: tokenizer ctxfit knows.
UNKNOWN_MODEL_PROFILE = "safe"


def family(model: str) -> Family | None:
    """The family of a model name as logs write it (provider prefixes allowed), or None."""
    name = model.lower().strip()
    for pattern, found in FAMILIES:
        if pattern.search(name):
            return found
    return None


def main_model(models: Iterable[str]) -> str:
    """The model a log is measured for: the last one it names ("" if none). A log that
    switched model mid-way is sent to the model it ended with."""
    named = [m for m in models if m and m != "<synthetic>"]
    return named[-1] if named else ""


def profile_for(models: Iterable[str]) -> tuple[str, str]:
    """(profile name, why) for a log naming `models`; ("seed", ...) when it names none."""
    model = main_model(models)
    if not model:
        return "seed", "the log names no model: seed rule"
    found = family(model)
    if found is None:
        return UNKNOWN_MODEL_PROFILE, f"model {model}: no calibrated family, {UNKNOWN_MODEL_PROFILE} profile"
    return found.profile, f"model {model} ({found.name})"


def counter_for_models(models: Iterable[str]) -> tuple[Counter, str]:
    """(counter, why): the seed rule or the family's profile, loaded."""
    from .profiles import load_profile
    from .seed import SEED

    name, why = profile_for(list(models))
    return (SEED if name == "seed" else load_profile(name)), why


def total_context(model: str) -> int | None:
    """The whole context of a model (prompt and reply), where the table says it is more than
    its input window; else None."""
    found = family(model) if model else None
    return found.total if found is not None else None


def window_for(models: Iterable[str], recorded: int | None = None) -> tuple[int | None, str]:
    """(window, source) for a log: the window it recorded, else the table's for its model,
    else (None, ...) for the caller's default."""
    if recorded:
        return recorded, "recorded by the log"
    model = main_model(models)
    found = family(model) if model else None
    if found is None:
        return None, "default"
    return found.window, f"{found.name} window ({TABLE_DATE} table)"
