"""`--since` and `--until`: the forms a person types (ccusage's among them), turned into instants.

`YYYY-MM-DD` or `YYYYMMDD` (a whole day in the time zone given, `--tz`, else the local one),
`today`, `yesterday`, a number of days or hours ago (`7d`, `24h`), or an ISO 8601 time. A day
as `--since` starts at its midnight; as `--until` it runs to its end. Anything else is a usage
error that lists the forms. Rows are then compared as instants (UTC), not as strings.

>>> from datetime import datetime, timezone
>>> now = datetime(2026, 2, 20, 15, 30, tzinfo=timezone.utc)
>>> bound("20260220", "since", "UTC", now=now), bound("2026-02-20", "until", "UTC", now=now)
('2026-02-20T00:00:00.000Z', '2026-02-20T23:59:59.999Z')
>>> bound("7d", "since", "UTC", now=now), bound("yesterday", "since", "Europe/Paris", now=now)
('2026-02-13T15:30:00.000Z', '2026-02-18T23:00:00.000Z')
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta, tzinfo

import typer

FORMS = "YYYY-MM-DD, YYYYMMDD, today, yesterday, Nd or Nh (days or hours ago), or an ISO 8601 time"


def zone(name: str | None) -> tzinfo:
    """The time zone `--tz` names (IANA, e.g. Europe/Paris, or UTC), else the local one."""
    if not name:
        return datetime.now().astimezone().tzinfo or UTC
    if name.upper() in ("UTC", "Z"):
        return UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise typer.BadParameter(
            f"unknown time zone {name!r}: give an IANA name such as Europe/Paris, or UTC", param_hint="--tz"
        ) from None


def bound(text: str, which: str, tz: str | None, *, now: datetime | None = None) -> str:
    """`text` as a UTC ISO 8601 instant with milliseconds (the form session rows hold);
    `which`: "since" (a day starts at its midnight) or "until" (a day runs to its end)."""
    local = zone(tz)
    now = (now or datetime.now(UTC)).astimezone(local)
    value = text.strip().lower()
    relative = re.fullmatch(r"(\d+)\s*([dh])", value)
    day: date | None = None
    if relative:
        amount = int(relative[1])
        moment = now - (timedelta(days=amount) if relative[2] == "d" else timedelta(hours=amount))
        return _utc(moment)
    if value in ("today", "yesterday"):
        day = now.date() - timedelta(days=value == "yesterday")
    elif re.fullmatch(r"\d{8}", value):
        day = _day(f"{value[:4]}-{value[4:6]}-{value[6:]}", text, which)
    elif re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        day = _day(value, text, which)
    if day is not None:
        edge = time.min if which == "since" else time.max
        return _utc(datetime.combine(day, edge, tzinfo=local))
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a date; give {FORMS}", param_hint=f"--{which}") from None
    return _utc(moment if moment.tzinfo else moment.replace(tzinfo=local))


def _day(value: str, text: str, which: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not a day of the calendar; give {FORMS}", param_hint=f"--{which}"
        ) from None


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"
