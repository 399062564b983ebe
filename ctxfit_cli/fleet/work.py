"""The work done for one input file, as one pure function of (path, job) returning plain data.

`run_file` is what `--jobs` maps over local processes and what a distributed engine maps over
a cluster: it takes only picklable arguments (the counter travels by name and is built where the
work runs), never prints, and turns a file's problem into `FileResult.error` instead of raising,
so that one bad file among many is reported and the others still are. `combine.py` puts the
results together, in input order, the same way whoever ran them.

With `job.cache`, a file's result is kept in the user's cache folder and used again while the
file is unchanged (`summary_cache.py`): whoever runs `run_file` (this process, a `--jobs` worker,
a Ray worker) reads and writes the same entries. A result read back is plain data (a session's
description included: `StoredMeta`), so using it loads no reader.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from types import SimpleNamespace
from typing import TYPE_CHECKING, BinaryIO, cast

from ..agents.claude_code import NAME as CLAUDE_CODE
from ..errors import EXIT_BAD_INPUT, BadInput, CtxfitError, NoConversation, UsageOnly
from . import summary_cache
from .job import Job, open_path

if TYPE_CHECKING:  # (the readers load when a file is read: a result from the cache needs none)
    from ..core.model import Transcript
    from ..counters.seed import Counter
    from .meta import SessionMeta


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
    #: The problem may pass (the file could not be opened, memory ran out): never kept in the cache.
    transient: bool = False


def run_file(path: str, job: Job) -> FileResult:
    """Read one input and do `job.command`'s work on each of its transcripts.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write(b'{"role":"user","content":"hi"}\\n{"role":"assistant","content":"hello"}\\n')
    >>> result = run_file(f.name, Job("estimate"))
    >>> result.error, [item["report"].tokens for item in result.units[0].items]
    (None, [11])
    """
    now = summary_cache.identity(path) if _cacheable(path, job) else None
    if now is None:
        return _computed(path, job)
    name = summary_cache.entry_name(job.command, path, _options(job))
    result = _kept(path, name, now)
    if result is None:
        result = _computed(path, job)
        if result.fatal is None and not result.transient:
            summary_cache.store(name, now, stored(result))
    return result


def cached_result(path: str, job: Job) -> FileResult | None:
    """The file's result kept from an earlier run, if `job.cache` and the file is unchanged."""
    now = summary_cache.identity(path) if _cacheable(path, job) else None
    return _kept(path, summary_cache.entry_name(job.command, path, _options(job)), now) if now else None


def _kept(path: str, name: str, now: summary_cache.Identity) -> FileResult | None:
    kept = summary_cache.lookup(name, now)
    try:
        return restored(path, kept) if kept is not None else None
    except (TypeError, ValueError, LookupError):  # whole, but not a result as this code keeps it: read the file
        return None


def _cacheable(path: str, job: Job) -> bool:
    """Whether the file's result may come from the cache: not for standard input or a URI (no
    identity to check), nor for `--compare` (it counts with whatever tokenizers are installed)."""
    return job.cache and not job.compare and path != "-" and not job.uris


def _options(job: Job) -> Job:
    """What of the job changes a file's result (whether a big file is read on every core does not)."""
    return job._replace(cache=False, split_big_files=True)


class StoredMeta(SimpleNamespace):
    """A session's description (`meta.SessionMeta`) read back from the cache: its fields and its
    `key`, as `combine.py` and the views read them."""


def stored(result: FileResult) -> tuple:
    """The result as plain data (the descriptions as their fields) for the cache."""
    units = [(None if u.meta is None else (vars(u.meta).copy(), u.meta.key), u.items) for u in result.units]
    return (result.size, units, result.error, result.error_code, result.empty)


def restored(path: str, value: tuple) -> FileResult:
    """A result from what `stored` kept."""
    size, units, error, code, empty = value
    result = FileResult(path, size, error=error, error_code=code, empty=empty)
    for described, items in units:
        meta = None if described is None else StoredMeta(**described[0], key=described[1])
        result.units.append(Unit(cast("SessionMeta | None", meta), items))
    return result


def _computed(path: str, job: Job) -> FileResult:
    from ..formats.reading import set_line_limit

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
        result.transient = True
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
    from ..formats.reading import open_input

    if path == "-":
        return sys.stdin.buffer.read()
    with open_input(path) as stream:
        return stream.read()


