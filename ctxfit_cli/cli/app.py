"""The command line: arguments, streams and exit codes. All the work happens in the core.

stdout carries only the product (a report, a payload, or JSON); messages to the person go to
stderr. Errors from the core become one line on stderr and the exit code of their class.
"""

from __future__ import annotations

import functools
import gc
import math
import os
import sys
from itertools import chain
from typing import TYPE_CHECKING, Annotated, Callable, Iterator, NamedTuple, Optional

import typer

from .lazy import LazyModule

# Loaded on first use: --help needs none.
orjson = LazyModule("orjson")
parallel = LazyModule("ctxfit_cli.formats.parallel")
payload = LazyModule("ctxfit_cli.formats.payload")
reading = LazyModule("ctxfit_cli.formats.reading")
render = LazyModule("ctxfit_cli.cli.render")
from ..errors import EXIT_BAD_INPUT, EXIT_INTERNAL, CtxfitError
from ..counters.seed import SEED
from ..input_formats import FORMATS
from .inputs import transcripts
from ..core.notes import AGENT_NOTE, TOO_LONG
from ..errors import BadInput, CannotFit, OutputFailed, UsageProblem
from .defaults import DEFAULT_BUDGET, DEFAULT_WINDOW, DEFAULTS
from .group import OnDemandGroup, OnDemandTyper
from .outputs import StdoutText, atomic_write, check_outputs, discard_stdout, write_stdout
from ..input_formats import DEFAULT_LINE_LIMIT_MB

if TYPE_CHECKING:  # the fitter, the model and replay load when a command uses them
    from ..core.options import FitOptions
    from ..core.model import Transcript
    from ..counters.seed import Counter
    from ..fleet.combine import Combined
    from ..replay.simulation import PolicyReplay, Prices

EXIT_CODES = """\b
Exit codes: 0 success · 1 internal error (e.g. a produced request failed validation) ·
2 usage error · 3 bad input (file, line and problem on stderr) · 4 cannot fit (even the smallest request is larger than the model's window) ·
5 partial (some of many inputs were bad: each named on stderr, the others reported) ·
6 cannot write the output (disk full, permission)."""

app = OnDemandTyper(
    name="ctxfit",
    cls=OnDemandGroup,
    help=f"Keep long LLM-agent conversations inside the model's context window.\n\n{EXIT_CODES}\n\n"
         "DESIGN §N in the help texts is section N of docs/design.md in ctxfit's repository.",
    no_args_is_help=True,
    add_completion=True,  # Typer's own --install-completion / --show-completion
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

def _print_version(asked: bool) -> None:
    if asked:
        from .. import __version__
        sys.stdout.write(f"ctxfit {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _top(
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="Print the version and exit.")] = False,
) -> None:
    """Keep long LLM-agent conversations inside the model's context window."""


# --- Options shared by every command (defined once) ------------------------------------------

Paths = Annotated[
    Optional[list[str]],
    typer.Argument(help="Transcript files or folders (searched for *.jsonl, *.json, *.traj), or - for standard "
                        "input (the default when piped). With neither: the agents' default log folders.",
                   show_default=False),
]
FitPaths = Annotated[
    Optional[list[str]],
    typer.Argument(help="Transcript files or folders (one request per conversation), or - for standard input.",
                   show_default=False),
]
Jobs = Annotated[Optional[int], typer.Option(
    "--jobs", "-j", min=1, help="Read this many files at once, each in its own process "
                                 "(default: the cores this process may use).", show_default=False)]
#: A bad file among many is a warning (exit 5) unless this is given. fit and plan have their own
#: --strict (the seed clearing rule), so there only the long name applies.
STRICT_INPUTS_HELP = "Stop at the first bad file (exit 3) instead of warning and going on (exit 5)."
Engine = Annotated[str, typer.Option(
    "--engine", metavar="local|ray",
    help="Where the files are read: local (this machine, --jobs processes) or ray (a Ray cluster: "
         "pip install 'ctxfit[fleet]'; docs/fleet.md).")]
RayAddress = Annotated[Optional[str], typer.Option(
    "--ray-address", metavar="ADDRESS", show_default=False,
    help="The Ray cluster for --engine ray: auto, HOST:6379 or ray://HOST:10001 (default: RAY_ADDRESS, "
         "else the cluster 'ray start' made here, else a local one).")]
