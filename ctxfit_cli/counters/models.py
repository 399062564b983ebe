"""Which counter and which context window a model's log is measured with.

A log that names its model (Claude Code `message.model`, Codex `turn_context.model`, OpenHands
`llm_metrics`) is counted with that family's calibrated profile, and fitted against that
model's window, unless the user says otherwise (`--profile`, `--tokenizer`, `--window`). A log
that names no model keeps the seed rule (DESIGN §3) and the default window.

Windows are the providers' published input limits as of **December 2026** (the models the
agents use by default then: Claude Code `claude-opus-4-8`, Codex `gpt-6.2-sol`, Gemini CLI
`gemini-3.1-pro-preview`); a log that records its window (Codex `model_context_window`) is
believed over this table. Opt-in larger windows (Anthropic's 1M-token context beta for Sonnet
4/4.5 and Opus 4.6) are not assumed for a log: pass ``--window 1000000`` when your agent uses
them (the proxy sees a request opt in, by its `anthropic-beta` header, and fits it to 1,000,000).
A model the table does not name takes the window the providers' catalog lists for it
(`catalog.py`, from genai-prices); one the catalog lacks too, of a known family (a newer
`claude-*`, `gpt-*` or `gemini-*`), gets its family's newest window. The source says which.

>>> family("claude-opus-4-6").profile, family("claude-opus-4-6").window
('claude', 200000)
>>> family("claude-opus-4-8").window, family("gpt-6.2-sol").window, total_context("gpt-6.2-sol")
(1000000, 922000, 1050000)
>>> window_for(["deepseek-chat"])
(64000, 'deepseek-chat window (genai-prices 0.2.5, 2026-12-07)')
>>> window_for(["gpt-7-nova"])
(922000, "GPT window: gpt-7-nova is not in the 2026-12 table, its family's newest taken")
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
TABLE_DATE = "2026-12"


class Family(NamedTuple):
    name: str
    #: Built-in profile that counts this family's text.
    profile: str
    #: Input context window in tokens.
    window: int
    #: The whole context, prompt and reply together, where it is more than the input window
    #: (GPT-5: 400,000, of which at most 272,000 the prompt); None: the input window is it.
    total: int | None = None
    #: A family's catch-all: the model is not in the table, its family's newest window is used.
    fallback: bool = False


#: (pattern searched in the lower-cased model name, family), first match wins: specific
#: names before general ones.
FAMILIES: tuple[tuple[re.Pattern[str], Family], ...] = tuple(
    (re.compile(p), f)
    for p, f in (
        # Opus and Sonnet 4.7 and newer hold 1M natively (4.6 and older only by the opt-in beta).
        (
            r"claude-(?:opus|sonnet)-4-[7-9]|claude-(?:opus|sonnet|fable)-[5-9]",
            Family("Claude 4.7 and newer", "claude", 1_000_000),
        ),
        (
            r"claude-(?:opus|sonnet|haiku)-4(?:-[0-6])?(?:$|-)|claude-(?:haiku|instant|[0-3](?:$|[-.]))",
            Family("Claude 4.6 and older", "claude", 200_000),
        ),
        (r"gpt-4\.1", Family("GPT-4.1", "o200k", 1_047_576)),
        (r"gpt-4o|chatgpt-4o", Family("GPT-4o", "o200k", 128_000)),
        # 1,050,000 in all, of which at most 922,000 the prompt (developers.openai.com, gpt-6.2-sol).
        (r"gpt-6", Family("GPT-6", "o200k", 922_000, 1_050_000)),
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
        (r"gemini-(?:1\.5|2|3)", Family("Gemini", "seed", 1_048_576)),
        # Each family's catch-all, last: a model newer than the table gets its family's newest window.
        (r"claude", Family("Claude", "claude", 1_000_000, fallback=True)),
        (r"gpt-", Family("GPT", "o200k", 922_000, 1_050_000, fallback=True)),
        (r"gemini", Family("Gemini", "seed", 1_048_576, fallback=True)),
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
    if found is not None and not found.fallback:
        return found.window, f"{found.name} window ({TABLE_DATE} table)"
    listed = _listed_window(model) if model else None
    if listed is not None:
        return listed
    if found is None:
        return None, "default"
    return found.window, f"{found.name} window: {model} is not in the {TABLE_DATE} table, its family's newest taken"


def _listed_window(model: str) -> tuple[int, str] | None:
    """(window, source) from the providers' catalog (`catalog.py`), for a model the table does
    not name; None where the catalog gives no window for it either."""
    from . import catalog

    entry = catalog.lookup(model)
    if entry is None or not entry.window:
        return None
    return entry.window, f"{entry.name} window ({catalog.describe_source()})"
