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
| `cost` | what the log records it was billed for: `usd` (null when it records no usage, or only for unpriced models), the tokens of each kind (`input` uncached, `cache_write`, `cache_read`, `output`, `cache_write_1h`), `by_model` (dollars), `unpriced` (models no price was found for), `priced_by` (models the price table lacks, with where their price came from: the providers' catalog or a family's newest model) |
| `still_being_written` | why the log looks still being written (its last line cut, its last reply or calls open), or an empty list: it was read up to its last complete record |

A group (`group_rows`, for `--by`): `key`, `sessions`, `messages`, `calls`, `compactions`,
`peak` (largest), `window_share` (largest), `rejected_agent`, `rejected_ctxfit`, `started`,
`last_activity`, `usd` (summed; by model: that model's calls only).
"""  # noqa: E501 (markdown table rows cannot be wrapped)

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, tzinfo
from typing import TYPE_CHECKING

from .session_file import STAGES

if TYPE_CHECKING:
    from ..replay.model_prices import PriceTable
    from .combine import Kept
    from .spend import Tally

GROUPS = ("day", "week", "project", "model", "agent")
SORTS = ("last", "started", "peak", "share", "messages", "rejected", "project", "id", "cost")


def session_row(kept: Kept, *, budget: int, prices: PriceTable | None = None) -> dict:
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
        "cost": session_cost(meta.spend, prices, getattr(meta, "usd", None)),
        "still_being_written": parts[-1]["still_being_written"],
    }


def session_cost(spend: Tally, prices: PriceTable | None, recorded: float | None = None) -> dict:
    """What a session's recorded usage cost: dollars (per model too) and tokens of each kind.
    `recorded`: the dollars the log itself records (Cline's UI messages, OpenCode): taken as the
    cost, as ccusage takes them, rather than the tokens priced by the table."""
    kinds = {"input": 0, "cache_write": 0, "cache_read": 0, "output": 0, "cache_write_1h": 0}
    by_model: dict[str, float] = {}
    unpriced: list[str] = []
    priced_by: dict[str, str] = {}  # models not in the price table: where their price came from
    for (model, long), counts in spend.items():
        for kind, count in zip(kinds, counts):
            kinds[kind] += count
        price = prices.price(model) if prices is not None and model else None
        if price is None:
            if model not in unpriced and any(counts):
                unpriced.append(model or "(unnamed)")
            continue
        if price.source:
            priced_by[model] = price.source
        by_model[model] = by_model.get(model, 0.0) + price.cost(**dict(zip(kinds, counts)), long=long)
    usd = round(sum(by_model.values()), 6) if by_model else None
    if recorded is not None:
        usd, unpriced = round(recorded, 6), []
        models = sorted({model for model, _ in spend if model})
        by_model = {models[0]: recorded} if len(models) == 1 else {}
    by_model = {m: round(v, 6) for m, v in by_model.items()}
    return {"usd": usd, **kinds, "by_model": by_model, "unpriced": unpriced, "priced_by": priced_by}


def within(rows: Iterable[dict], since: str | None, until: str | None) -> list[dict]:
    """Rows whose activity overlaps [since, until], compared as instants (ISO 8601 times; a time
    without a zone is UTC, as the logs write them; `cli/dates.py` turns what a person types into
    these). A row without dates is kept only when no bound is given.

    >>> row = {"started": "2026-02-20T09:00:00.000Z", "last_activity": "2026-02-20T11:00:00+02:00"}
    >>> [len(within([row], s, None)) for s in ("2026-02-20T09:30:00Z", "2026-02-20T08:59:00Z")]
    [0, 1]
    """
    low, high = _instant(since), _instant(until)
    kept = []
    for row in rows:
        last, first = _instant(row["last_activity"]), _instant(row["started"] or row["last_activity"])
        if low is None and high is None:
            kept.append(row)
        elif (
            last is not None and first is not None and (low is None or last >= low) and (high is None or first <= high)
        ):
            kept.append(row)
    return kept


def _instant(text: str | None) -> datetime | None:
    """An ISO 8601 time as an aware UTC datetime; a date alone is its first instant."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


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
        "cost": lambda r: r["cost"]["usd"] or 0.0,
    }
    descending = by not in ("project", "id")
    return sorted(rows, key=keys[by], reverse=descending)


def group_rows(rows: list[dict], by: str, zone: tzinfo = UTC) -> list[dict]:
    """Rows summed per day, week (ISO, e.g. 2026-W07), project, model or agent; days and weeks
    are those of the time zone `zone`."""
    groups: dict[str, list[dict]] = {}
    for row in rows:
        for key in _keys(row, by, zone):
            groups.setdefault(key, []).append(row)
    return [_summary(key, members, by) for key, members in sorted(groups.items())]


def _keys(row: dict, by: str, zone: tzinfo) -> list[str]:
    if by == "model":
        return row["models"] or ["(unknown)"]
    if by in ("project", "agent"):
        return [row[by] or "(unknown)"]
    when = row["last_activity"] or row["started"]
    if not when:
        return ["(no date)"]
    day = _day(when, zone)
    if by == "day":
        return [day.isoformat()]
    year, week, _ = day.isocalendar()
    return [f"{year}-W{week:02d}"]


def _day(timestamp: str, zone: tzinfo) -> date:
    moment = _instant(timestamp)
    return moment.astimezone(zone).date() if moment is not None else date.fromisoformat(timestamp[:10])


def _summary(key: str, members: list[dict], by: str) -> dict:
    costs = [r["cost"]["by_model"].get(key) if by == "model" else r["cost"]["usd"] for r in members]
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
        "usd": round(sum(c for c in costs if c is not None), 6) if any(c is not None for c in costs) else None,
    }
