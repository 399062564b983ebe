"""The parts every HTML report page shares: the page itself (inline CSS, no script), tables that
fit the screen, legends and the summary line. The pages are in `html_report.py`.

Layout: the page is at most 1,400 px wide. A table never scrolls sideways and never hides a
column: text cells wrap, and on a narrow screen (a phone) each row becomes a card whose cells say
which column they are (`data-label`). Charts scale down with the page.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

TEXT = ' class="text"'
#: Below this width a table's rows are shown as cards, one cell per line.
STACK_BELOW = 760

STYLE = """
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f;
       margin: 24px auto; max-width: 1400px; padding: 0 16px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 6px; overflow-wrap: anywhere; }
p.sub, p.caption { color: #555; margin: 4px 0 10px; }
ul.summary { list-style: none; padding: 0; margin: 10px 0 16px; display: flex; flex-wrap: wrap; gap: 8px 12px; }
ul.summary li { border: 1px solid #e3e3e3; border-radius: 6px; padding: 6px 12px; background: #fafafa;
              flex: 0 1 auto; min-width: 140px; }
ul.summary strong { font-size: 18px; display: block; font-variant-numeric: tabular-nums; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 13px; font-variant-numeric: tabular-nums;
        width: 100%; }
th, td { padding: 3px 8px; border-bottom: 1px solid #e3e3e3; text-align: right; vertical-align: top; }
td { white-space: nowrap; }
th { font-weight: 600; background: #f6f6f6; }
th.text, td.text { text-align: left; white-space: normal; overflow-wrap: anywhere; }
.bad { color: #C62828; font-weight: 600; } .warn { color: #9a6700; }
svg.chart { display: block; max-width: 100%; height: auto; background: #fcfcfc; border: 1px solid #eee; }
svg .title { font: 600 13px system-ui, sans-serif; fill: #1d1d1f; }
svg .tick, svg .bar-note { font: 11px system-ui, sans-serif; fill: #555; }
svg .label, svg .bar-label { font: 12px system-ui, sans-serif; fill: #333; }
svg .limit { font: 600 11px system-ui, sans-serif; }
svg .grid { stroke: #e6e6e6; stroke-width: 1; } svg .axis { stroke: #888; stroke-width: 1; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 6px 0 8px; padding: 0; list-style: none; }
.legend i { display: inline-block; width: 14px; height: 10px; vertical-align: middle; margin-right: 6px; }
.legend i.line { height: 3px; } .legend i.dashed { height: 0; border-top: 2px dashed; background: none; }
.legend i.dot { width: 9px; height: 9px; border-radius: 50%; }
footer { color: #777; margin-top: 30px; font-size: 12px; }
@media (max-width: STACK_BELOWpx) {
  table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; width: 100%; }
  table.stack thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table.stack tr { border: 1px solid #e3e3e3; border-radius: 6px; margin: 0 0 10px; padding: 4px 8px; }
  table.stack td { border: none; padding: 2px 0; text-align: right; white-space: normal; overflow-wrap: anywhere; }
  table.stack td::before { content: attr(data-label); float: left; color: #555; padding-right: 10px; text-align: left; }
  table.stack td:first-child { font-weight: 600; text-align: left; }
  table.stack td:first-child::before { content: none; }
}
""".replace("STACK_BELOW", str(STACK_BELOW))


def page(title: str, body: Iterable[str], *, version: str) -> str:
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            # Nothing may be fetched: not even a favicon request (it would be a console error offline).
            '<link rel="icon" href="data:,">',
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
            *body,
            f"<footer>Made by ctxfit {escape(version)}. Self-contained: no script, nothing loaded from "
            "the network.</footer></body></html>\n",
        ]
    )


def table(header: list[str], rows: list[list[str]], *, css: str = "") -> str:
    """A table that fits the page: cells are HTML already (escape text before; a cell written as
    `<td class="text">…</td>` is text, aligned left and wrapped). Each cell carries its column's
    name, which a phone shows beside it when the rows become cards."""
    first = rows[0] if rows else []
    text = [i < len(first) and first[i].startswith('<td class="text"') for i in range(len(header))]
    head = "".join(f"<th{TEXT if text[i] else ''}>{escape(h)}</th>" for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(_cell(cell, header[i]) for i, cell in enumerate(row)) + "</tr>" for row in rows)
    return f'<table class="stack {css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _cell(cell: str, column: str) -> str:
    label = f' data-label="{escape(column)}"'
    if cell.startswith("<td"):
        return "<td" + label + cell[3:]
    return f"<td{label}>{cell}</td>"


def legend(items: list[tuple[str, str, str]]) -> str:
    """A legend: (colour, what it marks, how it is drawn: "bar", "line", "dashed" or "dot")."""
    entries = "".join(
        f'<li><i class="{kind}" style="{"border-color" if kind == "dashed" else "background"}:'
        f'{colour}"></i>{escape(name)}</li>'
        for colour, name, kind in items
    )
    return f'<ul class="legend">{entries}</ul>'


def summary(items: list[tuple[str, str]]) -> str:
    """The figures a page opens with: (value, what it counts), each in its own box."""
    boxes = "".join(f"<li><strong>{escape(value)}</strong>{escape(name)}</li>" for value, name in items)
    return f'<ul class="summary">{boxes}</ul>'


def number(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"
