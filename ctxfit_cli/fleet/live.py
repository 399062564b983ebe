"""The sessions being written, followed as they grow: what `ctxfit watch` shows (plain data; the
view is `cli/watch_view.py`).

`Watch` follows the files given, and the logs in the folders given (or the agents' default
folders, `discovery.py`) that changed within the last `active` seconds; folders are searched
again now and then for new logs. Each file is followed from where its last read stopped
(`follow.py`): Claude Code and Codex logs record by record into a `Tally` (`live_records.py`);
other logs, which their agents rewrite whole (Cline, Gemini CLI and OpenCode JSON), are read
again when they change, through the readers, and sized as `estimate` sizes them
(`core.usage.next_request`).

A row of `Watch.snapshot()`:

| key | what |
|---|---|
| `path`, `agent`, `id`, `project`, `model` | the log and what it says of its session |
| `tokens` | the next request's size, everything kept: `confirmed` (the latest call's reported |
|          | size; 0 when none) plus `estimated` (what was written since) |
| `window`, `window_source`, `window_share` | the model's window (as for `sessions`) and `tokens / window` |
| `calls`, `compactions` | model calls and compactions so far |
| `growth_per_call` | mean growth of the prompt over the latest calls (null: fewer than two) |
| `calls_to_window` | calls left before the window at that rate (null: not growing) |
| `compacts_at`, `calls_to_compaction` | the agent's own compaction threshold (`auto_compact.py`; |
|          | null when it has none) and calls left before it |
| `last_activity` | the latest time the log wrote (UTC ISO 8601), else the file's modification time |
| `being_written` | its last line is still being written |
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from ..agents import BY_NAME
from ..counters.models import window_for
from .auto_compact import compaction_at
from .discovery import default_folders, expand
from .follow import Follower
from .live_records import HANDLERS, Records
from .meta import agent_title
from .tally import Tally, calls_left

if TYPE_CHECKING:
    from ..core.model import Transcript

#: A window no log names and no model table gives (as the other commands assume).
DEFAULT_WINDOW = 1_000_000
#: The keys `_sizes` computes (the rest of a row describes the session).
SIZED = (
    "agent",
    "format",
    "tokens",
    "confirmed",
    "estimated",
    "window",
    "window_source",
    "window_share",
    "compacts_at",
    "calls_to_window",
    "calls_to_compaction",
)
#: Folders are searched again for new logs at most this often (seconds).
RESCAN_EVERY = 5.0


class LiveSession:
    """One log followed: its follower and its running counts."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.follower = Follower(path)
        self.format: str | None = None
        self.tally = Tally("")
        self.handler: Records | None = None
        self.wholes: list[dict] | None = None  # a log read whole: its last sizing, a row per session
        self._stamp: tuple[int, int] | None = None
        self.bad_lines = 0

    def update(self) -> bool:
        """Read what was written since the last update; whether anything changed."""
        if self.format is None and not self.path.endswith(".jsonl"):
            self.format = "document"  # a JSON document (or aider's markdown), rewritten whole
        if self.format is not None and self.format not in HANDLERS:
            return self._reread()
        read = self.follower.read()
        if read.restarted:
            self.tally, self.handler = Tally(self.format or ""), None
            if self.format in HANDLERS:
                self.handler = HANDLERS[self.format](self.tally, self.path)
        for line in read.lines:
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                if self.format is None:  # not JSON Lines after all
                    self.format = "document"
                    return self._reread()
                self.bad_lines += 1
                continue
            if self.format is None and not self._choose(value, line):
                return self._reread()
            if self.handler is not None:
                self.handler.feed(value, self.follower.line)
        return bool(read.lines) or read.restarted

    def _choose(self, value: object, line: bytes) -> bool:
        """The format, from the first record; whether it is followed record by record."""
        from ..errors import CtxfitError
        from ..formats.detection import detect
        from ..formats.reading import Record

        try:
            self.format = detect(self.path, Record(1, value, line))
        except CtxfitError:
            self.format = "unknown"
        if self.format not in HANDLERS:
            return False
        self.tally = Tally(self.format)
        self.handler = HANDLERS[self.format](self.tally, self.path)
        return True

    def _reread(self) -> bool:
        """A log its agent rewrites: read whole again when its size or time changed."""
        try:
            status = os.stat(self.path)
        except OSError:
            return False
        stamp = (status.st_size, status.st_mtime_ns)
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        self.wholes = _read_whole(self.path)
        if self.wholes:
            self.format = self.wholes[0]["format"]
        return True

    def row(self, window: int | None = None) -> dict | None:
        """This log's snapshot row, of its latest session (None until anything of it was read);
        `window` replaces the model's (a status line is told the one its agent uses)."""
        rows = self.rows(window)
        return rows[0] if rows else None

    def rows(self, window: int | None = None, since: str | None = None) -> list[dict]:
        """A snapshot row per session of this log, the latest first: one, but for an agent's
        database, which holds every session of the agent (`since`: only those active since that
        UTC ISO time, and the latest whatever its time)."""
        if self.wholes is not None:
            rows = [
                {
                    **whole,
                    "path": self.path,
                    "last_activity": whole["last_activity"] or _modified(self.path),
                    "being_written": False,
                }
                for whole in self.wholes
            ]
            rows.sort(key=lambda r: r["last_activity"] or "", reverse=True)
            if since is not None:
                rows = rows[:1] + [r for r in rows[1:] if (r["last_activity"] or "") >= since]
            return [resized(row, window) for row in rows] if window else rows
        row = self._followed_row(window)
        return [row] if row is not None else []

    def _followed_row(self, window: int | None) -> dict | None:
        if self.format not in HANDLERS or not (self.tally.calls or self.tally.total):
            return None
        tally = self.tally
        window, source = (window, "given") if window else window_for(tally.models, tally.window)
        return _sizes(
            path=self.path,
            format=tally.format,
            id=tally.id,
            project=tally.project,
            model=tally.models[-1] if tally.models else "",
            tokens=tally.size,
            confirmed=tally.confirmed or 0,
            window=window,
            window_source=source,
            calls=tally.calls,
            compactions=tally.compactions,
            growth=tally.growth_per_call(),
            last_activity=tally.last_activity or _modified(self.path),
            being_written=bool(self.follower.partial),
        )


