"""`ctxfit sessions` as text: a table when it fits the width, one card per session when not.

Numbers are never shortened or broken: only the text columns (project, model) give up width,
down to a few characters each; when even that is too wide (a 40-column terminal), each session
becomes a short block of `name: value` lines, long text values folded onto following lines.
"""

from __future__ import annotations

import os
import re
import shutil
import textwrap
from collections.abc import Iterable
from typing import TextIO

#: The widest the layout gets, on any terminal: a compact table reads better than a wide one.
DEFAULT_WIDTH = 100
#: The least a shortened text column keeps.
MIN_TEXT = 6
AGENT_SHORT = {"Claude Code": "claude", "Codex": "codex", "OpenHands": "openhands", "SWE-agent": "swe-agent"}

LEGEND = (
    "PEAK: the largest request (r = recorded by the agent's log, e = estimated); WIN: its share of "
    "the model's window; CMP: compactions; CTXFIT: the stage ctxfit reaches at the budget "
    "(clear, turns, rounds) and "
    "the results cleared in the last request; REJ: calls over the window when everything is sent "
    "(the agent) / with ctxfit; COST: what the log records it was billed for, in dollars."
)


def width(out: TextIO) -> int:
    """COLUMNS when set, else the terminal's width, at most `DEFAULT_WIDTH` (also the width
    in a pipe)."""
    if os.environ.get("COLUMNS", "").isdigit():
        columns = int(os.environ["COLUMNS"])
    elif out.isatty():
        columns = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    else:
        columns = DEFAULT_WIDTH
    return max(20, min(columns, DEFAULT_WIDTH))


def short_model(name: str) -> str:
    """'anthropic/claude-sonnet-4-20250514' -> 'claude-sonnet-4'."""
    name = name.rsplit("/", 1)[-1]
    return re.sub(r"-\d{8}$", "", name)


def session_label(session_id: str) -> str:
    """A session id as the table shows it: a UUID's first 8 characters (as Claude Code and Codex
    show them), an instance id without its owner and run time, a file's name without its digest.

    >>> session_label("5c0375b4-57a5-4f26-b12d-d022ee4e51b7"), session_label("ponylang__ponyc-4595@2025-04-30")
    ('5c0375b4', 'ponyc-4595')
    """
    session_id = session_id.split("/")[-1].split("@")[0].split("#")[0]
    session_id = session_id.split("__", 1)[-1]  # a SWE-bench instance: owner__repo-number
    if re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", session_id):
        return session_id[:8]
    return session_id


