"""The command line: arguments, streams and exit codes. All the work happens in the core.

stdout carries only the product (a report, a payload, or JSON); messages to the person go to
stderr. Errors from the core become one line on stderr and the exit code of their class.
"""

from __future__ import annotations

import functools
import sys
from typing import Annotated, Callable, Optional

import orjson
import typer

from . import render
from .errors import EXIT_BAD_INPUT, CtxfitError
from .estimate import TranscriptEstimate, combine
from .formats import FORMATS
from .inputs import resolve_paths, transcripts
from .notes import AGENT_NOTE

EXIT_CODES = """\b
Exit codes: 0 success · 2 usage error · 3 bad input (file, line and problem on stderr) ·
4 cannot fit (even the smallest request is larger than the model's window)."""

app = typer.Typer(
    name="ctxfit",
    help=f"Keep long LLM-agent conversations inside the model's context window.\n\n{EXIT_CODES}",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# --- Options shared by every command (defined once) ------------------------------------------

Paths = Annotated[
    Optional[list[str]],
    typer.Argument(help="Transcript files, or - for standard input (the default when piped).", show_default=False),
]
Budget = Annotated[int, typer.Option("--budget", "-b", min=1, help="Target tokens per request.")]
Window = Annotated[int, typer.Option("--window", "-w", min=1, help="The model's hard context limit in tokens.")]
Json = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout instead of a report.")]
Format = Annotated[
    Optional[str],
    typer.Option("--format", "-f", help=f"Force the input format: {', '.join(FORMATS)} (default: detected)."),
]

DEFAULT_BUDGET = 400_000
DEFAULT_WINDOW = 1_000_000


def reports_errors(command: Callable) -> Callable:
    """Turn core errors into one line on stderr and their exit code; never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except CtxfitError as error:
            _fail(str(error), error.exit_code)
        except BrokenPipeError:
            sys.stderr.close()  # the reader went away (e.g. `| head`): not an error of ours
            raise typer.Exit(0)
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


def write_json(document: object) -> None:
    """One JSON document on stdout, as bytes."""
    sys.stdout.buffer.write(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.buffer.flush()


# --- estimate ------------------------------------------------------------------------------------


@app.command(epilog=EXIT_CODES)
@reports_errors
def estimate(
    paths: Paths = None,
    budget: Budget = DEFAULT_BUDGET,
    window: Window = DEFAULT_WINDOW,
    top: Annotated[int, typer.Option("--top", "-n", min=0, help="Show the N largest messages.")] = 5,
    json: Json = False,
    format: Format = None,
) -> None:
    """Estimate the tokens of transcripts, by writing system and by kind of content.

    \b
    To see where the tokens of a transcript go:
        ctxfit estimate session.jsonl
    To check a fitted request before sending it:
        ctxfit fit session.jsonl --budget 400000 | ctxfit estimate -
    To feed a script:
        ctxfit estimate --json *.jsonl | jq .total.tokens

    Files are streamed, so a transcript of any size can be estimated in bounded memory.
    """
    format = _check_format(format)
    reports = []
    for path in resolve_paths(paths):
        for transcript in transcripts(path, format):
            name = transcript.path if transcript.line == 1 else f"{transcript.path}:{transcript.line}"
            report = TranscriptEstimate(name, transcript.format, top_n=top)
            for message in (*transcript.system, *( (transcript.tools,) if transcript.tools else ()), *transcript.messages):
                report.add(message)
            reports.append(report)
    files = [r.to_dict() for r in reports]
    total = combine(reports)
    if json:
        write_json({"budget": budget, "window": window, "files": files, "total": total})
        return
    out = render.console(sys.stdout)
    for file in files:
        render.estimate_report(out, file, budget=budget, window=window)
    if len(files) > 1:
        render.estimate_report(out, total, budget=budget, window=window)


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
        sys.stdout.write(AGENT_NOTE + "\n")


def main() -> None:
    """Console-script entry point."""
    app()
