"""The work done for one input file, as one pure function of (path, job) returning plain data.

`run_file` is what `--jobs` maps over local processes and what a distributed engine maps over
a cluster: it takes only picklable arguments (the counter travels by name and is built where the
work runs), never prints, and turns a file's problem into `FileResult.error` instead of raising,
so that one bad file among many is reported and the others still are. `combine.py` puts the
results together, in input order, the same way whoever ran them.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from pathlib import PurePath
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from ..core import choice
from ..core.estimate import TranscriptEstimate, by_script
from ..core.model import Message, Transcript
from ..core.options import DEFAULT_LOWWATER, FitOptions
from ..counters.models import main_model
from ..counters.seed import SEED, Counter
from ..errors import EXIT_BAD_INPUT, BadInput, CtxfitError, NoConversation
from ..formats import parallel, read_transcripts
from ..formats.reading import DEFAULT_LINE_LIMIT_MB, open_input, read_records, set_line_limit
from ..replay.prices import Prices
from . import log_split
from .log_estimate import STREAMED_FORMATS, estimate_entry, estimate_log

if TYPE_CHECKING:
    from ..replay.simulation import PolicyReplay
    from .meta import SessionMeta

COMMANDS = ("estimate", "replay", "sessions")
#: Stages in the order a fitter tries them.
STAGES = ("none", "clear", "turns", "rounds")


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


@dataclass
class Unit:
    """One session's results from one file: its description and one item per transcript."""

    meta: SessionMeta | None
    items: list = field(default_factory=list)


@dataclass
class FileResult:
    path: str
    size: int = 0
    units: list[Unit] = field(default_factory=list)
    #: The file could not be read: one line naming the file, the line and the problem.
    error: str | None = None
    #: The exit code that problem has on its own (3 for bad input).
    error_code: int = 0
    #: A problem that ends the whole run: (message, exit code).
    fatal: tuple[str, int] | None = None
    #: The file holds no conversation (a Claude Code log of only a `summary` record, say).
    empty: str | None = None


def run_file(path: str, job: Job) -> FileResult:
    """Read one input and do `job.command`'s work on each of its transcripts.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write(b'{"role":"user","content":"hi"}\\n{"role":"assistant","content":"hello"}\\n')
    >>> result = run_file(f.name, Job("estimate"))
    >>> result.error, [item["report"].tokens for item in result.units[0].items]
    (None, [11])
    """
    result = FileResult(path, _size(path))
    set_line_limit(job.line_limit_mb)
    try:
        # A stream (standard input, a FIFO named directly) is held to be read twice only to
        # describe its session; anything else is streamed.
        data = _read_stream(path) if job.describe and _is_stream(path) else None
        units = _read(path, data, job)
    except NoConversation as error:
        result.empty = str(error)
    except BadInput as error:
        result.error, result.error_code = str(error), error.exit_code
    except CtxfitError as error:
        # Not the file's fault (a produced request failed validation, a tokenizer is missing):
        # the whole run stops with its code, however many files there are.
        result.fatal = (str(error), error.exit_code)
    except (OSError, MemoryError) as error:
        result.error, result.error_code = f"{path}: cannot read: {error}", EXIT_BAD_INPUT
    else:
        result.units = units
    return result


def _is_stream(path: str) -> bool:
    """Standard input, or a path that is no regular file (a FIFO, `/dev/stdin`, `<(...)`):
    what can be read only once."""
    if path == "-":
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False  # opening it says what is wrong


