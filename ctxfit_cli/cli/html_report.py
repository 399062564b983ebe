"""The self-contained HTML report (`replay --html`, `sessions --html`): one page, inline CSS and
SVG charts, no script and nothing fetched, so it opens offline and can be mailed or archived.

Pages are built from the same plain data the commands print with `--json` (a replay with its
steps; the sessions' rows), so the page and the JSON never disagree. Every string that came from
the user's data (file names, projects, session ids, model names) is escaped.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from .svg import PALETTE, WINDOW_COLOUR, Bar, Limit, Series, bar_chart, line_chart

#: Request-size charts drawn at most; past this the page lists the other files in the table only.
MAX_FILE_CHARTS = 100
#: The window line is drawn when it is at most this many times the largest request or the
#: budget; further up it would flatten every line to the bottom, so the caption gives it instead.
WINDOW_IN_VIEW = 3

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f;
       margin: 24px auto; max-width: 1000px; padding: 0 16px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 6px; word-break: break-all; }
p.sub, p.caption { color: #555; margin: 4px 0 10px; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 10px; border-bottom: 1px solid #e3e3e3; text-align: right; white-space: nowrap; }
th:first-child, td:first-child, th.text { text-align: left; } th { font-weight: 600; background: #f6f6f6; }
td.text { text-align: left; white-space: normal; overflow-wrap: break-word; max-width: 260px; }
div.wide { overflow-x: auto; max-width: 100%; }
.bad { color: #C62828; font-weight: 600; } .warn { color: #9a6700; }
svg.chart { display: block; max-width: 100%; height: auto; background: #fcfcfc; border: 1px solid #eee; }
svg .title { font: 600 13px system-ui, sans-serif; fill: #1d1d1f; }
svg .tick, svg .bar-note { font: 11px system-ui, sans-serif; fill: #555; }
svg .label, svg .bar-label { font: 12px system-ui, sans-serif; fill: #333; }
svg .limit { font: 600 11px system-ui, sans-serif; }
svg .grid { stroke: #e6e6e6; stroke-width: 1; } svg .axis { stroke: #888; stroke-width: 1; }
.legend span { display: inline-block; margin-right: 14px; } .legend i { display: inline-block;
  width: 14px; height: 3px; vertical-align: middle; margin-right: 5px; }
footer { color: #777; margin-top: 30px; font-size: 12px; }
"""


def page(title: str, body: Iterable[str], *, version: str) -> str:
    return "".join([
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # Nothing may be fetched: not even a favicon request (it would be a console error offline).
        '<link rel="icon" href="data:,">',
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        *body,
        f"<footer>Made by ctxfit {escape(version)}. Self-contained: no script, nothing loaded from "
        "the network.</footer></body></html>\n",
    ])


def _table(header: list[str], rows: list[list[str]]) -> str:
    """Cells are HTML already (escape text before); a text column's header is aligned as its
    cells are (left)."""
    first = rows[0] if rows else []
    head = "".join(f'<th class="text">{escape(h)}</th>' if i < len(first) and first[i].startswith('<td class="text"')
                   else f"<th>{escape(h)}</th>" for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(cell if cell.startswith("<td") else f"<td>{cell}</td>" for cell in row) + "</tr>"
                   for row in rows)
    # In a scrolling box: a wide table scrolls instead of pushing the page sideways.
    return f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _legend(names: list[str]) -> str:
    items = "".join(f'<span><i style="background:{PALETTE[n % len(PALETTE)]}"></i>{escape(name)}</span>'
                    for n, name in enumerate(names))
    return f'<p class="legend">{items}</p>'