def _number(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def session_cells(row: dict) -> dict[str, str]:
    stage = row["ctxfit"]["stage"]
    ctxfit = "—" if stage == "none" else f"{stage} {row['ctxfit']['cleared']:,}" if row["ctxfit"]["cleared"] else stage
    return {
        "SESSION": session_label(row["id"]),
        "AGENT": AGENT_SHORT.get(row["agent"], row["agent"]),
        "PROJECT": os.path.basename(row["project"].rstrip("/")) or row["project"] or "—",
        "MODEL": ", ".join(short_model(m) for m in row["models"]) or "—",
        "LAST": (row["last_activity"] or "—")[:10],
        "MSGS": _number(row["messages"]),
        "CMP": _number(row["compactions"]),
        "PEAK": f"{row['peak']:,}{'r' if row['peak_source'] == 'recorded' else 'e'}",
        "WIN": f"{row['window_share']:.0%}",
        "CTXFIT": ctxfit,
        "REJ": f"{row['agent_rejected']:,}/{row['ctxfit']['rejected']:,}",
        "COST": dollars(row["cost"]["usd"]),
    }


def dollars(usd: float | None) -> str:
    """'$12.34' (cents below $100, whole dollars above), '—' when nothing could be priced."""
    if usd is None:
        return "—"
    return f"${usd:,.2f}" if usd < 100 else f"${usd:,.0f}"


def being_written(rows: list[dict]) -> list[str]:
    """A line for each session whose log is still being written (the running session)."""
    return [
        f"{session_label(row['id'])}: still being written ({'; '.join(row['still_being_written'])}); "
        "read up to its last complete record"
        for row in rows
        if row["still_being_written"]
    ]


def group_cells(group: dict) -> dict[str, str]:
    return {
        "GROUP": group["key"],
        "SESSIONS": _number(group["sessions"]),
        "MSGS": _number(group["messages"]),
        "CALLS": _number(group["calls"]),
        "CMP": _number(group["compactions"]),
        "PEAK": _number(group["peak"]),
        "WIN": f"{group['window_share']:.0%}",
        "REJ": f"{group['rejected_agent']:,}/{group['rejected_ctxfit']:,}",
        "LAST": (group["last_activity"] or "—")[:10],
        "COST": dollars(group["usd"]),
    }


#: Columns whose text may be shortened (with "…"); every other column keeps its full values.
SHRINKABLE = ("SESSION", "PROJECT", "MODEL", "GROUP")
#: Shortened from the left: the end of an instance id, or of a project's path, is what tells two apart.
FROM_LEFT = ("SESSION", "GROUP")
LEFT = ("SESSION", "AGENT", "PROJECT", "MODEL", "LAST", "CTXFIT", "GROUP")


def render(rows: list[dict[str, str]], total_width: int) -> list[str]:
    """A table of these cells if it fits `total_width`, else cards."""
    if not rows:
        return []
    names = list(rows[0])
    widths = {n: max(len(n), *(len(r[n]) for r in rows)) for n in names}
    excess = sum(widths.values()) + len(names) - 1 - total_width
    while excess > 0:  # take from the widest text column, one character at a time
        room = {n: widths[n] - max(MIN_TEXT + 2, len(n)) for n in SHRINKABLE if n in widths}
        name = max(room, key=room.__getitem__, default=None)
        if name is None or room[name] <= 0:
            break
        widths[name] -= 1
        excess -= 1
    if excess > 0:
        return _cards(rows, total_width)
    lines = [" ".join(_cell(n, n, widths[n]) for n in names).rstrip()]
    lines += [" ".join(_cell(r[n], n, widths[n]) for n in names).rstrip() for r in rows]
    return lines


def _cell(text: str, name: str, size: int) -> str:
    if len(text) > size:
        text = "…" + text[len(text) - size + 1 :] if name in FROM_LEFT else text[: size - 1] + "…"
    return text.ljust(size) if name in LEFT else text.rjust(size)


def _cards(rows: list[dict[str, str]], total_width: int) -> list[str]:
    label = max(len(n) for n in rows[0]) + 2
    lines: list[str] = []
    for row in rows:
        for name, value in row.items():
            head = f"{name.lower()}:".ljust(label)
            room = max(total_width - label, 8)
            chunks = textwrap.wrap(value, room, break_on_hyphens=False) or [""]
            lines.append(head + chunks[0])
            lines += [" " * label + chunk for chunk in chunks[1:]]
        lines.append("")
    return lines


GROUP_LEGEND = (
    "PEAK: the largest request of any session in the group; WIN: its share of the model's "
    "window; CMP: compactions; REJ: calls over the window when everything is sent (the agent) / "
    "with ctxfit at the budget; COST: the recorded usage in dollars (by model: that model's calls)."
)


def legend(total_width: int, *, grouped: bool = False, prices: str = "") -> list[str]:
    """The legend; `prices`: which price table COST used (its date and where it came from)."""
    text = (GROUP_LEGEND if grouped else LEGEND) + (f" Prices: {prices}." if prices else "")
    return textwrap.wrap(text, total_width, break_on_hyphens=False)


def prices_label(date: str, source: str, rows: Iterable[dict] = ()) -> str:
    """'of 2026-12-07 (ctxfit's table; --prices FILE to change)', and where the price of each
    model the table lacks came from (the providers' catalog, a family's newest model).

    >>> prices_label("2026-12-07", "shipped", [{"cost": {"priced_by": {"claude-fable-5": "claude-fable-5 in X"}}}])
    "of 2026-12-07 (ctxfit's table; --prices FILE to change); claude-fable-5: claude-fable-5 in X"
    """
    where = "ctxfit's table; --prices FILE to change" if source == "shipped" else source
    others: dict[str, str] = {}
    for row in rows:
        others.update(row["cost"].get("priced_by") or {})
    return f"of {date} ({where})" + "".join(f"; {model}: {why}" for model, why in sorted(others.items()))
