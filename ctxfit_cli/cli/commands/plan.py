"""`ctxfit plan`: which results each batch clears, and what else fitting drops."""

from __future__ import annotations

import typer

from ...counters.seed import SEED
from ...errors import CannotFit
from ...input_formats import DEFAULT_LINE_LIMIT_MB
from ..defaults import DEFAULT_BUDGET, DEFAULTS
from ..error_reporting import reports_errors
from ..fit_inputs import _fit_all, _fit_report
from ..lazy import reading, render, render_fit
from ..options import (
    BatchSize,
    Budget,
    FitPaths,
    FixedTokens,
    Format,
    Json,
    Lowwater,
    MaxLine,
    MinClear,
    Profile,
    ProtectShare,
    Strict,
    StrictInputs,
    TellAgent,
    Tokenizer,
    Window,
    _auto,
    _check_format,
    _options,
)
from ..outputs import StdoutText
from ..writing import report_repairs, write_json


@reports_errors
def plan_command(
    paths: FitPaths = None,
    budget: Budget = DEFAULT_BUDGET,
    window: Window = None,
    fixed_tokens: FixedTokens = "auto",
    tell_agent: TellAgent = False,
    lowwater: Lowwater = DEFAULTS.lowwater,
    strict: Strict = False,
    batch_size: BatchSize = DEFAULTS.batch_size,
    protect_share: ProtectShare = DEFAULTS.protect_share,
    min_clear_tokens: MinClear = DEFAULTS.min_clear_tokens,
    tokenizer: Tokenizer = None,
    profile: Profile = None,
    json: Json = False,
    max_line_mb: MaxLine = DEFAULT_LINE_LIMIT_MB,
    format: Format = None,
    strict_inputs: StrictInputs = False,
) -> None:
    """Show the clearing plan: which results each batch clears, and what else is dropped.

    \b
    To see what fitting a transcript into 400,000 tokens would do:
        ctxfit plan session.jsonl --budget 400000
    As JSON, for a script (a list: one plan per conversation):
        ctxfit plan session.jsonl --budget 400000 --json | jq '.[0].batches[].freed'
    For every log in a folder:
        ctxfit plan logs/ --budget 400000

    A plan that cannot fit the window is still shown; the exit code is then 4.
    """
    reading.set_line_limit(max_line_mb)
    format = _check_format(format)
    auto = _auto(tokenizer, profile, window, fixed_tokens)
    options = _options(
        budget, window, lowwater, batch_size, protect_share, min_clear_tokens, auto.counter or SEED, strict=strict
    )
    from .. import many

    conversations, problems, _ = _fit_all(paths, format, options, tell_agent, auto, strict_inputs)
    entries = [_fit_report(transcript, fitted, chosen) for transcript, fitted, chosen in conversations]
    if json:
        write_json(entries)  # always a list: one plan per conversation, however many there are
    else:
        out = render.console(StdoutText())
        for entry in entries:
            render_fit.plan_report(out, entry)
    for entry in entries:
        report_repairs(entry["repairs"])
    if any(e["cannot_fit"] for e in entries):
        raise typer.Exit(CannotFit.exit_code)
    many.finish(problems, reported=bool(entries))