StrictInputs = Annotated[bool, typer.Option("--strict-inputs", help=STRICT_INPUTS_HELP)]
StrictAll = Annotated[bool, typer.Option("--strict", "--strict-inputs", help=STRICT_INPUTS_HELP)]
#: Budgets and windows past this are typing slips (a quadrillion tokens); refusing them keeps
#: every size a 64-bit integer in JSON.
MAX_TOKENS = 10**15
Budget = Annotated[int, typer.Option("--budget", "-b", min=1, max=MAX_TOKENS, help="Target tokens per request.")]
Window = Annotated[Optional[int], typer.Option(
    "--window", "-w", min=1, max=MAX_TOKENS, show_default=False,
    help="The model's hard context limit in tokens (default: the window the log records or its model's, "
         "else 1,000,000).")]
FixedTokens = Annotated[str, typer.Option(
    "--fixed-tokens", metavar="N|auto|0",
    help="Tokens every request carries that the log does not hold (system prompt, tools, injected "
         "context). auto: inferred from the usage the log records; 0: none.")]
Json = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout instead of a report.")]
Format = Annotated[
    Optional[str],
    typer.Option("--format", "-f", help=f"Force the input format: {', '.join(FORMATS)} (default: detected)."),
]

Tokenizer = Annotated[
    Optional[str],
    typer.Option("--tokenizer", "-t", help="Count exactly with a real tokenizer: cl100k, o200k, tekken, qwen "
                                            "(pip install 'ctxfit[exact]')."),
]
Profile = Annotated[
    Optional[str],
    typer.Option("--profile", help="Estimate with a calibrated profile: seed (default rule), cl100k, o200k, "
                                    "tekken, qwen, safe, or a profile .json file."),
]

MaxLine = Annotated[int, typer.Option(
    "--max-line-mb", min=1, max=1 << 20,
    help="Longest line (or single JSON document) to read, in MiB; longer ones are refused, so memory stays bounded.")]


