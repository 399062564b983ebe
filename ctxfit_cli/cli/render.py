"""Human-readable reports with rich: tables that read well on a terminal and survive a pipe.

Only the CLI calls this module. Every string that came from the user's data is escaped, so
`[brackets]` in a tool name are shown, not eaten as markup.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from typing import Literal, TextIO

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

#: Width used when the output is not a terminal: wide enough that no table wraps in a file.
PIPE_WIDTH = 200


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich exits with 1; the CLI treats a reader that went away as success (exit 0).
        self.quiet = True
        raise BrokenPipeError


ColourSystem = Literal["auto", "standard", "256", "truecolor", "windows"]
#: FORCE_COLOR levels as Node's tools and chalk read them; any other non-empty value is 16 colours.
_FORCED_COLOURS: dict[str, ColourSystem] = {"2": "256", "3": "truecolor"}


def colour_system(is_tty: bool, environ: Mapping[str, str] = os.environ) -> ColourSystem | None:
    """Colours on a terminal, none in a pipe; NO_COLOR (no-color.org) turns them off everywhere,
    FORCE_COLOR (force-color.org) turns them on in a pipe too (e.g. CI logs that show colour).

    >>> colour_system(False, {"FORCE_COLOR": "1"}), colour_system(True, {"NO_COLOR": "1"})
    ('standard', None)
    """
    if environ.get("NO_COLOR"):
        return None
    forced = environ.get("FORCE_COLOR")
    if forced and forced != "0":
        return "auto" if is_tty else _FORCED_COLOURS.get(forced, "standard")
    return "auto" if is_tty else None


def console(file: TextIO) -> Console:
    """A console for `file`: terminal width on a terminal, a fixed width and no colour in a pipe
    (unless FORCE_COLOR says otherwise)."""
    is_tty = file.isatty()
    return _Console(
        file=file,
        width=None if is_tty else PIPE_WIDTH,
        color_system=colour_system(is_tty),
        # FORCE_COLOR asks for colour, not for a terminal: rich would otherwise treat a pipe as
        # one (cursor moves, live progress) when it sees the variable.
        force_terminal=is_tty,
        highlight=False,
        soft_wrap=not is_tty,  # in a file or pipe, a line is never broken
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
    text.append(
        f" — {share(tokens, budget)} of the {budget:,} budget, {share(tokens, window)} of the {window:,} window"
    )
    if tokens > window:
        text.append("  OVER THE WINDOW", style="bold red")
    elif tokens > budget:
        text.append("  over budget", style="bold yellow")
    return text


class ReportTable(Table):
    """A table whose numbers are never shortened: each right-aligned column is at least as wide
    as its widest value, so on a narrow terminal only text columns give way."""

    def add_row(self, *cells, **options) -> None:
        super().add_row(*cells, **options)
        for i, (column, cell) in enumerate(zip(self.columns, cells)):
            if (i == 0 or column.justify == "right") and cell is not None:
                width = len(cell.plain if isinstance(cell, Text) else str(cell))
                column.min_width = max(column.min_width or 0, width)


def table(*columns: str, title: str | None = None, compact: bool = False) -> ReportTable:
    """A compact table. Column names say how a column behaves on a narrow terminal:
    plain — a right-aligned number, never shortened; ``<name`` — text that may be shortened with
    an ellipsis; ``~name`` — text that may wrap. The first column is left-aligned text, never
    shortened (it says what the row is)."""
    # The box puts one space between columns; one more reads better where the width allows.
    result = ReportTable(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=0 if compact else (0, 0, 0, 1)
    )
    for i, name in enumerate(columns):
        if name[0] in "<~" or i == 0:
            label = name.lstrip("<~")
            # Wrappable, so rich may narrow it; a single long word (an id) is cut with "…".
            result.add_column(
                label,
                justify="left",
                no_wrap=False,
                overflow="fold" if name.startswith("~") else "ellipsis",
                min_width=len(label) if i == 0 else 4,
            )
        else:
            result.add_column(name, justify="right", no_wrap=True, min_width=len(name))
    return result


def estimate_report(out: Console, report: dict, *, budget: int, window: int) -> None:
    """The `ctxfit estimate` report for one file (or the total)."""
    title = report["path"] if "path" in report else f"Total of {report['files']} inputs"
    detail = f"{report['format']}, " if "format" in report else ""
    out.print(
        Text.assemble(
            (title, "bold"), f"  ({detail}{report['messages']:,} messages, counter: {report.get('counter', 'seed')})"
        )
    )
    if report.get("still_being_written"):
        out.print(
            Text(
                f"  still being written ({'; '.join(report['still_being_written'])}): "
                "read up to its last complete record"
            )
        )
    out.print(Text("  ").append_text(limit_line(report["tokens"], budget, window)))
    out.print(
        f"  chars ÷ 4 would say {report['naive_tokens']:,} ({signed(report['naive_error'])} against this estimate)"
    )
    usage_lines(out, report)
    scripts = table("script", "chars", "tokens", "chars/token", "share")
    for name, row in report["by_script"].items():
        scripts.add_row(
            name,
            number(row["chars"]),
            number(row["tokens"]),
            number(row["chars_per_token"]),
            share(row["tokens"], report["tokens"]),
        )
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


def estimate_total(out: Console, total: dict) -> None:
    """The total over many inputs: how many conversations, how big all of them are together,
    and the largest one against the budget and its window (a sum of conversations is never one
    request), with the counters the files were counted with."""
    largest = total["largest"]
    out.print(
        Text.assemble(
            (f"Total of {total['files']:,} conversations", "bold"),
            f"  ({total['messages']:,} messages, {total['tokens']:,} tokens together; "
            "each conversation is its own request)",
        )
    )
    out.print(
        Text(f"  largest: {largest['path']}")
        .append(": ")
        .append_text(limit_line(largest["tokens"], largest["budget"], largest["window"]))
    )
    over_budget, over_window = total["over_budget"], total["over_window"]
    out.print(f"  over the budget: {over_budget:,} of {total['files']:,}; over their window: {over_window:,}")
    out.print("  counters: " + ", ".join(f"{escape(name)} ({count:,})" for name, count in total["counters"].items()))
    if total.get("cost_usd") is not None:
        out.print(
            f"  recorded cost: ${total['cost_usd']:,.2f} (the usage the logs record, at the prices "
            f"of {total['prices_date']})"
        )
    out.print()


def usage_lines(out: Console, report: dict) -> None:
    """Counter and window used (and why), the unlogged fixed part, and what the log recorded."""
    if "counter_reason" not in report:
        return
    if report["counter_reason"] != "given" or report["window_source"] != "default":
        # (the seed rule and default window of a plain chat are already in the lines above)
        if not report["counter_reason"].startswith("seed rule") or report["window_source"] != "default":
            out.print(
                f"  counter: {escape(report['counter'])} ({escape(report['counter_reason'])}); "
                f"window: {report['window']:,} ({escape(report['window_source'])})"
            )
    unlogged = report["unlogged"]
    if unlogged["tokens"]:
        how = "inferred from the first recorded call" if unlogged["source"] == "inferred" else "given"
        out.print(
            f"  unlogged fixed part (system prompt, tools, injected context): {unlogged['tokens']:,} tokens, {how}"
        )
    recorded = report.get("recorded")
    if recorded:
        models = ", ".join(recorded["models"]) or "model not named"
        out.print(
            f"  recorded by the log: last prompt {recorded['last_prompt']:,} tokens, peak "
            f"{recorded['peak_prompt']:,}, over {recorded['calls']:,} calls ({escape(models)})"
        )
        anchored = recorded.get("next_request")
        if anchored:
            out.print(
                f"  next request: {parts(anchored['confirmed'], anchored['tokens'])} "
                "(the last recorded prompt + what the log added since)"
            )
        if recorded.get("last_prompt_estimate"):
            estimate = recorded["last_prompt_estimate"]
            out.print(
                f"  estimate of the last call's prompt (unlogged part + messages): {estimate:,} "
                f"({signed(estimate / recorded['last_prompt'] - 1)} against the recorded size)"
            )


#: Control characters as the escapes a shell user can read (a file name may hold a newline).
_CONTROL = {code: f"\\x{code:02x}" for code in [*range(32), 127]} | {9: "\\t", 10: "\\n", 13: "\\r"}


def one_line(text: str) -> str:
    """`text` (a file name) on one line: control characters escaped (`\\n`), the rest as it is.

    >>> one_line("a\\nb.jsonl")
    'a\\\\nb.jsonl'
    """
    return text.translate(_CONTROL)


def parts(confirmed: int, tokens: int) -> str:
    """A size said as its two parts (DESIGN §11): "164,831 recorded + 2,310 estimated = 167,141"."""
    estimated = tokens - confirmed
    sign = "+" if estimated >= 0 else "−"
    return f"{confirmed:,} recorded {sign} {abs(estimated):,} estimated = {tokens:,} tokens"


def comparison(out: Console, tokens: dict[str, int], *, naive: int, budget: int) -> None:
    """Every counter's total side by side, against the exact counts where a tokenizer ran."""
    exact = {name: value for name, value in tokens.items() if ":" not in name and name != "seed"}
    columns = ["<counter", "tokens", "of budget"] + [f"vs {name}" for name in exact]
    result = table(*columns, title="  compared (profiles, and exact counts where a tokenizer is installed)")
    for name, value in {"chars ÷ 4": naive, **tokens}.items():
        cells = [escape(name), number(value), share(value, budget)]
        cells += [signed(value / truth - 1) if truth else "—" for truth in exact.values()]
        result.add_row(*cells)
    out.print(result)
    out.print()