def _int(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


# --- replay ---------------------------------------------------------------------------------------


def replay_page(document: dict, *, version: str) -> str:
    """The page for a replay: `document` is what `ctxfit replay --json --steps` prints."""
    files = document["files"]
    totals = document["policies"]
    names = list(totals)
    budget, window = document["budget"], document["window"]
    title = f"ctxfit replay — {len(files):,} transcript{'s' if len(files) != 1 else ''}"
    body = [f"<h1>{escape(title)}</h1>",
            f'<p class="sub">Budget {budget:,} tokens, window {window:,} (a log naming its model uses '
            "that model's window). Rejected requests (over the window) are neither billed nor cached.</p>",
            "<h2>All transcripts</h2>", _policy_table(totals),
            bar_chart([Bar(name, totals[name]["cache_read_share"], colour=PALETTE[n % len(PALETTE)],
                           title=f"{name}: {totals[name]['cache_read']:,} of {totals[name]['total_input']:,} "
                                 "input tokens read from the cache")
                       for n, name in enumerate(names)],
                      maximum=1.0, percent=True, title="Share of input read from the prompt cache",
                      value_label="cache read ÷ input tokens of accepted requests")]
    for n, file in enumerate(files):
        if n == MAX_FILE_CHARTS:
            body.append(f'<p class="caption">{len(files) - MAX_FILE_CHARTS:,} more transcripts: their figures '
                        "are in the totals above and in --json.</p>")
            break
        body.append(_file_section(file, names, budget, window))
    return page(title, body, version=version)


def _policy_table(policies: dict) -> str:
    rows = []
    for name, p in policies.items():
        rejected = f'<td class="bad">{p["rejected"]:,}</td>' if p["rejected"] else "0"
        rows.append([f'<td class="text">{escape(name)}</td>', _int(p["calls"]), rejected, _int(p["over_budget"]),
                     _int(p["max_request"]), _int(p["total_input"]), f"{p['cache_read_share']:.1%}",
                     _int(p["cache_breaks"]), f"{p['relative_cost']:.3f}"])
    return _table(["policy", "calls", "rejected", "over budget", "largest", "input", "cache read",
                   "cache breaks", "relative cost"], rows)


def _file_section(file: dict, names: list[str], budget: int, window: int) -> str:
    own_window = file.get("window") or window
    own_budget = file.get("budget") or budget
    policies = file["policies"]
    series = []
    for name in names:
        steps = policies[name].get("steps", [])
        series.append(Series(name, [s["tokens"] for s in steps],
                             tuple(i for i, s in enumerate(steps) if s["rejected"])))
    peak = max([max(s.values, default=0) for s in series] + [own_budget])
    limits = [Limit("budget", own_budget)]
    caption = ""
    if own_window <= WINDOW_IN_VIEW * peak:
        limits.append(Limit("window", own_window, WINDOW_COLOUR, dashed=False))
    else:
        caption = f"The window ({own_window:,} tokens) is far above this chart. "
    counter = file.get("counter")
    where = f"{escape(file.get('format', ''))}" + (f", counter {escape(str(counter))}" if counter else "")
    return "".join([
        f"<h2>{escape(file['path'])}</h2>",
        f'<p class="sub">{where}; budget {own_budget:,}, window {own_window:,}</p>',
        _legend(names),
        line_chart(series, limits=limits, title="Request size per model call, by policy"),
        f'<p class="caption">{caption}Red dots: rejected requests (over the window).</p>',
        _policy_table(policies),
    ])


# --- sessions -----------------------------------------------------------------------------------


def sessions_page(rows: list[dict], *, budget: int, version: str) -> str:
    """The page for `ctxfit sessions`: `rows` are its --json rows (one per session)."""
    title = f"ctxfit sessions — {len(rows):,} session{'s' if len(rows) != 1 else ''}"
    over = sum(1 for r in rows if r["peak"] > r["window"])
    bars = [Bar(_session_label(r), r["window_share"], colour=_share_colour(r),
                note=f"{r['peak']:,} / {r['window']:,}",
                title=f"{r['id']} · {r.get('project') or '—'} · peak {r['peak']:,} tokens "
                      f"({r.get('peak_source', '')}) of a {r['window']:,} window")
            for r in rows]
    top = max([1.0] + [r["window_share"] for r in rows]) * 1.05
    body = [f"<h1>{escape(title)}</h1>",
            f'<p class="sub">Peak context of each session against its model\'s window; {over:,} went past it. '
            f"What ctxfit would have done uses a budget of {budget:,} tokens.</p>",
            bar_chart(bars, maximum=top, percent=True, limits=[Limit("window", 1.0, WINDOW_COLOUR, dashed=False)],
                      title="Peak context as a share of the window", value_label="peak ÷ window"),
            _sessions_table(rows)]
    return page(title, body, version=version)


def _session_label(row: dict) -> str:
    """Short enough for the chart's label column: the project's last folder and the id's start
    (the bar's hover title and the table below give both in full)."""
    project = (row.get("project") or "").rstrip("/\\").rsplit("/", 1)[-1]
    ident = str(row["id"])
    ident = ident if len(ident) <= 12 else ident[:8] + "…"
    return f"{project} · {ident}" if project else ident


def _share_colour(row: dict) -> str:
    return WINDOW_COLOUR if row["peak"] > row["window"] else "#E69F00" if row["peak"] > row["budget"] else PALETTE[0]


def _sessions_table(rows: list[dict]) -> str:
    table_rows = []
    for r in rows:
        ctxfit = r.get("ctxfit") or {}
        share = f"{r['window_share']:.1%}"
        table_rows.append([
            f'<td class="text">{escape(str(r["id"]))}</td>', f'<td class="text">{escape(r.get("project") or "—")}</td>',
            f'<td class="text">{escape(r.get("agent") or "—")}</td>',
            f'<td class="text">{escape(", ".join(r.get("models") or []) or "—")}</td>',
            escape((r.get("last_activity") or "—")[:16].replace("T", " ")), _int(r.get("messages")),
            _int(r["peak"]), f'<td class="bad">{share}</td>' if r["peak"] > r["window"] else share,
            _int(r.get("agent_rejected")), escape(str(ctxfit.get("stage", "—"))), _int(ctxfit.get("rejected")),
        ])
    return _table(["session", "project", "agent", "models", "last activity", "messages", "peak",
                   "of window", "rejected (agent)", "ctxfit stage", "rejected (ctxfit)"], table_rows)