def _finite(value: float | None) -> float | None:
    """Typer's ranges let nan through (every comparison with it is false)."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number, not {value}")
    return value




def _counter(tokenizer: str | None, profile: str | None) -> Counter:
    """The counter a command estimates with: the seed rule unless told otherwise."""
    if tokenizer and profile:
        raise UsageProblem("give --tokenizer or --profile, not both")
    if tokenizer:
        from ..counters.tokenizers import get_tokenizer
        return get_tokenizer(tokenizer)
    if profile:
        from ..counters.profiles import load_profile
        return load_profile(profile)
    return SEED


def reports_errors(command: Callable) -> Callable:
    """Turn core errors into one line on stderr and their exit code; never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except BrokenPipeError:
            discard_stdout()  # the reader went away (e.g. `| head`): not an error of ours
            raise typer.Exit(0)
        except OutputFailed as error:
            discard_stdout()  # what is still buffered would fail again on exit
            _fail(str(error), error.exit_code)
        except CtxfitError as error:
            _fail(str(error), error.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except MemoryError:
            _fail("out of memory while reading the input", EXIT_BAD_INPUT)

    return wrapper


def _fail(message: str, code: int) -> None:
    sys.stderr.write(f"ctxfit: error: {message}\n")
    sys.stderr.flush()
    raise typer.Exit(code)


def _check_format(format: str | None) -> str | None:
    if format is not None and format not in FORMATS:
        raise typer.BadParameter(f"unknown format {format!r}; choose from {', '.join(FORMATS)}", param_hint="--format")
    return format


Html = Annotated[Optional[str], typer.Option(
    "--html", metavar="FILE", help="Also write a self-contained HTML report with charts to FILE (works offline).")]


def write_html(path: str, kind: str, data, **options) -> None:
    """The HTML report of `kind` ("replay", "sessions") for `data` (what --json prints), written
    atomically; a line on stderr says where."""
    from .. import __version__
    from . import html_report
    build = {"replay": html_report.replay_page, "sessions": html_report.sessions_page}[kind]
    atomic_write(path, build(data, version=__version__, **options).encode("utf-8"))
    render.stderr_console().print(render.Text(f"HTML report written to {path}"))


def report_repairs(lines: list[str]) -> None:
    """What the readers repaired, on stderr (`render.repairs`); rich loads only if there is any."""
    if lines:
        render.repairs(lines)


def write_json(document: object) -> None:
    """One JSON document on stdout, as bytes."""
    write_stdout(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")


# --- estimate ------------------------------------------------------------------------------------


@app.command(epilog=EXIT_CODES)
@reports_errors
def estimate(
    paths: Paths = None,
    budget: Budget = DEFAULT_BUDGET,
    window: Window = None,
    fixed_tokens: FixedTokens = "auto",
    top: Annotated[int, typer.Option("--top", "-n", min=0, help="Show the N largest messages.")] = 5,
    tokenizer: Tokenizer = None,
    profile: Profile = None,
    compare: Annotated[bool, typer.Option("--compare", help="Also show every built-in profile and every "
                                                           "installed tokenizer side by side.")] = False,
    json: Json = False,
    max_line_mb: MaxLine = DEFAULT_LINE_LIMIT_MB,
    format: Format = None,
    jobs: Jobs = None,
    engine: Engine = "local",
    ray_address: RayAddress = None,
    strict: StrictAll = False,
) -> None:
    """Estimate the tokens of transcripts, by writing system and by kind of content.

    \b
    To see where the tokens of a transcript go:
        ctxfit estimate session.jsonl
    To check a fitted request before sending it:
        ctxfit fit session.jsonl --budget 400000 | ctxfit estimate -
    To feed a script:
        ctxfit estimate --json *.jsonl | jq .total.tokens
    To count exactly for a model family, or see how much margin the estimate keeps:
        ctxfit estimate session.jsonl --tokenizer o200k
        ctxfit estimate session.jsonl --compare
    To survey every Claude Code and Codex log on this machine (their default folders):
        ctxfit estimate

    A log that names its model is counted with that model's profile and window, and a log
    that records usage (Claude Code, Codex, OpenHands) shows the prompt sizes it recorded and
    counts the part of the prompt it does not hold (--fixed-tokens). Other files are streamed,
    so a transcript of any size can be estimated in bounded memory.
    """
    reading.set_line_limit(max_line_mb)
    from ..core.estimate import combine
    from ..fleet.work import Job
    from . import many
    from .counting import given_counter, parse_fixed_tokens
    format = _check_format(format)
    given_counter(tokenizer, profile)  # a missing tokenizer is a usage error before any file is read
    found = many.inputs(paths, defaults=True)
    job = Job("estimate", format, budget, window, parse_fixed_tokens(fixed_tokens), tokenizer, profile,
              top=top, compare=compare, describe=found.many, line_limit_mb=max_line_mb)
    combined = many.run(found, job, jobs=jobs, engine=engine, address=ray_address, strict=strict, quiet=json)
    reports = [item["report"] for item in combined.items]
    files = [{**item["report"].to_dict(), **item["usage"], "repairs": item["repairs"]} for item in combined.items]
    report_repairs([line for item in combined.items for line in item["repairs"]])
    if compare:
        for file, item in zip(files, combined.items):
            file["compare"] = item["compare"]
    total = combine(reports)
    if json:
        write_json({"budget": budget, "window": window or DEFAULT_WINDOW, "files": files, "total": total,
                    **combined.to_dict()})
    else:
        out = render.console(StdoutText())
        for file in files:
            render.estimate_report(out, file, budget=budget, window=file["window"])
            if compare:
                render.comparison(out, file["compare"], naive=file["naive_tokens"], budget=budget)
        if len(files) > 1:
            render.estimate_report(out, total, budget=budget, window=window or DEFAULT_WINDOW)
    many.finish(combined)


# --- note ------------------------------------------------------------------------------------


@app.command(epilog=EXIT_CODES)
@reports_errors
def note(json: Json = False) -> None:
    """Print the note that tells an agent about its safety net (DESIGN §5).

    \b
    Put it in your agent's system prompt, or let `ctxfit fit --tell-agent` add it:
        ctxfit note >> system_prompt.txt
    """
    if json:
        write_json({"note": AGENT_NOTE})
    else:
        write_stdout(AGENT_NOTE.encode() + b"\n")


# --- fit and plan ---------------------------------------------------------------------------

Lowwater = Annotated[
    Optional[float],
    typer.Option("--lowwater", min=0.01, max=1.0, callback=_finite,
                 help="Once clearing is needed, clear whole batches until the request is at most this "
                      "share of the budget, so the next requests need no clearing and reuse the cache "
                      "(chosen by replays: docs/replay.md)."),
]
Strict = Annotated[
    bool, typer.Option("--strict", help="DESIGN §4's seed rule: clear only until the request is under the "
                                        "budget (more cache rebuilds; `replay -p ctxfit-strict`).")]
BatchSize = Annotated[int, typer.Option("--batch-size", min=1, help="Tool results cleared per batch.")]
ProtectShare = Annotated[
    float, typer.Option("--protect-share", min=0.0, max=1.0, callback=_finite,
                        help="Share of the budget kept for the newest tool results, never cleared.")]
MinClear = Annotated[
    int, typer.Option("--min-clear-tokens", min=0,
                      help="Results this small are never cleared (it would save nothing).")]
TellAgent = Annotated[bool, typer.Option("--tell-agent", help="Add the agent note (ctxfit note) to the system prompt.")]


def _options(budget: int, window: int | None, lowwater: float | None, batch_size: int,
             protect_share: float, min_clear_tokens: int, counter: Counter = SEED, *,
             strict: bool = False) -> FitOptions:
    """Fitting options from the command line; a window not given is chosen per log later
    (`counting.fit_options`)."""
    from ..core.options import FitOptions
    if window is not None and window < budget:
        raise UsageProblem(f"--window ({window:,}) is smaller than --budget ({budget:,})")
    if strict:
        if lowwater != DEFAULTS.lowwater:
            raise UsageProblem("--strict clears only until under the budget: leave out --lowwater")
        lowwater = None
    return FitOptions(budget=budget, window=window or max(DEFAULT_WINDOW, budget), lowwater=lowwater,
                      batch_size=batch_size, protect_share=protect_share,
                      min_clear_tokens=min_clear_tokens, counter=counter)


class _Auto(NamedTuple):
    """What the user left to ctxfit: None for the counter, window or fixed part it chooses."""

    counter: Counter | None
    window: int | None
    fixed_tokens: int | None


def _auto(tokenizer: str | None, profile: str | None, window: int | None, fixed_tokens: str) -> _Auto:
    from .counting import given_counter, parse_fixed_tokens
    return _Auto(given_counter(tokenizer, profile), window, parse_fixed_tokens(fixed_tokens))


def _chosen(transcript: Transcript, options: FitOptions, auto: _Auto):
    """The transcript (with its unlogged part counted), its fitting options and the choice."""
    from .counting import apply, choose, fit_options
    choice = choose(transcript, counter=auto.counter, window=auto.window, fixed_tokens=auto.fixed_tokens)
    return apply(transcript, choice), fit_options(options, choice), choice


def _fit_all(paths: list[str] | None, format: str | None, options: FitOptions, tell_agent: bool,
             auto: _Auto, strict_inputs: bool) -> tuple[list[tuple[Transcript, Fitted, dict]], "Combined", list[str]]:
    """Every conversation of every input, fitted, and the inputs read; one bad file among many
    is set aside (cli/many.py) and reported by `many.finish`."""
    from ..errors import NoConversation
    from ..fleet.combine import Combined
    from . import many
    found = many.inputs(paths, defaults=False)
    fitted, problems = [], Combined(files=len(found.files))
    for source in found.files:
        try:
            fitted.extend(_fit_each(source, format, options, tell_agent, auto))
        except CannotFit:
            raise
        except NoConversation as error:
            if not found.many:
                raise
            problems.skipped.append((source, f"no conversation in it ({error.problem})"))
        except BadInput as error:  # anything else (an invalid request produced, ...) is not the file's
            if strict_inputs or not found.many:
                raise
            problems.errors.append((source, str(error)))
    if not fitted and not problems.errors:
        raise BadInput(found.files[0], None, f"no conversation in any of the {len(found.files)} inputs")
    return fitted, problems, found.files


def _current_conversations(source: str, format: str | None, counter: Counter) -> list["Transcript | parallel.Outline"]:
    """The transcripts to fit. A big JSON Lines chat file is read on every core, in outline
    (`fit_outline`). A Claude Code log that was compacted holds one conversation per
    compaction; only the last is still sent, so only it is fitted."""
    kept, compacted = [], 0
    for transcript in transcripts(source, format):
        if parallel.worth_it(source, transcript.format, counter):
            return [parallel.read_outline(source, transcript.path, transcript.format, transcript.dialect)]
        transcript = transcript.materialize()  # before the input moves on
        if transcript.format in ("claude-code", "codex") and kept:
            kept, compacted = [], compacted + 1
        kept.append(transcript)
    if compacted:
        render.stderr_console().print(render.Text(
            f"{kept[0].path} was compacted {compacted} time{'s' if compacted > 1 else ''}: using the "
            f"conversation since the last compaction (line {kept[0].line})"))
    return kept


def _fit_each(source: str, format: str | None, options: FitOptions, tell_agent: bool,
              auto: _Auto) -> Iterator[tuple[Transcript, "payload.Fitted", dict]]:
    """Each conversation of `source` that is still sent, with its fitted request and what was
    chosen for it (counter, window, unlogged fixed part: `counting.Choice.to_dict`)."""
    for conversation in _current_conversations(source, format, auto.counter or SEED):
        if isinstance(conversation, parallel.Outline):
            chosen = {"counter": options.counter.name, "counter_reason": "given" if auto.counter else
                      "seed rule: the input names no model", "window": options.window,
                      "window_source": "given (--window)" if auto.window else "default",
                      "unlogged": {"tokens": 0, "source": "none"}}
            yield conversation.transcript, payload.fit_outline(conversation, options, tell_agent=tell_agent), chosen
        else:
            conversation, own, choice = _chosen(conversation, options, auto)
            yield conversation, payload.fit_transcript(conversation, own, tell_agent=tell_agent), choice.to_dict()


def _cannot_fit(name: str, plan) -> CannotFit:
    return CannotFit(
        f"{name}: {TOO_LONG} (the smallest request — system prompt, first message and newest "
        f"round — is {plan.tokens_after:,} tokens; the model's window is {plan.window:,})",
        smallest=plan.tokens_after, window=plan.window)


@app.command(epilog=EXIT_CODES)
@reports_errors
def fit(
    paths: FitPaths = None,
    budget: Budget = DEFAULT_BUDGET,
    window: Window = None,
    fixed_tokens: FixedTokens = "auto",
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="Write the payload to FILE (atomically) instead of stdout.")] = None,
    report: Annotated[Optional[str], typer.Option("--report", help="Write the fitting report to FILE as JSON.")] = None,
    tell_agent: TellAgent = False,
    set_fields: Annotated[Optional[list[str]], typer.Option(
        "--set", metavar="FIELD=VALUE",
        help="Set a top-level field of the payload, e.g. --set model=claude-sonnet-4-5 --set max_tokens=8192. "
             "VALUE is read as JSON when it parses (numbers, true/false, null, objects), else as text.")] = None,
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
    options = _options(budget, window, lowwater, batch_size, protect_share, min_clear_tokens,
                       auto.counter or SEED, strict=strict)
    fields = _parse_fields(set_fields or [])
    from . import many
    if output or report:  # before anything is read, then again with the files found in folders
        check_outputs({"--output": output, "--report": report}, paths or ["-"])
    conversations, problems, sources = _fit_all(paths, format, options, tell_agent, auto, strict_inputs)
    check_outputs({"--output": output, "--report": report}, sources)
    outputs, reports = [], []
    for transcript, fitted, chosen in conversations:
        if fitted.plan.cannot_fit:
            raise _cannot_fit(transcript.path, fitted.plan)
        outputs.append(payload.with_fields(fitted.payload, transcript.extra, fields) if fields else fitted.payload)
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
        atomic_write(report, orjson.dumps(reports[0] if len(reports) == 1 else reports, option=orjson.OPT_INDENT_2) + b"\n")
    err = render.stderr_console()  # after writing: a failure leaves only its own line
    for entry in reports:
        render.repairs(entry["repairs"])
        render.fit_summary(err, entry)
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


def _fit_report(transcript, fitted, chosen: dict) -> dict:
    from ..core.estimate import by_script
    plan = fitted.plan.to_dict()
    plan["tokens_sent"] = fitted.tokens
    return {"path": transcript.path, "format": transcript.format, "dialect": transcript.dialect,
            "messages_sent": len(fitted.messages), "repairs": list(transcript.repairs), **plan,
            **{k: v for k, v in chosen.items() if k != "window"},
            # The seed rule's per-script view of what is sent, whichever counter fitted it.
            "by_script": by_script(chain(transcript.fixed, fitted.messages))}


@app.command(name="plan", epilog=EXIT_CODES)
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
    options = _options(budget, window, lowwater, batch_size, protect_share, min_clear_tokens,
                       auto.counter or SEED, strict=strict)
    from . import many
    conversations, problems, _ = _fit_all(paths, format, options, tell_agent, auto, strict_inputs)
    entries = [_fit_report(transcript, fitted, chosen) for transcript, fitted, chosen in conversations]
    if json:
        write_json(entries)  # always a list: one plan per conversation, however many there are
    else:
        out = render.console(StdoutText())
        for entry in entries:
            render.plan_report(out, entry)
    for entry in entries:
        report_repairs(entry["repairs"])
    if any(e["cannot_fit"] for e in entries):
        raise typer.Exit(CannotFit.exit_code)
    many.finish(problems, reported=bool(entries))


# --- replay -----------------------------------------------------------------------------------


@app.command(name="replay", epilog=EXIT_CODES)
@reports_errors
def replay_command(
    paths: Paths = None,
    budget: Budget = DEFAULT_BUDGET,
    window: Window = None,
    fixed_tokens: FixedTokens = "auto",
    policy: Annotated[Optional[list[str]], typer.Option(
        "--policy", "-p", help=f"Policy to simulate; repeat to compare (default: all). One of: {', '.join(_policies())}.")] = None,
    steps: Annotated[bool, typer.Option("--steps", help="With --json, one row per model call.")] = False,
    chart: Annotated[Optional[bool], typer.Option("--chart/--no-chart", help="Draw request sizes per call (default: for one file).")] = None,
    min_cacheable: Annotated[int, typer.Option("--min-cacheable", min=0, help="A shared prefix shorter than this is not cached.")] = 1024,
    lowwater: Lowwater = DEFAULTS.lowwater,
    price_write: Annotated[float, typer.Option("--price-write", min=0.0, callback=_finite, help="Cache-write price per token (uncached input = 1).")] = 1.25,
    price_read: Annotated[float, typer.Option("--price-read", min=0.0, callback=_finite, help="Cache-read price per token (uncached input = 1).")] = 0.1,
    html: Html = None,
    tokenizer: Tokenizer = None,
    profile: Profile = None,
    json: Json = False,
    max_line_mb: MaxLine = DEFAULT_LINE_LIMIT_MB,
    format: Format = None,
    jobs: Jobs = None,
    engine: Engine = "local",
    ray_address: RayAddress = None,
    strict: StrictAll = False,
) -> None:
    """Replay recorded transcripts request by request and compare context policies.

    \b
    The request before model call k is everything the agent had before its k-th assistant
    message. For each policy: calls, rejected calls (over --window), largest request, total
    input, the share read from the prompt cache, cache breaks and the relative cost.
    \b
    To compare every policy on a log:
        ctxfit replay session.jsonl --budget 400000 --window 1000000
    To compare two policies over many logs, as JSON:
        ctxfit replay logs/*.jsonl -p ctxfit -p turns --json | jq .policies
    To try another low-water mark against the strict seed rule:
        ctxfit replay session.jsonl --lowwater 0.7 -p ctxfit -p ctxfit-strict
    To see it as charts in a browser (one self-contained page, works offline):
        ctxfit replay logs/*.jsonl --html report.html
    """
    reading.set_line_limit(max_line_mb)
    from ..replay.policies import DEFAULT_POLICIES, POLICIES
    from ..replay.simulation import PolicyReplay, Prices
    format = _check_format(format)
    names = policy or list(DEFAULT_POLICIES)
    for name in names:
        if name not in POLICIES:
            raise typer.BadParameter(f"unknown policy {name!r}; choose from {', '.join(POLICIES)}", param_hint="--policy")
    auto = _auto(tokenizer, profile, window, fixed_tokens)
    _options(budget, window, lowwater, DEFAULTS.batch_size, DEFAULTS.protect_share,
             DEFAULTS.min_clear_tokens, auto.counter or SEED)  # checks them before any file is read
    from ..fleet.work import Job
    from . import many
    prices = Prices(cache_write=price_write, cache_read=price_read)
    found = many.inputs(paths, defaults=True)
    if html:
        check_outputs({"--html": html}, found.files)
    job = Job("replay", format, budget, window, auto.fixed_tokens, tokenizer, profile, lowwater=lowwater,
              policies=tuple(names), prices=prices, min_cacheable=min_cacheable, describe=found.many,
              line_limit_mb=max_line_mb)
    combined = many.run(found, job, jobs=jobs, engine=engine, address=ray_address, strict=strict, quiet=json)
    files = combined.items
    report_repairs([line for file in files for line in file["repairs"]])
    totals = {name: PolicyReplay(name) for name in names}
    for file in files:
        for name, result in file["results"].items():
            totals[name].merge(result)

    def document(steps: bool) -> dict:
        return {
            "budget": budget, "window": window or DEFAULT_WINDOW,
            "files": [{"path": f["name"], "format": f["format"], **f["choice"], "repairs": f["repairs"],
                       "by_script": f["by_script"],
                       "policies": {n: _replay_dict(f["recorded"], r, prices, steps) for n, r in f["results"].items()}}
                      for f in files],
            "policies": {n: r.to_dict(prices) for n, r in totals.items()},
            **combined.to_dict(),
        }

    if html:
        write_html(html, "replay", document(steps=True))
    if json:
        write_json(document(steps))
        many.finish(combined)
        return
    out = render.console(StdoutText())
    for file in files:
        render.replay_table(out, [(n, r.to_dict(prices)) for n, r in file["results"].items()],
                            title=f"  {render.escape(file['name'])} — budget {file['budget']:,}, "
                                  f"window {file['window']:,}; counter {file['choice']['counter']}")
    if len(files) > 1:
        render.replay_table(out, [(n, r.to_dict(prices)) for n, r in totals.items()],
                            title=f"  total over {len(files)} transcripts — budget {budget:,}")
    out.print(render.REPLAY_LEGEND)
    if chart if chart is not None else len(files) == 1:
        for file in files:
            for name, result in file["results"].items():
                render.size_chart(out, f"{file['name']} · {name}", [s.tokens for s in result.steps],
                                  budget=file["budget"], window=file["window"])
    many.finish(combined)


def _policies() -> list[str]:
    """The replay policies' names, for `replay --help` (evaluated when Typer builds that command)."""
    from ..replay.policies import POLICIES
    return list(POLICIES)


def _replay_dict(recorded: dict | None, result: PolicyReplay, prices: Prices, steps: bool) -> dict:
    """A policy's replay; with steps, each step also carries the prompt size the log recorded
    for that call (`recorded`, null where it recorded none)."""
    document = result.to_dict(prices, steps=steps)
    if steps and recorded is not None:
        for step in document["steps"]:
            step["recorded"] = recorded.get(step["call"])
    return document


# --- calibrate ----------------------------------------------------------------------------------


@app.command(epilog=EXIT_CODES)
@reports_errors
def calibrate(
    texts: Annotated[list[str], typer.Argument(help="Sample text files (UTF-8), one per language or kind of "
                                                     "content; with --from-usage, agent logs that record usage.")],
    tokenizer: Annotated[Optional[str], typer.Option("--tokenizer", "-t", help="The tokenizer to fit against: cl100k, o200k, tekken, qwen.")] = None,
    from_usage: Annotated[bool, typer.Option("--from-usage", help="Fit to the prompt growth the logs recorded "
                                                                  "between consecutive model calls (no tokenizer needed).")] = False,
    base: Annotated[str, typer.Option("--base", help="With --from-usage: profile whose rates the classes too rare "
                                                     "in the logs keep.")] = "safe",
    name: Annotated[str, typer.Option("--name", help="Name of the new profile.")] = "custom",
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="Write the profile to FILE instead of stdout.")] = None,
    json: Json = False,
) -> None:
    """Fit a profile: characters per token for each character class, erring high.

    \b
    To make a profile for your own text and model family, then use it:
        ctxfit calibrate --tokenizer o200k docs/*.txt logs/tool_output.txt -o mine.json
        ctxfit estimate session.jsonl --profile mine.json
    To fit one to what your model really counted, from your own agent logs:
        ctxfit calibrate --from-usage ~/.claude/projects/*/*.jsonl --name mine -o mine.json

    The profile is a small JSON file. A summary of how it does goes to stderr (with
    --from-usage: the calls used and the error on call pairs held out of the fit); with --json,
    stdout carries {"profile": ..., "evaluation": ...} instead.
    """
    if from_usage:
        if tokenizer:
            raise UsageProblem("--from-usage fits to what the logs recorded: leave out --tokenizer")
        _calibrate_from_usage(texts, base, name, output, json)
        return
    if not tokenizer:
        raise UsageProblem("give --tokenizer to fit against, or --from-usage with agent logs")
    from ..counters.calibrate import calibrate as fit_profile
    from ..counters.calibrate import evaluate
    from ..counters.profiles import ProfileCounter
    from ..counters.tokenizers import get_tokenizer
    check_outputs({"--output": output}, texts)
    exact = get_tokenizer(tokenizer)
    samples = [_read_text(path) for path in texts]
    try:
        profile = fit_profile(samples, exact, name=name)
    except ValueError as error:  # no paragraph long enough to measure
        raise BadInput(", ".join(texts), None, f"{error} (paragraphs are separated by blank lines); "
                       "give longer sample text") from None
    check = evaluate(samples, exact, ProfileCounter(profile, source=name))
    render.calibration_summary(render.stderr_console(), name, exact.name, check)
    document = {"profile": profile, "evaluation": check} if json else profile
    data = orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
    if output:
        atomic_write(output, data)
    else:
        write_stdout(data)


