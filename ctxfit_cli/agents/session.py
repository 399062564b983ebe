"""One session as its log describes it (`SessionMeta`), and the times logs give, as one UTC form.

Each agent's module fills these from its records (`agents/`); `fleet/meta.py` gives
the sessions of any input.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from .spend import Tally


@dataclass
class SessionMeta:
    """One session as its log describes it. `line` is the line its transcript starts at when a
    file holds several sessions (OpenHands evaluation output), else 0 (the whole file)."""

    id: str
    agent: str
    project: str = ""
    models: list[str] = field(default_factory=list)
    started: str | None = None
    last: str | None = None
    compactions: int = 0
    #: Ids of the model's replies, in order: a copy of a session repeats them.
    message_ids: list[str] = field(default_factory=list)
    line: int = 0
    #: For a log that names no id: a digest of its bytes, which is then what identifies it.
    digest: str = ""
    #: Whether `id` names this one run (False: it names the task, so the digest is added).
    unique: bool = True
    #: The tokens the log records it was billed for, per model (`spend.py`; empty: none recorded).
    spend: Tally = field(default_factory=dict)
    #: Of `spend`, what sub-agents' replies the log holds inline cost, by agent id (Claude Code
    #: 2.1's `agent_progress` records): taken off where the sub-agent's own log is read too
    #: (`fleet/combine.py`), so that no reply is counted twice.
    inline_agents: dict[str, Tally] = field(default_factory=dict)
    #: The dollars the log records it was billed, summed (Cline's UI messages and OpenCode price
    #: each call themselves); None where it records none (its tokens are priced then).
    usd: float | None = None
    #: For a log of usage only, with no conversation to replay (Cline's `ui_messages.json`):
    #: the whole prompt of each model call, as it records it.
    prompts: list[int] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str]:
        return (self.agent, self.digest or self.id)

    def saw(self, timestamp: object) -> None:
        timestamp = utc(timestamp)
        if timestamp is not None:
            self.started = timestamp if self.started is None else min(self.started, timestamp)
            self.last = timestamp if self.last is None else max(self.last, timestamp)

    def model(self, name: object) -> None:
        if isinstance(name, str) and name and not name.startswith("<") and name not in self.models:
            self.models.append(name)


def utc(timestamp: object) -> str | None:
    """An ISO 8601 time as UTC with milliseconds ('2026-02-12T16:02:48.183Z'), so that times
    from every agent compare as strings; None for anything else (no time is made up).

    >>> utc("2025-01-27T22:44:56.900854"), utc("2026-02-12T17:02:48+01:00"), utc("[trimmed]")
    ('2025-01-27T22:44:56.900Z', '2026-02-12T16:02:48.000Z', None)
    """
    if not isinstance(timestamp, str) or not timestamp[:4].isdigit():
        return None
    if _ALREADY_UTC.fullmatch(timestamp) and _whole_day(timestamp[:10]) and timestamp[11:19] <= "23:59:59":
        return timestamp  # what it would be made into (most logs write this form: 5,000 a log)
    from datetime import UTC, datetime  # (here: reading a log for its messages needs no dates)

    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is not None:  # a time without a zone is taken as UTC, as the agents write them
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="milliseconds") + "Z"


#: A time already in `utc`'s form, its fields in range (minutes and seconds below 60).
_ALREADY_UTC = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z")


@functools.lru_cache(maxsize=64)
def _whole_day(day: str) -> bool:
    """Whether `day` (YYYY-MM-DD) is a day of the calendar (a log's times share a few)."""
    from datetime import date

    try:
        date.fromisoformat(day)
    except ValueError:
        return False
    return True


def from_epoch_ms(value: object) -> str | None:
    """A time in milliseconds since 1970 (as Cline and OpenCode write them), as ISO 8601 UTC."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        return None
    from datetime import UTC, datetime

    try:
        return datetime.fromtimestamp(value / 1000, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def member(value: object, key: str) -> dict:
    """`value[key]` when both are JSON objects, else an empty one (an optional part of a record)."""
    inner = value.get(key) if isinstance(value, dict) else None
    return inner if isinstance(inner, dict) else {}


def record_type(value: object) -> str | None:
    """A record's `type` where it is a string; None otherwise (a list or an object there is no
    type any reader knows, and cannot be looked up in a set of types)."""
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else None
