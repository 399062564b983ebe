"""The self-contained HTML report (`replay --html`, `sessions --html`): one page, inline CSS and
SVG charts, no script and nothing fetched, so it opens offline and can be mailed or archived.

Pages are built from the same plain data the commands print with `--json` (a replay with its
steps; the sessions' rows), so the page and the JSON never disagree. Every string that came from
the user's data (file names, projects, session ids, model names) is escaped. (The page's frame,
tables and legends: `html_page.py`.)

A page reads from the top down for hundreds of logs: what it covers and how many went over the
budget or the window; the worst ten; charts of the worst `top` only (every colour in a legend;
a log that made no model call gets no empty chart); then every log in a table.
"""

from __future__ import annotations

from html import escape

from .html_page import legend, number, page, summary, table
from .options import HTML_TOP
from .svg import BUDGET_COLOUR, PALETTE, WINDOW_COLOUR, Bar, Limit, Series, bar_chart, line_chart

#: Charts drawn when --top is not given: the worst this many logs.
DEFAULT_TOP = HTML_TOP
#: The worst logs listed first on a page.
WORST = 10
#: The window line is drawn when it is at most this many times the largest request or the
#: budget; further up it would flatten every line to the bottom, so the caption gives it instead.
WINDOW_IN_VIEW = 3
#: The colours of a session's bar: within the budget, over it, past the window.
WITHIN, OVER_BUDGET = PALETTE[0], "#E69F00"


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


# --- replay ---------------------------------------------------------------------------------------


def replay_page(document: dict, *, version: str, top: int = DEFAULT_TOP) -> str:
    """The page for a replay: `document` is what `ctxfit replay --json --steps` prints."""
    files = document["files"]
    totals = document["policies"]
    names = list(totals)
    budget, window = document["budget"], document["window"]
    worst = sorted(files, key=lambda f: (-_file_share(f, window), f["path"]))
    drawn = [f for f in worst if _calls(f)]
    title = f"ctxfit replay — {_plural(len(files), 'transcript')}"
    over_window = sum(1 for f in files if _largest(f) > (f.get("window") or window))
    over_budget = sum(1 for f in files if _largest(f) > (f.get("budget") or budget))
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="sub">Budget {budget:,} tokens, window {window:,} (a log naming its model uses '
        "that model's window). Rejected requests (over the window) are neither billed nor cached. "
        "A transcript's largest request is the largest any policy sent (sending everything, "
        "policy none, sends the largest).</p>",
        summary(
            [
                (f"{len(files):,}", "transcripts"),
                (f"{over_budget:,}", "with a request over the budget"),
                (f"{over_window:,}", "with a request past the window"),
                (f"{sum(_calls(f) for f in files):,}", "model calls replayed"),
            ]
        ),
        f"<h2>The worst {min(WORST, len(files))}: largest request against the window</h2>",
        _worst_files(worst[:WORST], names, window),
        "<h2>All transcripts, by policy</h2>",
        _policy_table(totals),
        legend([(PALETTE[n % len(PALETTE)], name, "bar") for n, name in enumerate(names)]),
        bar_chart(
            [
                Bar(
                    name,
                    totals[name]["cache_read_share"],
                    colour=PALETTE[n % len(PALETTE)],
                    title=f"{name}: {totals[name]['cache_read']:,} of {totals[name]['total_input']:,} "
                    "input tokens read from the cache",
                )
                for n, name in enumerate(names)
            ],
            maximum=1.0,
            percent=True,
            title="Share of input read from the prompt cache",
            value_label="cache read ÷ input tokens of accepted requests",
        ),
    ]
    if drawn:
        body.append(f"<h2>Request size per call: the worst {min(top, len(drawn))}</h2>")
        body.append(_line_legend(names))
    for file in drawn[:top]:
        body.append(_file_section(file, names, budget, window))
    left = len(drawn) - top
    idle = len(files) - len(drawn)
    if left > 0 or idle:
        parts = [
            f"{_plural(left, 'more transcript')} not charted (--top {top}; their figures are in the "
            "tables and in --json)"
            if left > 0
            else "",
            f"{_plural(idle, 'transcript')} made no model call: nothing to chart" if idle else "",
        ]
        body.append(f'<p class="caption">{escape("; ".join(p for p in parts if p))}.</p>')
    return page(title, body, version=version)