def _calibrate_from_usage(logs: list[str], base: str, name: str, output: str | None, json: bool) -> None:
    from ..core.usage import fit_from_usage
    from ..counters.profiles import load_profile
    check_outputs({"--output": output}, logs)
    base_profile = load_profile(base)
    conversations = [t.materialize() for path in logs for t in transcripts(path, None)]
    try:
        profile, evaluation = fit_from_usage(conversations, name=name, base=base_profile)
    except ValueError as error:
        raise BadInput(", ".join(logs), None, f"{error}: give logs that record usage (Claude Code, "
                       "Codex, OpenHands)") from None
    render.usage_calibration_summary(render.stderr_console(), name, evaluation)
    document = {"profile": profile, "evaluation": evaluation} if json else profile
    data = orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
    if output:
        atomic_write(output, data)
    else:
        write_stdout(data)


def _read_text(path: str) -> str:
    from ..formats.reading import open_input
    with open_input(path, sys.stdin.buffer if path == "-" and sys.stdin else None) as stream:
        data = stream.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise BadInput(path, data.count(b"\n", 0, error.start) + 1, f"invalid UTF-8 at byte {error.start + 1}") from None


# --- proxy (its own module; its HTTP stack is imported only when it runs) -----------------------

from .proxy import proxy as _proxy  # noqa: E402  (light: typer and the core only)

