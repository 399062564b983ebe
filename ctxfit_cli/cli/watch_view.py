"""How `ctxfit watch` shows the sessions being written: a table that fits 80 columns, one line
for Claude Code's status line, and the keyboard of the live view (the numbers:
`fleet/live.py`).

Sizes are shortened as ccusage and Claude Code show them (`106.1k`); the share of the window is
coloured as the other reports colour it (green, then yellow from the agent's compaction
threshold or 80%, red past the window).
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from .sessions_view import session_label, short_model

#: Keys that end the live view.
QUIT_KEYS = ("q", "Q", "\x03")
#: The share of the window from which a session is shown in yellow when its agent has no
#: compaction threshold.
WARN_SHARE = 0.8


def short(tokens: int | float | None) -> str:
    """Token counts as agents show them.

    >>> short(950), short(106_112), short(200_000), short(1_048_576), short(None)
    ('950', '106.1k', '200k', '1.05M', '—')
    """
    if tokens is None:
        return "—"
    if abs(tokens) >= 1_000_000:
        return f"{tokens / 1_000_000:.3g}M"
    if abs(tokens) >= 1_000:
        return f"{tokens / 1_000:.1f}".removesuffix(".0") + "k"
    return f"{tokens:.0f}"


def _style(row: dict) -> str:
    if row["tokens"] > row["window"]:
        return "bold red"
    threshold = row["compacts_at"] or WARN_SHARE * row["window"]
    return "yellow" if row["tokens"] >= threshold else "green"


def _left(calls: int | None) -> str:
    return "—" if calls is None else f"{calls:,}"


def label(row: dict, width: int = 80) -> str:
    """'project · 4d5611e5': the project's last folder and the session's short id, the project
    cut short first (the id tells sessions of one project apart).

    >>> label({"project": "/w/agent-workflows-monorepo", "id": "06381696-0074-49f8-863e-6ad4fac507f9",
    ...        "path": "x.jsonl"}, 18)
    'agent-… · 06381696'
    """
    project = (row.get("project") or "").rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    ident = session_label(row.get("id") or "") or os.path.basename(row["path"])
    room = width - len(ident) - 3
    if project and len(project) > room:
        project = project[: room - 1] + "…" if room > 1 else ""
    return f"{project} · {ident}" if project else ident


COLUMNS = ("session", "model", "now", "of window", "+/call", "compacts in", "full in")
#: The model column is at most this wide (its name's end is the least telling part).
MODEL_WIDTH = 16


def table(rows: list[dict], *, width: int, limit: int | None = None) -> Table:
    """The sessions as a table `width` columns wide at most: every column stays, the session and
    model names give way (cut with "…"). "compacts in" and "full in" count calls at the recent
    growth per call."""
    cells = [_cells(row) for row in rows[:limit]]
    widths = [max([len(name)] + [len(_plain(c[n])) for c in cells]) for n, name in enumerate(COLUMNS)]
    widths[1] = min(widths[1], MODEL_WIDTH)
    spaces = len(COLUMNS) - 1  # one between two columns
    widths[0] = max(min(widths[0], width - sum(widths[1:]) - spaces), 8)
    if sum(widths) + spaces > width:  # narrower than 80: the model gives way too
        widths[1] = max(width - (sum(widths) - widths[1]) - spaces, 5)
    for row, cell in zip(rows, cells):
        cell[0] = label(row, widths[0])
    result = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=0, expand=False)
    for n, name in enumerate(COLUMNS):
        result.add_column(
            name, justify="left" if n < 2 else "right", no_wrap=True, overflow="ellipsis", width=widths[n]
        )
    for cell_row in cells:
        result.add_row(*cell_row)
    return result


def _plain(cell: object) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _cells(row: dict) -> list:
    style = _style(row)
    return [
        label(row),
        short_model(row.get("model") or "") or row["agent"],
        Text(short(row["tokens"]), style=style),
        Text(f"{row['window_share']:.0%} of {short(row['window'])}", style=style),
        "—" if row["growth_per_call"] is None else "+" + short(row["growth_per_call"]),
        _left(row["calls_to_compaction"]),
        _left(row["calls_to_window"]),
    ]


def proxy_line(proxy: dict | None) -> Text:
    if proxy is None:
        return Text("no ctxfit proxy answering", style="dim")
    return Text(
        f"proxy {proxy['url']}: {proxy['requests']:,} requests, {proxy['fitted']:,} fitted, "
        f"{proxy['rejected']:,} rejected; cleared {proxy['results_cleared']:,} results "
        f"({short(proxy['tokens_cleared'])} tokens)"
    )


def screen(rows: list[dict], proxy: dict | None, *, width: int, height: int, live: bool = True) -> Group:
    """The whole view: a title line, the table (as many rows as the terminal holds), the
    proxy's line and, live, how to quit."""
    shown = max(height - 7, 1)
    title = Text(f"ctxfit watch · {len(rows):,} session{'s' if len(rows) != 1 else ''}", style="bold")
    parts: list = [title]
    if rows:
        parts.append(table(rows, width=width, limit=shown))
        if len(rows) > shown:
            parts.append(Text(f"… {len(rows) - shown:,} more (--once --json lists them all)", style="dim"))
    else:
        parts.append(Text("no session written to recently; give a log or a folder (ctxfit watch PATH)"))
    parts.append(proxy_line(proxy))
    if live:
        parts.append(Text(f"updated {datetime.now():%H:%M:%S} · q quits", style="dim"))
    return Group(*parts)


def status_line(row: dict | None, proxy: dict | None) -> str:
    """One short line for Claude Code's status line.

    >>> status_line({"tokens": 106112, "window": 200000, "window_share": 0.5306, "growth_per_call": 1700,
    ...     "calls_to_compaction": 35, "calls_to_window": 55, "compacts_at": 167000}, None)
    'ctx 106.1k/200k (53%) · +1.7k/call · compacts in ~35 calls'
    """
    if row is None:
        return "ctx —"
    parts = [f"ctx {short(row['tokens'])}/{short(row['window'])} ({row['window_share']:.0%})"]
    if row["growth_per_call"] is not None:
        parts.append(f"+{short(row['growth_per_call'])}/call")
    if row["compacts_at"] is not None and row["calls_to_compaction"] is not None:
        parts.append(
            "compacting" if row["calls_to_compaction"] == 0 else f"compacts in ~{row['calls_to_compaction']:,} calls"
        )
    elif row["calls_to_window"] is not None:
        parts.append(f"window in ~{row['calls_to_window']:,} calls")
    if proxy is not None and proxy["results_cleared"]:
        parts.append(f"proxy cleared {proxy['results_cleared']:,}")
    return " · ".join(parts)


@contextmanager
def keys() -> Iterator[Keys]:
    """The terminal in cbreak mode (a key is read without Enter, Ctrl-C still interrupts), put
    back as it was however the view ends. Without a terminal, no key is ever read."""
    if not sys.stdin.isatty():
        yield Keys(None)
        return
    import termios  # (POSIX terminals only: loaded when the live view runs in one)
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        yield Keys(fd)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


class Keys:
    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def quit_within(self, seconds: float) -> bool:
        """Wait up to `seconds` for a key; whether it asks to quit."""
        if self.fd is None:
            select.select([], [], [], seconds)
            return False
        ready, _, _ = select.select([self.fd], [], [], seconds)
        if not ready:
            return False
        return os.read(self.fd, 32).decode(errors="replace")[-1:] in QUIT_KEYS
