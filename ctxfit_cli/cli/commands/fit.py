"""`ctxfit fit`: the request payload that fits the budget."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ...core.notes import TOO_LONG
from ...counters.seed import SEED
from ...errors import CannotFit
from ...input_formats import DEFAULT_LINE_LIMIT_MB
from ..defaults import DEFAULT_BUDGET, DEFAULTS
from ..error_reporting import reports_errors
from ..fit_inputs import _fit_all, _fit_report
from ..lazy import orjson, payload, reading, render, render_fit
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
from ..outputs import atomic_write, check_outputs, write_stdout
from ..writing import report_skipped


def _cannot_fit(name: str, plan) -> CannotFit:
    return CannotFit(
        f"{name}: {TOO_LONG} (the smallest request — system prompt, first message and newest "
        f"round — is {plan.tokens_after:,} tokens; the model's window is {plan.window:,})",
        smallest=plan.tokens_after,
        window=plan.window,
    )


@reports_errors
def fit(
    paths: FitPaths = None,
    budget: Budget = DEFAULT_BUDGET,
    window: Window = None,
    fixed_tokens: FixedTokens = "auto",
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", help="Write the payload to FILE (atomically) instead of stdout.")
    ] = None,
    report: Annotated[Optional[str], typer.Option("--report", help="Write the fitting report to FILE as JSON.")] = None,
    tell_agent: TellAgent = False,
    set_fields: Annotated[
        Optional[list[str]],
        typer.Option(
            "--set",
            metavar="FIELD=VALUE",
            help="Set a top-level field of the payload, e.g. --set model=claude-sonnet-4-5 --set max_tokens=8192. "
            "VALUE is read as JSON when it parses (numbers, true/false, null, objects), else as text.",
        ),
    ] = None,
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
    """Write the request payload that fits the budget (DESIGN §4).

    \b
    To send a long agent transcript within 400,000 tokens:
        ctxfit fit session.jsonl --budget 400000 > request.json
    To check what was sent:
        ctxfit fit session.jsonl --budget 400000 | ctxfit estimate -
    To tell the agent about its safety net as well:
        ctxfit fit session.jsonl --tell-agent -o request.json
    To write a request the provider takes as it is:
        ctxfit fit session.jsonl --set model=claude-sonnet-4-5 --set max_tokens=8192 -o request.json
    For several logs (or a folder), one payload per line:
        ctxfit fit a.jsonl b.traj runs/ --budget 400000 > requests.jsonl

    The payload is one JSON object in the input's dialect (a Claude Code log becomes an
    Anthropic Messages request). A summary goes to stderr. If even the smallest request is over
    the budget but within --window, that request is written and the overrun reported; if it is
    over the window, nothing is written and the exit code is 4.
    """
    reading.set_line_limit(max_line_mb)
    format = _check_format(format)
    auto = _auto(tokenizer, profile, window, fixed_tokens)
    options = _options(
        budget, window, lowwater, batch_size, protect_share, min_clear_tokens, auto.counter or SEED, strict=strict
    )
    fields = _parse_fields(set_fields or [])
    from .. import many

    if output or report:  # before anything is read, then again with the files found in folders
        check_outputs({"--output": output, "--report": report}, paths or ["-"])
    conversations, problems, sources = _fit_all(paths, format, options, tell_agent, auto, strict_inputs)
    check_outputs({"--output": output, "--report": report}, sources)
    outputs, reports = [], []
    for transcript, fitted, chosen in conversations:
        if fitted.plan.cannot_fit:
            raise _cannot_fit(transcript.path, fitted.plan)
        extra = payload.with_log_model(transcript).extra  # the fields the payload was written with
        outputs.append(payload.with_fields(fitted.payload, extra, fields) if fields else fitted.payload)
        reports.append(_fit_report(transcript, fitted, chosen))
    if json:
        document = {"reports": reports, "payloads": [orjson.Fragment(p) for p in outputs]}
        data = orjson.dumps(document) + b"\n"
    else:
        data = b"".join(p + b"\n" for p in outputs)
    # The payload first: a report is written only for a payload that was.
    if output:
        atomic_write(output, data)
    else:
        write_stdout(data)
    if report:
        atomic_write(
            report, orjson.dumps(reports[0] if len(reports) == 1 else reports, option=orjson.OPT_INDENT_2) + b"\n"
        )
    err = render.stderr_console()  # after writing: a failure leaves only its own line
    report_skipped(reports)
    for entry in reports:
        render.repairs(entry["repairs"])
        if entry["still_being_written"]:  # as `estimate` says it
            why = "; ".join(entry["still_being_written"])
            err.print(render.Text(f"{entry['path']}: still being written ({why}): read up to its last complete record"))
        render_fit.fit_summary(err, entry)
    many.finish(problems, reported=bool(outputs))


def _parse_fields(settings: list[str]) -> dict[str, bytes]:
    """`--set FIELD=VALUE` options as raw JSON values: JSON where VALUE parses, else a string.
    To send text that looks like a number, quote it: --set 'user_id="42"'."""
    fields: dict[str, bytes] = {}
    for setting in settings:
        name, equals, value = setting.partition("=")
        if not equals or not name:
            raise typer.BadParameter(f"{setting!r} is not FIELD=VALUE", param_hint="--set")
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            parsed = value
        fields[name] = orjson.dumps(parsed)
    return fields