def _calls(file: dict) -> int:
    return max((len(p.get("steps", [])) for p in file["policies"].values()), default=0)


def _largest(file: dict) -> int:
    return max((p.get("max_request") or 0 for p in file["policies"].values()), default=0)


def _file_share(file: dict, window: int) -> float:
    return _largest(file) / (file.get("window") or window)


def _worst_files(files: list[dict], names: list[str], window: int) -> str:
    rows = []
    for file in files:
        own = file.get("window") or window
        share = _largest(file) / own
        rejected = " · ".join(
            f"{escape(n)} {file['policies'][n]['rejected']:,}" for n in names if n in file["policies"]
        )
        rows.append(
            [
                f'<td class="text">{escape(file["path"])}</td>',
                number(_calls(file)),
                number(_largest(file)),
                number(own),
                f'<td class="bad">{share:.1%}</td>' if share > 1 else f"{share:.1%}",
                f'<td class="text">{rejected}</td>',
            ]
        )
    return table(["transcript", "calls", "largest request", "window", "of window", "rejected, by policy"], rows)


def _line_legend(names: list[str]) -> str:
    return legend(
        [(PALETTE[n % len(PALETTE)], f"policy {name}", "line") for n, name in enumerate(names)]
        + [
            (BUDGET_COLOUR, "budget", "dashed"),
            (WINDOW_COLOUR, "window", "line"),
            (WINDOW_COLOUR, "a request the window rejects", "dot"),
        ]
    )


def _policy_table(policies: dict) -> str:
    rows = []
    for name, p in policies.items():
        rejected = f'<td class="bad">{p["rejected"]:,}</td>' if p["rejected"] else "0"
        rows.append(
            [
                f'<td class="text">{escape(name)}</td>',
                number(p["calls"]),
                rejected,
                number(p["over_budget"]),
                number(p["max_request"]),
                number(p["total_input"]),
                f"{p['cache_read_share']:.1%}",
                number(p["cache_breaks"]),
                f"{p['relative_cost']:.3f}",
            ]
        )
    return table(
        [
            "policy",
            "calls",
            "rejected",
            "over budget",
            "largest",
            "input",
            "cache read",
            "cache breaks",
            "relative cost",
        ],
        rows,
    )


def _file_section(file: dict, names: list[str], budget: int, window: int) -> str:
    own_window = file.get("window") or window
    own_budget = file.get("budget") or budget
    policies = file["policies"]
    series = []
    for name in names:
        steps = policies[name].get("steps", [])
        series.append(
            Series(name, [s["tokens"] for s in steps], tuple(i for i, s in enumerate(steps) if s["rejected"]))
        )
    peak = max([max(s.values, default=0) for s in series] + [own_budget])
    limits = [Limit("budget", own_budget)]
    caption = ""
    if own_window <= WINDOW_IN_VIEW * peak:
        limits.append(Limit("window", own_window, WINDOW_COLOUR, dashed=False))
    else:
        caption = f'<p class="caption">The window ({own_window:,} tokens) is far above this chart.</p>'
    counter = file.get("counter")
    where = f"{escape(file.get('format', ''))}" + (f", counter {escape(str(counter))}" if counter else "")
    return "".join(
        [
            f"<h2>{escape(file['path'])}</h2>",
            f'<p class="sub">{where}; budget {own_budget:,}, window {own_window:,}; '
            f"largest request {_largest(file):,} ({_largest(file) / own_window:.1%} of the window)</p>",
            line_chart(series, limits=limits, title="Request size per model call, by policy"),
            caption,
            _policy_table(policies),
        ]
    )


# --- sessions -----------------------------------------------------------------------------------