app.command(name="proxy", epilog=EXIT_CODES)(reports_errors(_proxy))


def main() -> None:
    """Console-script entry point."""
    # ctxfit builds millions of small objects (messages, parts, costs) and no reference cycles
    # at scale, so the cyclic collector only rescans them: on a 300 MB transcript it was 43% of
    # `fit`. Reference counting still frees everything; the process is short-lived. (The
    # library leaves `gc` alone.)
    gc.disable()
    try:
        app()
    except KeyboardInterrupt:
        _exit_quietly("interrupted", 130)
    except BaseException as error:  # not only Exception: a Rust extension's panic is a BaseException
        if isinstance(error, SystemExit) or os.environ.get("CTXFIT_TRACEBACK"):
            raise
        # A bug of ours: one line that says how to report it, not a traceback (set
        # CTXFIT_TRACEBACK=1 to see one).
        _exit_quietly(f"internal error ({type(error).__name__}: {error}); please report it with "
                      "the command and input that caused it (CTXFIT_TRACEBACK=1 shows where)", EXIT_INTERNAL)


def _exit_quietly(message: str, code: int) -> None:
    discard_stdout()  # no partial product, and no second error when Python flushes it
    try:
        sys.stderr.write(f"ctxfit: error: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    sys.exit(code)


from . import sessions_command  # noqa: E402,F401  (registers `ctxfit sessions`; its work is imported when it runs)
