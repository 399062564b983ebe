"""The replay's report on a terminal: each policy's row, what the columns mean, and the request
sizes per call as a chart. Built on `render.py`'s console and tables."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from .render import number, table


def replay_table(out: Console, rows: list[tuple[str, dict]], *, title: str) -> None:
    """One row per policy: the numbers a team compares before changing its policy."""
    result = table(
        "policy",
        "calls",
        "rejected",
        "over",
        "largest",
        "input",
        "cached",
        "bound",
        "breaks",
        "cost",
        title=title,
        compact=True,
    )  # ten columns: compact keeps them within ~84
    for name, row in rows:
        result.add_row(
            name,
            number(row["calls"]),
            Text(number(row["rejected"]), style="bold red" if row["rejected"] else ""),
            number(row["over_budget"]),
            number(row["max_request"]),
            number(row["total_input"]),
            f"{row['cache_read_share']:.1%}",
            f"{row['share_of_bound']:.0%}",
            number(row["cache_breaks"]),
            dollars_or_relative(row),
        )
    out.print(result)


def dollars_or_relative(row: dict) -> str:
    """A policy's input cost: '$1.23 (−$0.45)' with what it saves against sending everything,
    or the relative cost where the model has no price."""
    if row.get("usd") is None:
        return f"{row['relative_cost']:.3f}"
    saves: float | None = row.get("saves_usd")
    if saves is None or abs(saves) < 0.005:
        return f"${row['usd']:,.2f}"
    return f"${row['usd']:,.2f} ({'−' if saves >= 0 else '+'}${abs(saves):,.2f})"


REPLAY_LEGEND = (
    "  rejected: over the window · over: over the budget · input: tokens of accepted requests · "
    "cached: share read from the prompt cache · bound: cached over the most any policy sending the "
    "same content could read (each request reusing all of the previous one it still sends) · "
    "breaks: requests that did not reuse all of the "
    "previous one · cost: the input in dollars at the model's prices (what the policy saves against "
    "sending everything, policy none, in brackets; the replies cost the same under every policy), "
    "or, for a model without a price, relative to sending the input uncached"
)


def size_chart(
    out: Console, name: str, sizes: list[int], *, budget: int, window: int, width: int = 72, height: int = 8
) -> None:
    """Request size per call as columns, with the budget (┈) and the window (━) marked."""
    if not sizes:
        return
    columns = min(width, len(sizes))
    per_column = len(sizes) / columns
    buckets = [
        max(sizes[int(c * per_column) : max(int((c + 1) * per_column), int(c * per_column) + 1)])
        for c in range(columns)
    ]
    top = max(window, max(buckets)) * 1.05
    row_of = lambda value: min(height - 1, int(value / top * height))
    budget_row, window_row = row_of(budget), row_of(window)
    out.print(Text(f"  {name}: request size per call (1 column = {per_column:.1f} calls)", style="bold"))
    for row in range(height - 1, -1, -1):
        label = "window" if row == window_row else "budget" if row == budget_row else ""
        line = Text(f"  {label:>6} │")
        for value in buckets:
            filled = value > 0 and row_of(value) >= row
            if filled:
                style = "red" if value > window else "yellow" if value > budget else "green"
                line.append("█", style=style)
            elif row == window_row:
                line.append("━", style="red")
            elif row == budget_row:
                line.append("┈", style="yellow")
            else:
                line.append(" ")
        out.print(line)
    out.print(Text("         └" + "─" * columns + f" call {len(sizes):,}"))
