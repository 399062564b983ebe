"""The per-session view: one row per session, grouped and sorted as asked. Plain data in and out
(the table, the JSON and the HTML report all render these dicts).

A row (`session_row`):

| key | what |
|---|---|
| `id`, `agent`, `project`, `models` | what the log says (`meta.py`); models from its recorded calls too |
| `path` | the file it was read from |
| `started`, `last_activity` | ISO 8601 timestamps as logged, or null when the log has none |
| `messages`, `calls` | messages in the conversation(s), model calls (requests) replayed |
| `compactions` | times the agent compacted the conversation (each then starts anew) |
| `peak` | the largest request: `recorded` where the log holds usage, else `estimated` |
| `peak_source` | "recorded" or "estimated" |
| `recorded_peak`, `estimated_peak` | both, when known (the estimate counts the part of the prompt the log does not hold, inferred from its recorded usage) |
| `window`, `window_source`, `window_share` | the model's window (or `--window`), where it came from, and `peak / window` |
| `counter` | the counter the estimates used (the model family's profile, or the one given) |
| `ctxfit` | at the budget: `stage` reached (none/clear/turns/rounds), `cleared` results in the last request, `peak` request, `rejected` calls |
| `agent_rejected` | calls the window would reject when everything is sent (the agent's own behaviour) |
| `still_being_written` | why the log looks still being written (its last line cut, its last reply or calls open), or an empty list: it was read up to its last complete record |

A group (`group_rows`, for `--by`): `key`, `sessions`, `messages`, `calls`, `compactions`,
`peak` (largest), `window_share` (largest), `rejected_agent`, `rejected_ctxfit`, `started`,
`last_activity`.
"""  # noqa: E501 (markdown table rows cannot be wrapped)

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from .combine import Kept
from .work import STAGES

GROUPS = ("day", "week", "project", "model", "agent")
SORTS = ("last", "started", "peak", "share", "messages", "rejected", "project", "id")


def session_row(kept: Kept, *, budget: int) -> dict:
    """One session's row from its description and the parts of its conversation(s)."""
    meta, parts = kept.unit.meta, kept.unit.items
    assert meta is not None  # (a session row is made for a described session)
    window = parts[-1]["window"]  # the model's, or --window
    recorded = [p["recorded_peak"] for p in parts if p["recorded_peak"] is not None]
    estimated = max(p["estimated_peak"] for p in parts)
    peak = max(recorded) if recorded else estimated
    models = list(meta.models)
    for part in parts:
        models += [m for m in part["models"] if m not in models]
    stage = max((p["stage"] for p in parts), key=STAGES.index)
    return {
        "id": meta.id,
        "agent": meta.agent,
        "project": meta.project,
        "models": models,
        "path": kept.path,
        "started": meta.started,
        "last_activity": meta.last,
        "messages": sum(p["messages"] for p in parts),
        "calls": sum(p["calls"] for p in parts),
        "compactions": meta.compactions,
        "peak": peak,
        "peak_source": "recorded" if recorded else "estimated",
        "recorded_peak": max(recorded) if recorded else None,
        "estimated_peak": estimated,
        "window": window,
        "window_source": parts[-1]["window_source"],
        "window_share": round(peak / window, 4),
        "counter": parts[-1]["counter"],
        "budget": budget,
        "ctxfit": {
            "stage": stage,
            "cleared": parts[-1]["cleared"],
            "peak": max(p["ctxfit_peak"] for p in parts),
            "rejected": sum(p["rejected_ctxfit"] for p in parts),
        },
        "agent_rejected": sum(p["rejected_agent"] for p in parts),
        "still_being_written": parts[-1]["still_being_written"],
    }


def within(rows: Iterable[dict], since: str | None, until: str | None) -> list[dict]:
    """Rows whose activity overlaps [since, until] (ISO dates or times; a date includes its whole
    day). A row without dates is kept only when no bound is given."""
    low = since
    high = f"{until}T99" if until and len(until) == 10 else until
    kept = []
    for row in rows:
        if low is None and high is None:
            kept.append(row)
        elif row["last_activity"] and (low is None or row["last_activity"] >= low) and (
                high is None or (row["started"] or row["last_activity"]) <= high):
            kept.append(row)
    return kept


def sort_rows(rows: list[dict], by: str) -> list[dict]:
    """Rows in the order asked: dates and sizes newest/largest first, names A to Z."""
    keys = {
        "last": lambda r: r["last_activity"] or "",
        "started": lambda r: r["started"] or "",
        "peak": lambda r: r["peak"],
        "share": lambda r: r["window_share"],
        "messages": lambda r: r["messages"],
        "rejected": lambda r: (r["agent_rejected"], r["ctxfit"]["rejected"]),
        "project": lambda r: r["project"],
        "id": lambda r: r["id"],
    }
    descending = by not in ("project", "id")
    return sorted(rows, key=keys[by], reverse=descending)


def group_rows(rows: list[dict], by: str) -> list[dict]:
    """Rows summed per day, week (ISO, e.g. 2026-W07), project, model or agent."""
    groups: dict[str, list[dict]] = {}
    for row in rows:
        for key in _keys(row, by):
            groups.setdefault(key, []).append(row)
    return [_summary(key, members) for key, members in sorted(groups.items())]


def _keys(row: dict, by: str) -> list[str]:
    if by == "model":
        return row["models"] or ["(unknown)"]
    if by in ("project", "agent"):
        return [row[by] or "(unknown)"]
    when = row["last_activity"] or row["started"]
    if not when:
        return ["(no date)"]
    day = _day(when)
    if by == "day":
        return [day.isoformat()]
    year, week, _ = day.isocalendar()
    return [f"{year}-W{week:02d}"]


def _day(timestamp: str) -> date:
    return date.fromisoformat(timestamp[:10])  # times are UTC ISO 8601 (meta.utc)


def _summary(key: str, members: list[dict]) -> dict:
    starts = [r["started"] for r in members if r["started"]]
    lasts = [r["last_activity"] for r in members if r["last_activity"]]
    return {
        "key": key,
        "sessions": len(members),
        "messages": sum(r["messages"] for r in members),
        "calls": sum(r["calls"] for r in members),
        "compactions": sum(r["compactions"] for r in members),
        "peak": max(r["peak"] for r in members),
        "window_share": max(r["window_share"] for r in members),
        "rejected_agent": sum(r["agent_rejected"] for r in members),
        "rejected_ctxfit": sum(r["ctxfit"]["rejected"] for r in members),
        "started": min(starts) if starts else None,
        "last_activity": max(lasts) if lasts else None,
    }
