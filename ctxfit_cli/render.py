"""Human-readable reports with rich: tables that read well on a terminal and survive a pipe.

Only the CLI calls this module. Every string that came from the user's data is escaped, so
`[brackets]` in a tool name are shown, not eaten as markup.
"""

from __future__ import annotations

import shutil
import sys
from typing import TextIO

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

#: Width used when the output is not a terminal: wide enough that no table wraps in a file.
PIPE_WIDTH = 120


def console(file: TextIO) -> Console:
    """A console for `file`: terminal width on a terminal, a fixed width and no colour in a pipe."""
    is_tty = file.isatty()
    return Console(
        file=file,
        width=None if is_tty else PIPE_WIDTH,
        color_system="auto" if is_tty else None,
        highlight=False,
        soft_wrap=False,
        emoji=False,
    )


def stderr_console() -> Console:
    return console(sys.stderr)


def number(value: int | float | None) -> str:
    return "—" if value is None else f"{value:,}"


def share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "—"


def signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1%}"


def limit_line(tokens: int, budget: int, window: int) -> Text:
    """'123,456 tokens — 30.9% of the 400,000 budget, 12.3% of the 1,000,000 window', highlighted."""
    style = "bold red" if tokens > window else "bold yellow" if tokens > budget else "bold green"
    text = Text()
    text.append(f"{tokens:,} tokens", style=style)
    text.append(f" — {share(tokens, budget)} of the {budget:,} budget, {share(tokens, window)} of the {window:,} window")
    if tokens > window:
        text.append("  OVER THE WINDOW", style="bold red")
    elif tokens > budget:
        text.append("  over budget", style="bold yellow")
    return text


def table(*columns: str, title: str | None = None) -> Table:
    """A compact table; columns after the first are right-aligned numbers unless named with '<'."""
    result = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for i, name in enumerate(columns):
        left = i == 0 or name.startswith("<")
        result.add_column(name.lstrip("<"), justify="left" if left else "right", no_wrap=not left)
    return result


def estimate_report(out: Console, report: dict, *, budget: int, window: int) -> None:
    """The `ctxfit estimate` report for one file (or the total)."""
    title = escape(report["path"]) if "path" in report else f"Total of {report['files']} inputs"
    detail = f"{report['format']}, " if "format" in report else ""
    out.print(Text.assemble((title, "bold"), f"  ({detail}{report['messages']:,} messages, counter: {report.get('counter', 'seed')})"))
    out.print(Text("  ").append_text(limit_line(report["tokens"], budget, window)))
    out.print(f"  chars ÷ 4 would say {report['naive_tokens']:,} ({signed(report['naive_error'])} against this estimate)")
    scripts = table("script", "chars", "tokens", "chars/token", "share")
    for name, row in report["by_script"].items():
        scripts.add_row(name, number(row["chars"]), number(row["tokens"]),
                        number(row["chars_per_token"]), share(row["tokens"], report["tokens"]))
    kinds = table("kind", "tokens", "share")
    for name, tokens in report["by_kind"].items():
        if tokens:
            kinds.add_row(name.replace("_", " "), number(tokens), share(tokens, report["tokens"]))
    out.print(scripts)
    out.print(kinds)
    if report.get("top"):
        top = table("#", "<role", "<tool", "tokens", title="  largest messages")
        for item in report["top"]:
            top.add_row(str(item["index"]), item["role"], escape(item["tool"] or ""), number(item["tokens"]))
        out.print(top)
    out.print()


def terminal_width() -> int:
    return shutil.get_terminal_size((PIPE_WIDTH, 24)).columns
