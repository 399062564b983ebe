"""Many inputs for one command: which files, running the per-file work, and what a bad file does.

- Paths may be files, directories (searched recursively for `*.jsonl`, `*.json`, `*.traj`) or
  `-`. With none, piped input is read; otherwise the commands that survey logs read the agents'
  default log folders (`fleet/discovery.py`).
- One bad file among many is a warning naming it; the others are reported and the exit code is
  5 (partial). `--strict` makes it fatal (its own exit code, 3 for bad input). A file with no
  conversation (a Claude Code log of only a `summary` record) is noted and skipped.
- A lone input keeps the plain rules: its problem is the command's error.
"""

from __future__ import annotations

import os
import stat
import sys
from contextlib import closing
from dataclasses import dataclass

import typer

from ..agents import REGISTRY
from ..errors import EXIT_BAD_INPUT, EXIT_PARTIAL, BadInput, CtxfitError, UsageProblem
from ..fleet.combine import Combined, combine
from ..fleet.discovery import LOG_SUFFIXES, default_folders, expand
from ..fleet.job import Job
from ..fleet.local import run_files
from .inputs import resolve_paths
from .lazy import LazyModule
from .progress import FileProgress

render = LazyModule("ctxfit_cli.cli.render")  # rich: only when there is something to say


@dataclass
class Inputs:
    files: list[str]
    #: More than one input was asked for (several paths, a directory, the default folders).
    many: bool


def inputs(paths: list[str] | None, *, defaults: bool) -> Inputs:
    """The files a command reads. `defaults`: with no path and nothing piped, read the agents'
    default log folders (else that is a usage error)."""
    if paths:
        files = expand(resolve_paths(paths))  # resolve_paths checks the uses of '-'

        folders = [p for p in paths if p != "-" and os.path.isdir(p)]
        if not files:
            raise BadInput(folders[0], None, f"has no transcript files ({', '.join('*' + s for s in LOG_SUFFIXES)})")
        return Inputs(files, many=len(files) > 1 or bool(folders))
    if _piped() or not defaults:
        return Inputs(resolve_paths(None), many=False)
    folders = default_folders()
    files = expand(folders)
    if not files:
        raise UsageProblem(
            "no input: give a transcript path or a folder, or pipe one in; no logs were found in "
            f"the default folders ({'; '.join(agent.where for agent in REGISTRY if agent.where)})"
        )
    return Inputs(files, many=True)


def _piped() -> bool:
    """Whether standard input carries data: a pipe or a redirected file, not a terminal and not
    /dev/null. (A stream with no file descriptor, as in tests, counts as piped.)"""
    if sys.stdin is None:
        return False
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):  # no real descriptor
        return not sys.stdin.isatty()
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode)


def run(
    found: Inputs,
    job: Job,
    *,
    jobs: int | None,
    strict: bool,
    quiet: bool,
    engine: str = "local",
    address: str | None = None,
) -> Combined:
    """Do `job` on every file and combine the results; raise what a lone input's problem is,
    or the first bad file's under --strict. `engine`: "local" (`--jobs` processes) or "ray"
    (the same per-file function on a Ray cluster at `address`)."""
    results = []
    # closing: a bad file under --strict or Ctrl-C stops the workers now, not when collected.
    with (
        FileProgress(len(found.files), enabled=not quiet) as progress,
        closing(_results(found.files, job, jobs, engine, address)) as each,
    ):
        for result in each:
            if result.fatal is not None:
                raise _Failed(*result.fatal)
            if result.error is not None and (strict or not found.many):
                raise _Failed(result.error, result.error_code)
            results.append(result)
            progress.advance()
    combined = combine(results)
    if not combined.kept:
        if not found.many and combined.skipped:
            raise _Failed(results[0].empty or combined.skipped[0][1], EXIT_BAD_INPUT)
        if not combined.errors:
            raise _Failed(f"no conversation in any of the {len(found.files)} inputs", EXIT_BAD_INPUT)
    return combined


ENGINES = ("local", "ray")


def _results(files: list[str], job: Job, jobs: int | None, engine: str, address: str | None):
    """Each file's result, in input order, from the engine asked for."""
    if engine == "ray":
        if jobs is not None:
            raise UsageProblem("--jobs is for --engine local; Ray spreads the files over the cluster's CPUs")
        from ..fleet.ray_engine import run_files as on_ray

        return on_ray(files, job, address=address)
    if engine != "local":
        raise UsageProblem(f"--engine {engine!r}: choose from {', '.join(ENGINES)}")
    if address is not None:
        raise UsageProblem("--ray-address goes with --engine ray")
    return run_files(files, job, jobs=jobs)  # (None: the cores, counted only if a file is read)


class _Failed(CtxfitError):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.exit_code = code


def finish(combined: Combined, *, reported: bool | None = None, quiet: bool = False, verbose: bool = False) -> None:
    """Warn about every bad file and note what was skipped (stderr; repeated notes summarised
    unless `verbose`, nothing at all if `quiet`), then exit 5 if any input was bad, or 3 if
    nothing could be reported. `reported`: whether anything was (default: whether any session
    was kept)."""
    reported = bool(combined.kept) if reported is None else reported
    if not (combined.skipped or combined.errors):
        return
    code = EXIT_PARTIAL if reported else EXIT_BAD_INPUT
    if not quiet:
        err = render.stderr_console()
        for line in summarised_notes(combined.skipped, verbose=verbose):
            err.print(render.Text(line))
        for _, error in combined.errors:
            err.print(render.Text(f"ctxfit: warning: {render.one_line(error)} (skipped)"))
        if combined.errors:
            read = combined.files - len(combined.errors)
            outcome = (
                f"the report covers the other {read} (exit code {code}: partial; --strict stops at the first)"
                if reported
                else f"nothing to report (exit code {code}: bad input)"
            )
            err.print(
                render.Text(f"ctxfit: {len(combined.errors)} of {combined.files} inputs could not be read; {outcome}")
            )
    if combined.errors:
        raise typer.Exit(code)


#: Notes of one kind past this many are one line saying how many (`--verbose` lists them all).
NOTES_LISTED = 3
#: (what a skipped file's reason starts with, what the summary calls such files)
NOTE_KINDS = (
    ("the same session as ", "duplicate logs"),
    ("its replies are the start of ", "duplicate logs"),
    ("no conversation in it", "files with no conversation"),
)


def summarised_notes(skipped: list[tuple[str, str]], *, verbose: bool) -> list[str]:
    """The `note:` lines for the skipped files: each one, or, past `NOTES_LISTED` of a kind,
    one line for the kind ("20 duplicate logs skipped; --verbose lists them")."""
    kinds: dict[str, list[str]] = {}
    for path, reason in skipped:
        kind = next((name for start, name in NOTE_KINDS if reason.startswith(start)), reason)
        kinds.setdefault(kind, []).append(f"ctxfit: note: {render.one_line(path)}: skipped: {render.one_line(reason)}")
    lines = []
    for kind, notes in kinds.items():
        if verbose or len(notes) <= NOTES_LISTED:
            lines += notes
        else:
            lines.append(f"ctxfit: note: {len(notes)} {kind} skipped; --verbose lists them")
    return lines
