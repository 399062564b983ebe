"""`ctxfit estimate`: the tokens of transcripts, by writing system and kind of content."""

from __future__ import annotations

from typing import Annotated

import typer

from ...input_formats import DEFAULT_LINE_LIMIT_MB
from ..defaults import DEFAULT_BUDGET, DEFAULT_WINDOW
from ..error_reporting import reports_errors
from ..lazy import reading, render
from ..options import (
    Budget,
    Engine,
    FixedTokens,
    Format,
    Jobs,
    Json,
    MaxLine,
    NoCache,
    Paths,
    PricesFile,
    Profile,
    Quiet,
    RayAddress,
    StrictAll,
    Tokenizer,
    Verbose,
    Window,
    _check_format,
)
from ..outputs import StdoutText
from ..writing import report_repairs, report_skipped, write_json


@reports_errors
def estimate(
    paths: Paths = None,
    budget: Budget = DEFAULT_BUDGET,
    window: Window = None,
    fixed_tokens: FixedTokens = "auto",
    top: Annotated[int, typer.Option("--top", "-n", min=0, help="Show the N largest messages.")] = 5,
    tokenizer: Tokenizer = None,
    profile: Profile = None,
    compare: Annotated[
        bool,
        typer.Option("--compare", help="Also show every built-in profile and every installed tokenizer side by side."),
    ] = False,
    json: Json = False,
    max_line_mb: MaxLine = DEFAULT_LINE_LIMIT_MB,
    format: Format = None,
    jobs: Jobs = None,
    engine: Engine = "local",
    ray_address: RayAddress = None,
    strict: StrictAll = False,
    prices: PricesFile = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
    no_cache: NoCache = False,
) -> None:
    """Estimate the tokens of transcripts, by writing system and by kind of content.

    \b
    To see where the tokens of a transcript go:
        ctxfit estimate session.jsonl
    To check a fitted request before sending it:
        ctxfit fit session.jsonl --budget 400000 | ctxfit estimate -
    To feed a script:
        ctxfit estimate --json *.jsonl | jq .total.tokens
    To count exactly for a model family, or see how much margin the estimate keeps:
        ctxfit estimate session.jsonl --tokenizer o200k
        ctxfit estimate session.jsonl --compare
    To survey every Claude Code and Codex log on this machine (their default folders):
        ctxfit estimate

    A log that names its model is counted with that model's profile and window, and a log
    that records usage (Claude Code, Codex, OpenHands) shows the prompt sizes it recorded and
    counts the part of the prompt it does not hold (--fixed-tokens). Other files are streamed,
    so a transcript of any size can be estimated in bounded memory.
    """
    reading.set_line_limit(max_line_mb)
    from ...core.estimate import combine
    from ...fleet.job import Job
    from .. import many
    from ..counting import given_counter, parse_fixed_tokens

    format = _check_format(format)
    given_counter(tokenizer, profile)  # a missing tokenizer is a usage error before any file is read
    found = many.inputs(paths, defaults=True)
    job = Job(
        "estimate",
        format,
        budget,
        window,
        parse_fixed_tokens(fixed_tokens),
        tokenizer,
        profile,
        top=top,
        compare=compare,
        describe=found.many,
        line_limit_mb=max_line_mb,
        cache=not no_cache,
    )
    combined = many.run(found, job, jobs=jobs, engine=engine, address=ray_address, strict=strict, quiet=json or quiet)
    reports = [item["report"] for item in combined.items]
    files = [
        {
            **item["report"].to_dict(),
            **item["usage"],
            "repairs": item["repairs"],
            "still_being_written": item["still_being_written"],
            "unread": item.get("unread", {"records": {}, "keys": {}}),
        }
        for item in combined.items
    ]
    for file in files:  # as `fit` fits it: never to more than the model's window
        file["budget"] = min(budget, file["window"])
    report_repairs([line for item in combined.items for line in item["repairs"]])
    report_skipped(files, verbose=verbose)
    requests = [file for file in files if file["format"] == "request"]
    if requests and not quiet:
        _unanchored(requests[0]["counter"])
    if compare:
        for file, item in zip(files, combined.items):
            file["compare"] = item["compare"]
    total = {**combine(reports), **_across(files, combined, prices)}
    if json:
        write_json(
            {"budget": budget, "window": window or DEFAULT_WINDOW, "files": files, "total": total, **combined.to_dict()}
        )
    else:
        out = render.console(StdoutText())
        for file in files:
            render.estimate_report(out, file, budget=file["budget"], window=file["window"])
            if compare:
                render.comparison(out, file["compare"], naive=file["naive_tokens"], budget=file["budget"])
        if len(files) > 1:
            render.estimate_total(out, total)
        elif total["cost_usd"] is not None:
            out.print(
                f"recorded cost: ${total['cost_usd']:,.2f} (the usage the log records, at the prices of "
                f"{total['prices_date']}; docs/cost.md)\n"
            )
    many.finish(combined, quiet=quiet, verbose=verbose)


def _unanchored(counter: str) -> None:
    """One line on how a request's count relates to the one `ctxfit proxy` gives the same body
    (its `ctxfit-tokens` header): the proxy counts with the counter picked for the model, as this
    command does, and once the provider has reported a size, from the provider's count of the
    request before."""
    import sys

    sys.stderr.write(
        f"ctxfit estimate: a request is counted by ctxfit alone ({counter}), without the provider's anchor; "
        "ctxfit proxy's figure for the same body is this one when its ctxfit-counted header says "
        "estimated, and rests on the provider's count of the request before when it says anchored\n"
    )


def _across(files: list[dict], combined, prices: str | None) -> dict:
    """What a total over many conversations can honestly say: the largest of them against its
    budget and window, how many are over each, the counters used (with how many
    conversations each counted), and, where sessions were described, their recorded cost."""
    largest = max(files, key=lambda f: f["tokens"])
    counters: dict[str, int] = {}
    for file in files:
        counters[file["counter"]] = counters.get(file["counter"], 0) + 1
    across = {
        "conversations": len(files),
        "largest": {k: largest[k] for k in ("path", "tokens", "budget", "window")},
        "over_budget": sum(f["tokens"] > f["budget"] for f in files),
        "over_window": sum(f["tokens"] > f["window"] for f in files),
        "counters": counters,
        "cost_usd": None,
        "prices_date": None,
    }
    spends = [kept.unit.meta.spend for kept in combined.kept if kept.unit.meta is not None]
    if not spends and len(combined.kept) == 1:  # one log, not described: its usage read on its own
        from ...fleet.spend import spend_of_file

        items = combined.items  # (a log read in pieces added up its spend on the way)
        spends = [items[0]["spend"] if len(items) == 1 and "spend" in items[0] else None]
        spends = [spends[0] if spends[0] is not None else spend_of_file(combined.kept[0].path, files[0]["format"])]
    if any(spends):
        from ...fleet.sessions import session_cost
        from ...replay.model_prices import load_prices

        table = load_prices(prices)
        costs = [session_cost(spend, table)["usd"] for spend in spends]
        if any(c is not None for c in costs):
            across["cost_usd"] = round(sum(c for c in costs if c is not None), 6)
            across["prices_date"] = table.date
    return across
