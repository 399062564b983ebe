"""`ctxfit sessions`: one row per session (the work: fleet/sessions.py; the text: sessions_view.py)."""

from __future__ import annotations

import sys
from typing import Annotated, Literal, Optional

import typer

from ...counters.seed import SEED
from ...input_formats import DEFAULT_LINE_LIMIT_MB
from ..defaults import DEFAULT_BUDGET, DEFAULTS
from ..error_reporting import reports_errors
from ..options import (
    HTML_TOP,
    Budget,
    Engine,
    FixedTokens,
    Format,
    Html,
    HtmlTop,
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
    _auto,
    _check_format,
    _options,
)
from ..outputs import check_outputs, write_stdout
from ..writing import write_html, write_json

#: `--by` and `--sort` (the tests check them against `fleet/sessions.py`'s GROUPS and SORTS; written
#: out so that `sessions --help` imports no reader).
GROUPS = ("day", "week", "project", "model", "agent")
SORTS = ("last", "started", "peak", "share", "messages", "rejected", "project", "id", "cost")
DATE_HELP = "YYYY-MM-DD, YYYYMMDD, today, yesterday, 7d, 24h or an ISO time, in --tz"


@reports_errors
def sessions(
    paths: Paths = None,
    budget: Budget = DEFAULT_BUDGET,
    window: Window = None,
    fixed_tokens: FixedTokens = "auto",
    by: Annotated[
        Optional[Literal[GROUPS]],  # type: ignore[valid-type]
        typer.Option("--by", help="Sum the sessions per day, week, project, model or agent.", show_default=False),
    ] = None,
    since: Annotated[
        Optional[str],
        typer.Option(
            "--since", metavar="WHEN", help=f"Only sessions active on or after this: {DATE_HELP}.", show_default=False
        ),
    ] = None,
    until: Annotated[
        Optional[str],
        typer.Option(
            "--until",
            metavar="WHEN",
            help="Only sessions that started on or before this (a day: to its end).",
            show_default=False,
        ),
    ] = None,
    tz: Annotated[
        Optional[str],
        typer.Option(
            "--tz",
            metavar="ZONE",
            help="Time zone of --since, --until and --by day/week (IANA, e.g. Europe/Paris, "
            "or UTC; default: this machine's).",
            show_default=False,
        ),
    ] = None,
    sort: Annotated[
        Literal[SORTS],  # type: ignore[valid-type]
        typer.Option("--sort", help="Order: newest, largest or costliest first; project and id A to Z."),
    ] = "last",
    prices: PricesFile = None,
    tokenizer: Tokenizer = None,
    profile: Profile = None,
    html: Html = None,
    top: HtmlTop = HTML_TOP,
    json: Json = False,
    max_line_mb: MaxLine = DEFAULT_LINE_LIMIT_MB,
    format: Format = None,
    jobs: Jobs = None,
    engine: Engine = "local",
    ray_address: RayAddress = None,
    strict: StrictAll = False,
    quiet: Quiet = False,
    verbose: Verbose = False,
    no_cache: NoCache = False,
) -> None:
    """One row per session: its size against the window, and what ctxfit would have done.

    \b
    For every Claude Code and Codex session on this machine (their default log folders):
        ctxfit sessions
    Which projects came closest to the window in the last 7 days:
        ctxfit sessions --by project --since 7d --sort peak
    What each day cost (dollars from the usage the logs record; docs/cost.md):
        ctxfit sessions --by day --since 20260201
    A folder of SWE-agent or OpenHands runs, as JSON:
        ctxfit sessions runs/ --budget 200000 --json | jq '.sessions[] | select(.agent_rejected > 0)'
    As a page with a chart of every session's peak against its window (works offline):
        ctxfit sessions --html sessions.html
    On a Ray cluster (pip install 'ctxfit[fleet]'; docs/fleet.md):
        ctxfit sessions /shared/agent-logs --engine ray --json

    Each row: session id, agent, project, model(s), last activity, messages, compactions, the
    peak request (recorded where the log holds usage, else estimated) and its share of the
    model's window (or --window), the stage ctxfit reaches at --budget with the results it
    clears, the calls the window rejects when everything is sent (the agent's own
    behaviour) against ctxfit, and the session's cost as recorded: the tokens the log says
    were billed (input, cache writes, cache reads, output) at the price table's rates.
    """
    # The readers load only for files the cache does not hold (`fleet/work.py`): a run over logs
    # unchanged since the last one loads none.
    from ...fleet import sessions as view
    from ...fleet.job import Job
    from ...replay.model_prices import load_prices
    from .. import many, sessions_view
    from ..dates import bound, zone

    format = _check_format(format)
    low = bound(since, "since", tz) if since else None
    high = bound(until, "until", tz) if until else None
    table = load_prices(prices)
    auto = _auto(tokenizer, profile, window, fixed_tokens)
    _options(
        budget,
        window,
        None,
        DEFAULTS.batch_size,
        DEFAULTS.protect_share,
        DEFAULTS.min_clear_tokens,
        auto.counter or SEED,
    )  # checks them before any file is read
    found = many.inputs(paths, defaults=True)
    if html:
        check_outputs({"--html": html}, found.files)
    job = Job(
        "sessions",
        format,
        budget,
        window,
        auto.fixed_tokens,
        tokenizer,
        profile,
        describe=True,
        line_limit_mb=max_line_mb,
        cache=not no_cache,
    )
    combined = many.run(found, job, jobs=jobs, engine=engine, address=ray_address, strict=strict, quiet=json or quiet)
    rows = [view.session_row(kept, budget=budget, prices=table) for kept in combined.kept]
    rows = view.sort_rows(view.within(rows, low, high), sort)
    groups = view.group_rows(rows, by, zone(tz)) if by else None
    if html:
        write_html(html, "sessions", rows, budget=budget, top=top)
    if json:
        document = {
            "budget": budget,
            "window": window,
            "prices": {"date": table.date, "source": table.source},
            "sessions": rows,
            **combined.to_dict(),
        }
        if groups is not None:
            document["by"], document["groups"] = by, groups
        write_json(document)
    else:
        width = sessions_view.width(sys.stdout)
        cells = (
            [sessions_view.group_cells(g) for g in groups]
            if groups is not None
            else [sessions_view.session_cells(r) for r in rows]
        )
        lines = sessions_view.render(cells, width) or ["no sessions in that range"]
        priced = sessions_view.prices_label(table.date, table.source, rows)
        lines += [""] + sessions_view.legend(width, grouped=groups is not None, prices=priced) if cells else []
        lines += sessions_view.being_written(rows)
        write_stdout(("\n".join(lines) + "\n").encode())
    many.finish(combined, quiet=quiet, verbose=verbose)