def sessions_page(rows: list[dict], *, budget: int, version: str, top: int = DEFAULT_TOP) -> str:
    """The page for `ctxfit sessions`: `rows` are its --json rows (one per session), shown in
    their order in the table at the end; the worst (largest share of the window) first above."""
    title = f"ctxfit sessions — {_plural(len(rows), 'session')}"
    over_window = sum(1 for r in rows if r["peak"] > r["window"])
    over_budget = sum(1 for r in rows if r["peak"] > r["budget"])
    worst = sorted(rows, key=lambda r: (-r["window_share"], str(r["id"])))
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="sub">Peak context of each session against its model\'s window, and what ctxfit '
        f"would have done at a budget of {budget:,} tokens.</p>",
        summary(
            [
                (f"{len(rows):,}", "sessions"),
                (f"{over_budget:,}", "went over the budget"),
                (f"{over_window:,}", "went past the window"),
                (f"{sum(r.get('agent_rejected') or 0 for r in rows):,}", "calls the window rejects"),
            ]
        ),
    ]
    if rows:
        body += [
            f"<h2>The worst {min(WORST, len(rows))}: largest share of the window</h2>",
            _sessions_table(worst[:WORST]),
            f"<h2>Peak context: the worst {min(top, len(rows))}</h2>",
            legend(
                [
                    (WITHIN, "within the budget", "bar"),
                    (OVER_BUDGET, "over the budget (ctxfit would clear)", "bar"),
                    (WINDOW_COLOUR, "past the window (the agent's calls are rejected)", "bar"),
                    (WINDOW_COLOUR, "the window (100%)", "line"),
                ]
            ),
            _share_chart(worst[:top]),
        ]
        if len(rows) > top:
            body.append(
                f'<p class="caption">{_plural(len(rows) - top, "more session")} below the chart '
                f"(--top {top}): all are in the table.</p>"
            )
        body += [f"<h2>All {_plural(len(rows), 'session')}</h2>", _sessions_table(rows)]
    return page(title, body, version=version)


def _share_chart(rows: list[dict]) -> str:
    bars = [
        Bar(
            _session_label(r),
            r["window_share"],
            colour=_share_colour(r),
            note=f"{r['peak']:,} / {r['window']:,}",
            title=f"{r['id']} · {r.get('project') or '—'} · peak {r['peak']:,} tokens "
            f"({r.get('peak_source', '')}) of a {r['window']:,} window",
        )
        for r in rows
    ]
    top = max([1.0] + [r["window_share"] for r in rows]) * 1.05
    return bar_chart(
        bars,
        maximum=top,
        percent=True,
        limits=[Limit("window", 1.0, WINDOW_COLOUR, dashed=False)],
        title="Peak context as a share of the window",
        value_label="peak ÷ window",
    )


def _session_label(row: dict) -> str:
    """Short enough for the chart's label column: the project's last folder and the id's start
    (the bar's hover title and the table below give both in full)."""
    project = (row.get("project") or "").rstrip("/\\").rsplit("/", 1)[-1]
    ident = str(row["id"])
    ident = ident if len(ident) <= 12 else ident[:8] + "…"
    return f"{project} · {ident}" if project else ident


def _share_colour(row: dict) -> str:
    return WINDOW_COLOUR if row["peak"] > row["window"] else OVER_BUDGET if row["peak"] > row["budget"] else WITHIN


def _sessions_table(rows: list[dict]) -> str:
    table_rows = []
    for r in rows:
        ctxfit = r.get("ctxfit") or {}
        share = f"{r['window_share']:.1%}"
        table_rows.append(
            [
                f'<td class="text">{escape(str(r["id"]))}</td>',
                f'<td class="text">{escape(r.get("project") or "—")}</td>',
                f'<td class="text">{escape(r.get("agent") or "—")}</td>',
                f'<td class="text">{escape(", ".join(r.get("models") or []) or "—")}</td>',
                escape((r.get("last_activity") or "—")[:16].replace("T", " ")),
                number(r.get("messages")),
                number(r["peak"]),
                f'<td class="bad">{share}</td>' if r["peak"] > r["window"] else share,
                number(r.get("agent_rejected")),
                escape(str(ctxfit.get("stage", "—"))),
                number(ctxfit.get("rejected")),
            ]
        )
    return table(
        [
            "session",
            "project",
            "agent",
            "models",
            "last activity",
            "messages",
            "peak",
            "of window",
            "rejected (agent)",
            "ctxfit stage",
            "rejected (ctxfit)",
        ],
        table_rows,
    )