def _sizes(
    *,
    format: str,
    tokens: int,
    confirmed: int,
    window: int | None,
    window_source: str,
    growth: float | None,
    **described: object,
) -> dict:
    window = window or DEFAULT_WINDOW
    compacts_at = compaction_at(format, window)
    return {
        "agent": agent_title(format),
        "format": format,
        **described,
        "tokens": tokens,
        "confirmed": confirmed,
        "estimated": tokens - confirmed,
        "window": window,
        "window_source": window_source,
        "window_share": round(tokens / window, 4),
        "growth_per_call": None if growth is None else round(growth),
        "calls_to_window": calls_left(tokens, window, growth),
        "compacts_at": compacts_at,
        "calls_to_compaction": calls_left(tokens, compacts_at, growth),
    }


def resized(row: dict, window: int) -> dict:
    """A row measured against another window."""
    growth = row["growth_per_call"]
    described = {k: row[k] for k in row if k not in SIZED}
    return _sizes(
        format=row["format"],
        tokens=row["tokens"],
        confirmed=row["confirmed"],
        window=window,
        window_source="given",
        growth=growth,
        **described,
    )


def _read_whole(path: str) -> list[dict] | None:
    """A log read whole through the readers and sized as `estimate` sizes its next request: a
    row for its latest session (earlier parts of it are its compactions), or one per session of
    an agent's database."""
    from ..errors import CtxfitError
    from ..formats import read_transcripts
    from ..formats.reading import open_input

    try:
        with open_input(path) as stream:
            transcripts = [t.materialize() for t in read_transcripts(path, stream)]
    except (CtxfitError, OSError):
        return None
    if not transcripts:
        return None
    agent = BY_NAME.get(transcripts[-1].format)
    if agent is None or agent.database is None:
        return [_whole_row(transcripts, id=Path(path).stem, project=Path(path).parent.name, last_activity=None)]
    return _database_rows(path, transcripts)