def _read(path: str, data: bytes | None, job: Job) -> list[Unit]:
    from ..formats import read_transcripts
    from ..formats.reading import open_input
    from ..formats.skipped import Skipped
    from .job import given_counter
    from .spend import Watch

    name = "<stdin>" if path == "-" else path
    counter = given_counter(job.tokenizer, job.profile)
    stream: contextlib.AbstractContextManager[BinaryIO]
    if data is not None:
        stream = io.BytesIO(data)
    elif path == "-":
        stream = contextlib.nullcontext(open_input(path, sys.stdin.buffer))  # not ours to close
    else:
        stream = open_path(path, job)
    items: list[tuple[int, object]] = []
    format = job.format
    split = None
    if job.command == "estimate":
        from . import log_split

        split = log_split.entry(path, name, job, counter)
    if split is not None:  # a big Claude Code log, read in pieces on every core
        items, format = [(1, split)], CLAUDE_CODE
    # `estimate` of one log adds up its spend as it reads it (else it is read again for it).
    watch = Watch() if job.command == "estimate" and not job.describe and path != "-" else None
    # A described log is described as it is read, where its agent can (else read again for it).
    reading = None
    if job.describe and split is None:
        from .meta import Reading  # (with the agents' descriptions: only where sessions are described)

        reading = Reading(name)
    skipped = Skipped()  # what the log holds that its reader does not know, for every item of it
    seen = watch or reading
    with stream as stream:
        try:
            for transcript in read_transcripts(name, stream, job.format, seen, skipped) if split is None else ():
                format = transcript.format
                items.append((transcript.line, handlers()[job.command](transcript, path, job, counter)))
        except UsageOnly as usage:
            if job.command != "sessions":
                raise
            return _usage_only(name, path, data, usage.format, job)
    for _, item in items if job.command == "estimate" else ():
        if isinstance(item, dict) and "unread" not in item:  # (a log read in pieces counted its own)
            item["unread"] = skipped.as_dict()
    if watch is not None and len(items) == 1 and (spend := watch.totals()) is not None:
        cast(dict, items[0][1])["spend"] = spend
    if not job.describe:
        return [Unit(None, [item for _, item in items])]
    read = reading.sessions() if reading is not None and reading.format == format else None
    sessions = _describe(name, path, data, format or "", job, read)
    units = [Unit(meta) for meta in sessions]
    starts = sorted((meta.line, k) for k, meta in enumerate(sessions))
    for line, item in items:
        # A file of several sessions names each by the line it starts at: a transcript is the
        # last session's that starts at or before it (a log compacted or cleared is one session).
        owner = max((k for start, k in starts if start <= line), default=0)
        units[owner].items.append(item)
    return [unit for unit in units if unit.items]


def _usage_only(name: str, path: str, data: bytes | None, format: str, job: Job) -> list[Unit]:
    """A log of usage only (no conversation to replay): each session's share of its row made
    from the calls it records (`session_file.usage_part`)."""
    from .session_file import usage_part

    return [Unit(meta, [usage_part(meta, name, format, job)]) for meta in _describe(name, path, data, format, job)]


def _describe(
    name: str, path: str, data: bytes | None, format: str, job: Job, read: list[SessionMeta] | None = None
) -> list[SessionMeta]:
    """The sessions of the input: `read` (described as it was read for its messages), or read
    again for them."""
    sessions = read if read is not None else _read_again(name, path, data, format, job)
    for session in sessions:
        if not session.id or not session.unique:
            # The log names no id of this one run: its bytes do, so an exact copy is still one
            # session and another run (of the same task, say) is another.
            session.digest = _digest(path, data, job)
            session.id = f"{session.id or PurePath(name).stem}#{session.digest}"
    return sessions


def _read_again(name: str, path: str, data: bytes | None, format: str, job: Job) -> list[SessionMeta]:
    from ..agents import BY_NAME
    from ..formats.reading import read_records
    from .meta import describe  # with datetime: only when sessions are described (many files, `sessions`)

    stream = io.BytesIO(data) if data is not None else open_path(path, job)
    with stream:
        agent = BY_NAME.get(format)
        text = agent.text_records if agent is not None else None  # a log that is not JSON: its lines
        records = text(name, stream) if text is not None else read_records(name, stream)
        return describe(name, format, records)


def _digest(path: str, data: bytes | None, job: Job) -> str:
    import hashlib  # loading OpenSSL costs ~3 ms; most runs hash nothing

    digest = hashlib.sha1()
    if data is not None:
        digest.update(data)
    else:
        with open_path(path, job) as file:
            for chunk in iter(lambda: file.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()[:12]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path) if path != "-" else 0
    except OSError:
        return 0


def handlers() -> dict[str, Callable[[Transcript, str, Job, Counter | None], object]]:
    """What each command does with one transcript of a file."""
    from .estimate_file import estimate
    from .replay_file import replay
    from .session_file import session_part

    return {"estimate": estimate, "replay": replay, "sessions": session_part}


def imported(command: str) -> None:
    """Import what `command`'s work on a file loads, before `--jobs` forks its workers: they then
    share the modules rather than each import its own (~20 ms of CPU a worker for `sessions`)."""
    handlers()
    if command == "sessions":
        from ..counters import profiles  # noqa: F401
        from ..replay import policies, validity  # noqa: F401
        from . import log_outline, meta, spend  # noqa: F401
