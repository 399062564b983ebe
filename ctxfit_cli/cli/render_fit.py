"""What `fit` says on stderr and `plan` shows: the stage reached, what each batch cleared, what
was dropped, and which part of a size the provider confirmed. Built on `render.py`."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from .render import escape, limit_line, number, one_line, parts, table

STAGE_WORDS = {
    "none": "fits as it is",
    "clear": "stage 1, old tool results cleared",
    "turns": "stage 2, oldest user turns left out",
    "rounds": "stage 3, oldest tool rounds left out",
}


def fit_summary(err: Console, report: dict) -> None:
    """One or two lines on stderr after `ctxfit fit`."""
    cleared = report["cleared_results"]
    batches = sum(1 for b in report["batches"] if b["cleared"])
    line = Text.assemble(
        (one_line(report["path"]), "bold"),
        ": ",
        STAGE_WORDS[report["stage"]],
        f"; {cleared} result{'s' if cleared != 1 else ''} cleared in {batches} batch{'es' if batches != 1 else ''}"
        if cleared
        else "",
        f"; {report['tokens_before']:,} → {report['tokens_sent']:,} tokens (budget {report['budget']:,})",
    )
    err.print(line)
    added = report.get("tokens_added_by_agent")
    if added and added > 0:
        err.print(
            Text(f"  {report['tokens_in_payload']:,} in this payload + {added:,} the agent adds (system prompt, tools)")
        )
    elif added:
        err.print(
            Text(
                f"  {report['tokens_in_payload']:,} estimated in this payload − {-added:,}: the provider "
                "counted the log's last request smaller than ctxfit's estimate"
            )
        )
    if report.get("confirmed"):
        err.print(Text(f"  {parts(report['confirmed'], report['tokens_sent'])}"))
    unlogged = report.get("unlogged", {}).get("tokens", 0)
    if "counter_reason" in report and (
        unlogged or not report["counter_reason"].startswith("seed rule") or report["window_source"] != "default"
    ):
        err.print(
            Text(
                f"  counted with {report['counter']} ({report['counter_reason']}), window "
                f"{report['window']:,} ({report['window_source']})"
                + (f"; {unlogged:,} of the tokens are the unlogged fixed part" if unlogged else "")
            )
        )
    if report["overrun"]:
        err.print(
            Text(
                f"warning: even the smallest request is {report['tokens_sent']:,} tokens, over the "
                f"{report['budget']:,} budget but within the {report['window']:,} window: it was written anyway.",
                style="yellow",
            )
        )


def plan_report(out: Console, report: dict) -> None:
    """The `ctxfit plan` report."""
    budget = report["budget"]
    out.print(Text.assemble((report["path"], "bold"), f"  ({report['dialect']}, {report['messages']:,} messages)"))
    out.print(f"  stage reached: {report['stage']} — {STAGE_WORDS[report['stage']]}")
    out.print(Text("  before: ").append_text(limit_line(report["tokens_before"], budget, report["window"])))
    out.print(Text("  after:  ").append_text(limit_line(report["tokens_sent"], budget, report["window"])))
    if report.get("confirmed"):
        out.print(
            f"  counted as: {parts(report['confirmed'], report['tokens_sent'])} (anchored on the "
            "log's last recorded call)"
        )
    unlogged = report.get("unlogged", {}).get("tokens", 0)
    if unlogged:
        out.print(
            f"  fixed part (system prompt, tools): {report['fixed_tokens']:,} tokens, of which "
            f"{unlogged:,} are not in the log (unlogged fixed part, {report['unlogged']['source']})"
        )
    else:
        out.print(f"  fixed part (system prompt, tools): {report['fixed_tokens']:,} tokens")
    if "counter_reason" in report:
        out.print(
            f"  counter: {escape(report['counter'])} ({escape(report['counter_reason'])}); "
            f"window: {report['window']:,} ({escape(report['window_source'])})"
        )
    if report["batches"]:
        batches = table(
            "batch",
            "msg",
            "<tool",
            "<call id",
            "tokens",
            "freed",
            "size after",
            "~",
            title="  clearing batches, oldest first",
        )
        first_fit = next((b["number"] for b in report["batches"] if b["tokens_after"] <= budget), None)
        for batch in report["batches"]:
            state = "cleared" if batch["cleared"] else "not needed"
            if batch["number"] == first_fit:
                state += ", fits from here"
            for i, result in enumerate(batch["results"]):
                last = i == len(batch["results"]) - 1
                batches.add_row(
                    str(batch["number"]) if i == 0 else "",
                    str(result["index"]),
                    escape(result["tool"]),
                    escape(result["id"]),
                    number(result["tokens"]),
                    number(batch["freed"]) if last else "",
                    number(batch["tokens_after"]) if last else "",
                    state if last else "",
                    end_section=last,
                )
        out.print(batches)
    else:
        out.print("  no tool result can be cleared")
    if report["protected"]:
        protected = table(
            "msg",
            "<tool",
            "<call id",
            "tokens",
            title=f"  protected: the newest results within {report['protected_share_tokens']:,} tokens"
            if "protected_share_tokens" in report
            else "  protected (newest results, kept whole)",
        )
        for result in report["protected"]:
            protected.add_row(
                str(result["index"]), escape(result["tool"]), escape(result["id"]), number(result["tokens"])
            )
        out.print(protected)
    if report["too_small"]:
        count = len(report["too_small"])
        out.print(f"  left alone as too small to be worth clearing: {count} result{'s' if count != 1 else ''}")
    for dropped in report["dropped"]:
        out.print(
            f"  left out: messages {dropped['from']}–{dropped['to'] - 1} (a note says earlier conversation was trimmed)"
        )
    if report["anchor"] is not None:
        out.print(
            f"  kept: the newest turn's opening message ({report['anchor']}) "
            f"and messages from {report['kept_start']} on"
        )
    if report["cannot_fit"]:
        out.print(
            Text(f"  cannot fit: even the smallest request is over the {report['window']:,} window", style="bold red")
        )
    elif report["overrun"]:
        out.print(
            Text(
                "  overrun: the smallest request is over the budget but within the window; it is sent anyway",
                style="yellow",
            )
        )
    out.print()