def _database_rows(path: str, transcripts: list[Transcript]) -> list[dict] | None:
    """A row per session of an agent's database: its transcripts are numbered by the session
    they belong to (`line`), as the agent's description of the sessions is."""
    from ..errors import CtxfitError
    from ..formats.reading import open_input, read_records
    from .meta import describe

    try:
        with open_input(path) as stream:
            sessions = describe(path, transcripts[-1].format, read_records(path, stream))
    except (CtxfitError, OSError):
        return None
    parts: dict[int, list[Transcript]] = {}
    for transcript in transcripts:
        parts.setdefault(transcript.line, []).append(transcript)
    return [
        _whole_row(parts[session.line], id=session.id, project=session.project, last_activity=session.last)
        for session in sessions
        if session.line in parts
    ]


def _whole_row(transcripts: list[Transcript], **described: object) -> dict:
    """The row of one session read whole: its latest transcript, after `len - 1` compactions."""
    from ..core.usage import next_request, usable
    from ..counters.models import counter_for_models

    last = transcripts[-1]
    models = [c.model for c in last.calls if c.model]
    counter = counter_for_models(models)[0]
    size = next_request(last, counter)
    recorded = [c.prompt_tokens or 0 for c in usable(last.calls)]
    calls = len([m for m in last.messages if m.role.value == "assistant"])
    sizes = Tally(last.format, sizes=recorded)
    window, source = window_for(models, next((c.window for c in reversed(last.calls) if c.window), None))
    return _sizes(
        format=last.format,
        model=models[-1] if models else "",
        tokens=size.tokens,
        confirmed=size.confirmed,
        window=window,
        window_source=source,
        calls=max(calls, len(recorded)),
        compactions=len(transcripts) - 1,
        growth=sizes.growth_per_call(),
        **described,
    )


def _modified(path: str) -> str | None:
    try:
        moment = datetime.fromtimestamp(os.path.getmtime(path), UTC).replace(tzinfo=None)
    except OSError:
        return None
    return moment.isoformat(timespec="milliseconds") + "Z"


class Watch:
    """The sessions followed, found again in their folders now and then."""

    def __init__(
        self, paths: list[str] | None, *, active: float | None = 3600.0, clock: Callable[[], float] = time.time
    ) -> None:
        paths = paths or default_folders()
        self.folders = [p for p in paths if os.path.isdir(p)]
        self.files = [p for p in paths if not os.path.isdir(p)]
        self.active, self.clock = active, clock
        self.sessions: dict[str, LiveSession] = {}
        self._scanned = float("-inf")

    def catch_up(self) -> None:
        """Read every followed log to its end (however much each poll reads at most)."""
        while self.poll():
            pass

    def poll(self) -> bool:
        """Read what every followed log wrote since the last poll; whether anything changed."""
        changed = self._scan()
        for session in list(self.sessions.values()):
            changed = session.update() or changed
        return changed

    def _scan(self) -> bool:
        now = self.clock()
        if now - self._scanned < RESCAN_EVERY:
            return False
        self._scanned = now
        found = list(self.files)
        for path in expand(self.folders):
            if self.active is None or path in self.sessions or _changed_within(path, now, self.active):
                found.append(path)
        new = [p for p in found if p not in self.sessions]
        for path in new:
            self.sessions[path] = LiveSession(path)
        return bool(new)

    def snapshot(self, window: int | None = None) -> list[dict]:
        """One row per session read so far, the most recently active first (`window`: measured
        against that window instead of each model's). Of an agent's database, the sessions
        active within `active` seconds (and its latest one)."""
        since = None
        if self.active is not None:
            moment = datetime.fromtimestamp(self.clock() - self.active, UTC).replace(tzinfo=None)
            since = moment.isoformat(timespec="milliseconds") + "Z"
        rows = [row for session in self.sessions.values() for row in session.rows(window, since)]
        return sorted(rows, key=lambda r: r["last_activity"] or "", reverse=True)


def _changed_within(path: str, now: float, seconds: float) -> bool:
    try:
        return now - os.path.getmtime(path) <= seconds
    except OSError:
        return False
