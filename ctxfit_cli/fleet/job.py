"""What `--jobs` and the engines send to do the work for one file (`Job`), and what every
command's work on one transcript of it shares: the counter the job names, the counter and
window chosen for a transcript, its fitting options, its name in reports."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from ..core.options import DEFAULT_LOWWATER, FitOptions
from ..input_formats import DEFAULT_LINE_LIMIT_MB
from ..replay.prices import Prices

if TYPE_CHECKING:  # (a Job is made without the readers: a warm `sessions` loads none)
    from ..core import choice
    from ..core.model import Transcript
    from ..counters.seed import Counter


class Job(NamedTuple):
    """What to do with each file: plain, picklable settings (no open files, no counters)."""

    command: str
    format: str | None = None
    budget: int = 400_000
    #: The window given (--window), or None: each log's model's (`core/choice.py`).
    window: int | None = None
    #: The unlogged fixed part given (--fixed-tokens N), or None: inferred from recorded usage.
    fixed_tokens: int | None = None
    tokenizer: str | None = None
    profile: str | None = None
    lowwater: float | None = DEFAULT_LOWWATER
    top: int = 5
    compare: bool = False
    #: The policies `replay` compares, by name; None: `replay.policies.DEFAULT_POLICIES`.
    policies: tuple[str, ...] | None = None
    prices: Prices = Prices()
    min_cacheable: int = 1024
    #: Read one big file on every core (off when files are already spread over processes).
    split_big_files: bool = True
    #: Read each session's id, dates and models (to count a copied session once, and for `sessions`).
    describe: bool = True
    #: The longest line read, in MiB (`--max-line-mb`; set in the process that does the work).
    line_limit_mb: int = DEFAULT_LINE_LIMIT_MB
    #: Inputs with a scheme (`s3://…`) are URIs, streamed with fsspec (`--engine ray`: uri_input.py).
    uris: bool = False
    #: Keep and use what was computed for each file in the user's cache folder (`summary_cache.py`).
    cache: bool = False


@functools.cache
def given_counter(tokenizer: str | None, profile: str | None) -> Counter | None:
    """The counter the job names (built once per process), or None: chosen per log by its model."""
    from ..core import choice

    return choice.given_counter(tokenizer, profile)


def choose(transcript: Transcript, job: Job, given: Counter | None) -> tuple[Transcript, choice.Choice]:
    """The transcript with its unlogged part counted, and the counter and window chosen for it."""
    from ..core import choice

    chosen = choice.choose(transcript, counter=given, window=job.window, fixed_tokens=job.fixed_tokens)
    return choice.apply(transcript, chosen), chosen


def fit_options(job: Job, chosen: choice.Choice) -> FitOptions:
    """This transcript's fitting options: the job's, with the counter and window chosen for it."""
    from ..core import choice

    options = FitOptions(budget=job.budget, window=max(job.window or 1, job.budget), lowwater=job.lowwater)
    return choice.fit_options(options, chosen)


def transcript_name(transcript: Transcript) -> str:
    """How reports name a transcript: its file, with the line it starts at when a file holds
    several (requests one per line, a log compacted into several conversations)."""
    return transcript.path if transcript.line == 1 else f"{transcript.path}:{transcript.line}"


def open_path(path: str, job: Job) -> BinaryIO:
    """A file, or (`job.uris`) a URI's object, opened to be streamed: a URI is never copied to disk."""
    from ..formats.reading import open_input

    if job.uris and path != "-":
        from .uri_input import is_uri, open_uri

        if is_uri(path):
            return open_uri(path)
    return open_input(path)