def _read_stream(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open_input(path) as stream:
        return stream.read()


def _read(path: str, data: bytes | None, job: Job) -> list[Unit]:
    name = "<stdin>" if path == "-" else path
    counter = given_counter(job.tokenizer, job.profile)
    stream: contextlib.AbstractContextManager[BinaryIO]
    if data is not None:
        stream = io.BytesIO(data)
    elif path == "-":
        stream = contextlib.nullcontext(open_input(path, sys.stdin.buffer))  # not ours to close
    else:
        stream = _open(path, job)
    items: list[tuple[int, object]] = []
    format = job.format
    split = log_split.entry(path, name, job, counter) if job.command == "estimate" else None
    if split is not None:  # a big Claude Code log, read in pieces on every core
        items, format = [(1, split)], "claude-code"
    with stream as stream:
        for transcript in read_transcripts(name, stream, job.format) if split is None else ():
            format = transcript.format
            items.append((transcript.line, HANDLERS[job.command](transcript, path, job, counter)))
    if not job.describe:
        return [Unit(None, [item for _, item in items])]
    sessions = _describe(name, path, data, format or "", job)
    units = [Unit(meta) for meta in sessions]
    starts = sorted((meta.line, k) for k, meta in enumerate(sessions))
    for line, item in items:
        # A file of several sessions names each by the line it starts at: a transcript is the
        # last session's that starts at or before it (a log compacted or cleared is one session).
        owner = max((k for start, k in starts if start <= line), default=0)
        units[owner].items.append(item)
    return [unit for unit in units if unit.items]


def _describe(name: str, path: str, data: bytes | None, format: str, job: Job) -> list[SessionMeta]:
    from ..formats import aider
    from .meta import describe  # with datetime: only when sessions are described (many files, `sessions`)

    stream = io.BytesIO(data) if data is not None else _open(path, job)
    with stream:
        records = aider.records(name, stream) if format == aider.FORMAT else read_records(name, stream)
        sessions = describe(name, format, records)
    for session in sessions:
        if not session.id or not session.unique:
            # The log names no id of this one run: its bytes do, so an exact copy is still one
            # session and another run (of the same task, say) is another.
            session.digest = _digest(path, data, job)
            session.id = f"{session.id or PurePath(name).stem}#{session.digest}"
    return sessions


def _digest(path: str, data: bytes | None, job: Job) -> str:
    import hashlib  # loading OpenSSL costs ~3 ms; most runs hash nothing

    digest = hashlib.sha1()
    if data is not None:
        digest.update(data)
    else:
        with _open(path, job) as file:
            for chunk in iter(lambda: file.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()[:12]


def _open(path: str, job: Job) -> BinaryIO:
    """A file, or (`job.uris`) a URI's object, opened to be streamed: a URI is never copied to disk."""
    if job.uris and path != "-":
        from .uri_input import is_uri, open_uri

        if is_uri(path):
            return open_uri(path)
    return open_input(path)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path) if path != "-" else 0
    except OSError:
        return 0


@functools.cache
def given_counter(tokenizer: str | None, profile: str | None) -> Counter | None:
    """The counter the job names (built once per process), or None: chosen per log by its model."""
    return choice.given_counter(tokenizer, profile)


def _choose(transcript: Transcript, job: Job, given: Counter | None) -> tuple[Transcript, choice.Choice]:
    """The transcript with its unlogged part counted, and the counter and window chosen for it."""
    chosen = choice.choose(transcript, counter=given, window=job.window, fixed_tokens=job.fixed_tokens)
    return choice.apply(transcript, chosen), chosen


def transcript_name(transcript: Transcript) -> str:
    """How reports name a transcript: its file, with the line it starts at when a file holds
    several (requests one per line, a log compacted into several conversations)."""
    return transcript.path if transcript.line == 1 else f"{transcript.path}:{transcript.line}"


# --- what each command does with one transcript -------------------------------------------------


def _estimate(transcript: Transcript, path: str, job: Job, given: Counter | None) -> dict:
    name = transcript_name(transcript)
    if transcript.format in STREAMED_FORMATS and not job.compare and path != "-":
        streamed = estimate_log(
            transcript,
            name,
            given=given,
            window=job.window,
            fixed_tokens=job.fixed_tokens,
            top_n=job.top,
            path=path if job.split_big_files else None,
        )
        if streamed is not None:
            return estimate_entry(transcript, streamed.report, None, streamed.usage)
        transcript = _read_again(path, transcript, job)  # its last model's counter is another
    if transcript.format in choice.USAGE_FORMATS:
        transcript = transcript.materialize()
    transcript, chosen = _choose(transcript, job, given)
    counter = chosen.counter
    others = _comparison_counters(counter) if job.compare else []
    extra: list[TranscriptEstimate] = []
    if not others and job.split_big_files and parallel.worth_it(path, transcript.format, counter):
        report = parallel.estimate_in_parallel(path, name, transcript.dialect, top_n=job.top)
    else:
        report = TranscriptEstimate(name, transcript.format, counter=counter, top_n=job.top)
        extra = [TranscriptEstimate(name, transcript.format, counter=c, top_n=0) for c in others]
        # chain, not a tuple: the messages of a JSONL file are streamed, never all held.
        for message in chain(transcript.fixed, transcript.messages):
            report.add(message)
            for other in extra:
                other.add(message)
    comparison = {e.counter.name: e.tokens for e in [report, *extra]} if job.compare else None
    return estimate_entry(transcript, report, comparison, _usage_entry(transcript, chosen))


def _read_again(path: str, transcript: Transcript, job: Job) -> Transcript:
    """The same transcript of the file read again from the start, whole (materialized)."""
    with _open(path, job) as stream:
        for again in read_transcripts(transcript.path, stream, job.format):
            if again.line == transcript.line:
                return again.materialize()
            for _ in again.messages:  # an earlier conversation of a compacted log: passed over
                pass
    raise AssertionError(f"{path}: conversation at line {transcript.line} not found when read again")


def _usage_entry(transcript: Transcript, chosen: choice.Choice) -> dict:
    """What a report adds for recorded usage: the counter and window used and why, the
    unlogged fixed part, and what the log recorded (with this estimate of its last prompt)."""
    from ..core.usage import call_estimates, next_request, recorded_summary

    entry = chosen.to_dict()
    recorded = recorded_summary(transcript.calls)
    if recorded is not None and isinstance(transcript.messages, tuple):
        pairs = call_estimates(transcript, chosen.counter, chosen.fixed)
        if pairs:
            recorded["last_prompt_estimate"] = pairs[-1][1]
        recorded["next_request"] = next_request(transcript, chosen.counter).to_dict()
    entry["recorded"] = recorded
    return entry


def _comparison_counters(chosen: Counter) -> list[Counter]:
    """Every built-in profile and every installed tokenizer, except the counter already chosen."""
    from ..counters.profiles import builtin_profiles, load_profile
    from ..counters.tokenizers import available_tokenizers, get_tokenizer

    counters: list[Counter] = [] if chosen is SEED else [SEED]
    counters += [load_profile(name) for name in builtin_profiles() if name != "seed"]
    counters += [get_tokenizer(name) for name, ok in available_tokenizers().items() if ok]
    return [c for c in counters if c.name != chosen.name]


def _options(job: Job, chosen: choice.Choice) -> FitOptions:
    """This transcript's fitting options: the job's, with the counter and window chosen for it."""
    options = FitOptions(budget=job.budget, window=max(job.window or 1, job.budget), lowwater=job.lowwater)
    return choice.fit_options(options, chosen)


def _replay(transcript: Transcript, path: str, job: Job, given: Counter | None) -> dict:
    from ..replay.policies import DEFAULT_POLICIES, POLICIES  # (the fitter: not for `estimate`)
    from . import policy_runs

    names = job.policies or DEFAULT_POLICIES
    outline = _outline(transcript, path, job, given)
    if outline is None:
        transcript, chosen = _choose(_held(transcript, path, job, given), job, given)
    else:
        transcript, chosen = _choose(outline.transcript, job, given)
    options = _options(job, chosen)

    done: dict[str, PolicyReplay] = {}
    if outline is not None:
        # A big file: the first policy that walks the history once walks it while later pieces
        # are still being read (on the other cores); the others replay the held history.
        held: list[Message] = []
        streaming = next((name for name in names if POLICIES[name].streams), None)
        if streaming is not None:
            streamed = replace(transcript, messages=_holding(outline.messages(), held))
            done[streaming] = policy_runs.replay_one(streamed, streaming, options, job.prices, job.min_cacheable)
        else:
            held = list(outline.messages())
        transcript = replace(transcript, messages=tuple(held))
    rest = [name for name in names if name not in done]
    # A big file's other policies on every core (files spread over the cores: in this one).
    side_by_side = job.split_big_files and policy_runs.worth_it(path)
    more = policy_runs.replay_policies(
        transcript, rest, options, prices=job.prices, min_cacheable=job.min_cacheable, side_by_side=side_by_side
    )
    results = {name: done[name] if name in done else more[name] for name in names}
    recorded = None
    if transcript.calls:
        from ..core.usage import recorded_by_call

        recorded = recorded_by_call(transcript)
    return {
        "name": transcript_name(transcript),
        "format": transcript.format,
        "results": results,
        "choice": chosen.to_dict(),
        "by_script": by_script(chain(transcript.fixed, transcript.messages)),
        "budget": options.budget,
        "window": options.window,
        "recorded": recorded,
        "model": main_model(c.model for c in transcript.calls),
        "repairs": list(transcript.repairs),
    }


def _outline(transcript: Transcript, path: str, job: Job, given: Counter | None) -> parallel.Outline | None:
    """A big JSON Lines chat file, read on every core in outline (estimates and validator
    checks, no text: all a replay needs), or None: read it in one process."""
    if job.split_big_files and parallel.worth_it(path, transcript.format, given or SEED):
        return parallel.read_outline(path, transcript.path, transcript.format, transcript.dialect, checks=True)
    return None


def _held(transcript: Transcript, path: str, job: Job, given: Counter | None) -> Transcript:
    """The transcript held whole, or for a big log in outline (`log_outline`: estimates, ids and
    checks, no text: all a replay needs) when its chosen counter is the outline's."""
    from . import log_outline

    if not log_outline.worth_it(path, transcript.format):
        return transcript.materialize()
    outline = log_outline.read_outline(transcript, path, given, seed=True, checks=True, workers=job.split_big_files)
    outline.close()  # (a replay sends nothing: no message is read back)
    if outline.holds(
        choice.choose(outline.transcript, counter=given, window=job.window, fixed_tokens=job.fixed_tokens).counter
    ):
        return outline.transcript
    return log_outline.read_whole(path, transcript, job.format)


def _holding(messages: Iterable[Message], held: list[Message]) -> Iterator[Message]:
    """The messages, each also put in `held` as it passes."""
    for message in messages:
        held.append(message)
        yield message


def _session_part(transcript: Transcript, path: str, job: Job, given: Counter | None) -> dict:
    """One conversation's share of a session row: its size as recorded and as estimated (the
    unlogged part counted), and what the agent's own behaviour (send everything) and ctxfit
    would have sent, with the counter and window chosen for its model."""
    transcript, chosen = _choose(transcript.materialize(), job, given)
    options = _options(job, chosen)
    agent = _walk("none", transcript, options)
    ctxfit = _walk("ctxfit", transcript, options)
    recorded = [c.prompt_tokens for c in transcript.calls if c.prompt_tokens is not None]
    assert isinstance(transcript.messages, Sequence)  # (materialized above)
    return {
        "name": transcript_name(transcript),
        "format": transcript.format,
        "messages": len(transcript.messages),
        "models": sorted({c.model for c in transcript.calls if c.model}),
        "recorded_peak": max(recorded) if recorded else None,
        "estimated_peak": agent["peak"],
        "calls": agent["calls"],
        "rejected_agent": agent["rejected"],
        "rejected_ctxfit": ctxfit["rejected"],
        "ctxfit_peak": ctxfit["peak"],
        "stage": ctxfit["stage"],
        "cleared": ctxfit["cleared"],
        "window": options.window,
        "window_source": chosen.window_source,
        "counter": chosen.counter.name,
        "still_being_written": list(transcript.open_end),
    }


def _walk(policy: str, transcript: Transcript, options: FitOptions) -> dict:
    """Every request a policy would send: the largest, how many the window rejects, the furthest
    stage reached and how many results the last request clears."""
    from ..replay.policies import POLICIES

    peak = calls = rejected = 0
    stage, cleared = "none", 0
    for request in POLICIES[policy].requests(transcript, options):
        calls += 1
        peak = max(peak, request.tokens)
        rejected += request.tokens > options.window
        if STAGES.index(request.stage) > STAGES.index(stage):
            stage = request.stage
        cleared = getattr(request.shape, "cleared", cleared)
    return {"peak": peak, "calls": calls, "rejected": rejected, "stage": stage, "cleared": cleared}


HANDLERS: dict[str, Callable[[Transcript, str, Job, Counter | None], object]] = {
    "estimate": _estimate,
    "replay": _replay,
    "sessions": _session_part,
}
