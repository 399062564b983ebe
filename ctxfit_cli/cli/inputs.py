"""Opening the inputs a command names: paths, or `-` for standard input."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import closing
from typing import TYPE_CHECKING

from ..errors import UsageProblem

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.skipped import Skipped


def resolve_paths(paths: list[str] | None) -> list[str]:
    """The inputs to read: the given paths, or `-` when data is piped in and none is given."""
    if paths:
        if paths.count("-") > 1:
            raise UsageProblem("standard input (-) can be read only once")
        if "-" in paths and sys.stdin is None:
            raise UsageProblem("'-' reads standard input, but it is closed: pipe a transcript in")
        if "-" in paths and sys.stdin.isatty():
            raise UsageProblem("'-' reads standard input, but it is a terminal: pipe a transcript in")
        return paths
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageProblem("no input: give a transcript path, or pipe one in and use '-'")
    return ["-"]


def transcripts(path: str, format: str | None, skipped: Skipped | None = None) -> Iterator[Transcript]:
    """The transcripts in one input, streamed; the file is closed when iteration ends. `skipped`
    counts what the input holds that its reader does not know (`formats.skipped`)."""
    from ..formats import read_transcripts  # the readers load when a command reads
    from ..formats.reading import open_input

    stream = open_input(path, sys.stdin.buffer if path == "-" else None)
    name = "<stdin>" if path == "-" else path
    if path == "-":
        yield from read_transcripts(name, stream, format, skipped=skipped)
        return
    with closing(stream):
        yield from read_transcripts(name, stream, format, skipped=skipped)
