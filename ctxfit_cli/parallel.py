"""Estimating one big JSON Lines file on several cores.

A chat transcript in JSON Lines (OpenAI or Anthropic messages, one per line) is a list of
independent lines, so a big file can be cut at line boundaries and each piece estimated by its
own process; the totals merge exactly, message numbers and error line numbers included. Claude
Code and Codex logs merge neighbouring records, and standard input cannot be cut, so those are
always read in one process.

"""

from __future__ import annotations

import os

from .counting import SEED, Counter
from .errors import BadInput
from .estimate import TranscriptEstimate
from .formats import NO_MESSAGES, PARSERS
from .formats.common import Where
from .reading import BUFFER, numbered_lines, parse_line

#: Files smaller than this are read in one process: starting workers costs more than it saves.
MIN_BYTES = 64 << 20
PARALLEL_DIALECTS = ("openai", "anthropic")


def worth_it(path: str, format: str, counter: Counter) -> bool:
    """Whether `estimate_in_parallel` applies: a big regular file of a line-independent format,
    estimated with the seed rule, on a machine with more than one core."""
    return (format in PARALLEL_DIALECTS and counter is SEED and (os.cpu_count() or 1) > 1
            and path != "-" and os.path.isfile(path) and os.path.getsize(path) >= MIN_BYTES)


def pieces(path: str, size: int, workers: int) -> list[tuple[int, int]]:
    """Byte ranges that cut a file of `size` bytes into about `workers` pieces at line starts."""
    cuts = [0]
    with open(path, "rb") as file:
        for k in range(1, workers):
            file.seek(max(size * k // workers, cuts[-1]))
            file.readline()  # on to the start of the next line
            cuts.append(min(file.tell(), size))
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a] or [(0, size)]


def estimate_in_parallel(path: str, name: str, dialect: str, *, top_n: int,
                         workers: int | None = None) -> TranscriptEstimate:
    """The estimate of a JSON Lines chat transcript, read by several processes.

    Gives exactly what reading it in one process gives (tests hold it to that).
    """
    workers = workers or min(os.cpu_count() or 1, 8)
    # Twice as many pieces as workers: one that finishes early takes another piece.
    jobs = [(path, name, dialect, top_n, start, end)
            for start, end in pieces(path, os.path.getsize(path), 2 * workers)]
    # Imported here: they cost every command ~30 ms at start-up and only big files need them.
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as pool:
        results = list(pool.map(_estimate_piece, jobs))
    total, lines_before = None, 0
    for estimate, lines, error in results:
        if error is not None:  # the first error in file order is the one reported
            line, problem = error
            raise BadInput(name, line + lines_before if line else None, problem)
        if total is None:
            total = estimate
        else:
            total.merge(estimate)
        lines_before += lines
    if total is None or total.messages == 0:
        raise BadInput(name, None, NO_MESSAGES)
    return total


def _estimate_piece(job: tuple) -> tuple[TranscriptEstimate | None, int, tuple[int, str] | None]:
    """One piece: (its estimate, how many lines it has, (line, problem) of its first error)."""
    path, name, dialect, top_n, start, end = job
    parse = PARSERS[dialect]
    estimate = TranscriptEstimate(name, dialect, top_n=top_n)
    with open(path, "rb", buffering=BUFFER) as file:
        file.seek(start)
        piece = _Piece(file, end)
        try:
            for number, line in numbered_lines(name, piece, at_start=start == 0):
                estimate.add(parse(parse_line(name, number, line), line, Where(name, number)))
        except BadInput as error:
            return None, 0, (error.line or 0, error.problem)
    return estimate, piece.lines, None


class _Piece:
    """The lines of a file from where it is up to byte `end` (a line start), counted.

    Streamed, like every read of a transcript: memory stays the same whatever the file size."""

    def __init__(self, file, end: int) -> None:
        self.file, self.end, self.lines = file, end, 0

    def __iter__(self):
        position = self.file.tell()
        for line in self.file:
            if position >= self.end:
                return
            position += len(line)
            self.lines += 1
            yield line
