"""`ctxfit calibrate`: a profile fitted to a tokenizer on sample text, or to the usage logs recorded."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ...errors import BadInput, UsageProblem
from ..error_reporting import reports_errors
from ..inputs import transcripts
from ..lazy import orjson, render
from ..options import Json
from ..outputs import atomic_write, check_outputs, write_stdout


@reports_errors
def calibrate(
    texts: Annotated[
        list[str],
        typer.Argument(
            help="Sample text files (UTF-8), one per language or kind of "
            "content; with --from-usage, agent logs that record usage."
        ),
    ],
    tokenizer: Annotated[
        Optional[str],
        typer.Option("--tokenizer", "-t", help="The tokenizer to fit against: cl100k, o200k, tekken, qwen."),
    ] = None,
    from_usage: Annotated[
        bool,
        typer.Option(
            "--from-usage",
            help="Fit to the prompt growth the logs recorded between consecutive model calls (no tokenizer needed).",
        ),
    ] = False,
    base: Annotated[
        str,
        typer.Option("--base", help="With --from-usage: profile whose rates the classes too rare in the logs keep."),
    ] = "safe",
    name: Annotated[str, typer.Option("--name", help="Name of the new profile.")] = "custom",
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", help="Write the profile to FILE instead of stdout.")
    ] = None,
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
    from ...counters.calibrate import calibrate as fit_profile
    from ...counters.calibrate import evaluate
    from ...counters.profiles import ProfileCounter
    from ...counters.tokenizers import get_tokenizer

    check_outputs({"--output": output}, texts)
    exact = get_tokenizer(tokenizer)
    samples = [_read_text(path) for path in texts]
    try:
        profile = fit_profile(samples, exact, name=name)
    except ValueError as error:  # no paragraph long enough to measure
        raise BadInput(
            ", ".join(texts), None, f"{error} (paragraphs are separated by blank lines); give longer sample text"
        ) from None
    check = evaluate(samples, exact, ProfileCounter(profile, source=name))
    render.calibration_summary(render.stderr_console(), name, exact.name, check)
    _write_profile(profile, check, output, json)


def _calibrate_from_usage(logs: list[str], base: str, name: str, output: str | None, json: bool) -> None:
    from ...core.usage import fit_from_usage
    from ...counters.profiles import load_profile

    check_outputs({"--output": output}, logs)
    base_profile = load_profile(base)
    conversations = [t.materialize() for path in logs for t in transcripts(path, None)]
    try:
        profile, evaluation = fit_from_usage(conversations, name=name, base=base_profile)
    except ValueError as error:
        raise BadInput(
            ", ".join(logs), None, f"{error}: give logs that record usage (Claude Code, Codex, OpenHands)"
        ) from None
    render.usage_calibration_summary(render.stderr_console(), name, evaluation)
    _write_profile(profile, evaluation, output, json)


def _write_profile(profile: dict, evaluation: dict, output: str | None, json: bool) -> None:
    """The profile (with --json, beside how it does) to --output, or to stdout."""
    document = {"profile": profile, "evaluation": evaluation} if json else profile
    data = orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
    if output:
        atomic_write(output, data)
    else:
        write_stdout(data)


def _read_text(path: str) -> str:
    from ...formats.reading import open_input

    with open_input(path, sys.stdin.buffer if path == "-" and sys.stdin else None) as stream:
        data = stream.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise BadInput(
            path, data.count(b"\n", 0, error.start) + 1, f"invalid UTF-8 at byte {error.start + 1}"
        ) from None