def calibration_summary(err: Console, name: str, tokenizer: str, check: dict) -> None:
    err.print(
        f"profile {escape(name)} fitted against {tokenizer}: on the sample the estimate is "
        f"{signed(check['error'])} overall; {check['under10_share']:.1%} of {check['paragraphs']:,} "
        f"paragraphs are more than 10% under (worst {signed(check['worst'])})."
    )


def usage_calibration_summary(err: Console, name: str, evaluation: dict) -> None:
    """What `calibrate --from-usage` fitted on and how it does on the call pairs it did not see."""
    held = evaluation["held_out"]
    err.print(
        f"profile {escape(name)} fitted on {evaluation['pairs_fitted']:,} call pairs from "
        f"{evaluation['calls']:,} recorded calls in {evaluation['logs']} log(s)."
    )
    if held["pairs"]:
        base = evaluation["base_held_out"]
        err.print(
            f"on {held['pairs']:,} held-out pairs the estimate of the added messages is "
            f"{held['ratio']:.2f} × the recorded growth (median {held['median']:.2f}); "
            f"{held['under10_share']:.1%} are more than 10% under "
            f"(the base profile: {base['ratio']:.2f}, {base['under10_share']:.1%})."
        )
    else:
        err.print("no held-out pair grew enough to score: give more or longer logs.", style="yellow")


def repairs(lines: Iterable[str]) -> None:
    """What a reader repaired in a log to make a valid request (`Transcript.repairs`), one
    line each on stderr, never wrapped."""
    err = None
    for line in lines:
        err = err or stderr_console()
        err.print(Text(f"repaired {line}"), soft_wrap=True)
