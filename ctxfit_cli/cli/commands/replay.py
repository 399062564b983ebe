"""`ctxfit replay`: recorded transcripts replayed request by request under each context policy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ...counters.seed import SEED
from ...input_formats import DEFAULT_LINE_LIMIT_MB
from ..defaults import DEFAULT_BUDGET, DEFAULT_WINDOW, DEFAULTS
from ..error_reporting import reports_errors
from ..lazy import reading, render, render_replay
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
    Lowwater,
    MaxLine,
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
    _finite,
    _options,
)
from ..outputs import StdoutText, check_outputs
from ..writing import report_repairs, write_html, write_json

#: `-p`'s values, in `replay.policies.POLICIES`' order (the tests check them against it; written out
#: so that `replay --help` imports no policy).
POLICY_NAMES = ("ctxfit", "ctxfit-strict", "none", "turns", "clear-each", "keep-6", "clear-at-least")


def _complete_policy(incomplete: str) -> list[str]:
    return [name for name in POLICY_NAMES if name.startswith(incomplete)]


if TYPE_CHECKING:  # replay loads when the command runs
    from ...replay.simulation import PolicyReplay, Prices


@reports_errors
def replay_command(
    paths: Paths = None,
    budget: Budget = DEFAULT_BUDGET,
    window: Window = None,
    fixed_tokens: FixedTokens = "auto",
    policy: Annotated[
        Optional[list[str]],
        typer.Option(  # (Typer takes no list of Literal: checked below)
            "--policy",
            "-p",
            metavar="|".join(POLICY_NAMES),
            autocompletion=_complete_policy,
            help="Policy to simulate; repeat to compare (default: all).",
            show_default=False,
        ),
    ] = None,
    steps: Annotated[bool, typer.Option("--steps", help="With --json, one row per model call.")] = False,
    chart: Annotated[
        Optional[bool], typer.Option("--chart/--no-chart", help="Draw request sizes per call (default: for one file).")
    ] = None,
    min_cacheable: Annotated[
        int, typer.Option("--min-cacheable", min=0, help="A shared prefix shorter than this is not cached.")
    ] = 1024,
    lowwater: Lowwater = DEFAULTS.lowwater,
    price_write: Annotated[
        float,
        typer.Option(
            "--price-write", min=0.0, callback=_finite, help="Cache-write price per token (uncached input = 1)."
        ),
    ] = 1.25,
    price_read: Annotated[
        float,
        typer.Option(
            "--price-read", min=0.0, callback=_finite, help="Cache-read price per token (uncached input = 1)."
        ),
    ] = 0.1,
    html: Html = None,
    top: HtmlTop = HTML_TOP,
    tokenizer: Tokenizer = None,
    profile: Profile = None,
    json: Json = False,
    max_line_mb: MaxLine = DEFAULT_LINE_LIMIT_MB,
    format: Format = None,
    jobs: Jobs = None,
    engine: Engine = "local",
    ray_address: RayAddress = None,
    strict: StrictAll = False,
    prices_file: PricesFile = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Replay recorded transcripts request by request and compare context policies.

    \b
    The request before model call k is everything the agent had before its k-th assistant
    message (a reply the agent wrote itself, like aider's "Ok." after a commit, is no call).
    For each policy: calls, rejected calls (over --window), largest request, total
    input, the share read from the prompt cache, cache breaks and the relative cost.
    \b
    To compare every policy on a log:
        ctxfit replay session.jsonl --budget 400000 --window 1000000
    To compare two policies over many logs, as JSON:
        ctxfit replay logs/*.jsonl -p ctxfit -p turns --json | jq .policies
    To try another low-water mark against the strict seed rule:
        ctxfit replay session.jsonl --lowwater 0.7 -p ctxfit -p ctxfit-strict
    To see it as charts in a browser (one self-contained page, works offline):
        ctxfit replay logs/*.jsonl --html report.html
    """
    reading.set_line_limit(max_line_mb)
    from ...replay.policies import DEFAULT_POLICIES, POLICIES
    from ...replay.simulation import PolicyReplay, Prices

    format = _check_format(format)
    names = policy or list(DEFAULT_POLICIES)
    for name in names:
        if name not in POLICIES:
            raise typer.BadParameter(
                f"unknown policy {name!r}; choose from {', '.join(POLICIES)}", param_hint="--policy"
            )
    auto = _auto(tokenizer, profile, window, fixed_tokens)
    _options(
        budget,
        window,
        lowwater,
        DEFAULTS.batch_size,
        DEFAULTS.protect_share,
        DEFAULTS.min_clear_tokens,
        auto.counter or SEED,
    )  # checks them before any file is read
    from ...fleet.job import Job
    from .. import many

    prices = Prices(cache_write=price_write, cache_read=price_read)
    found = many.inputs(paths, defaults=True)
    if html:
        check_outputs({"--html": html}, found.files)
    job = Job(
        "replay",
        format,
        budget,
        window,
        auto.fixed_tokens,
        tokenizer,
        profile,
        lowwater=lowwater,
        policies=tuple(names),
        prices=prices,
        min_cacheable=min_cacheable,
        describe=found.many,
        line_limit_mb=max_line_mb,
    )
    combined = many.run(found, job, jobs=jobs, engine=engine, address=ray_address, strict=strict, quiet=json or quiet)
    files = combined.items
    report_repairs([line for file in files for line in file["repairs"]])
    totals = {name: PolicyReplay(name) for name in names}
    for file in files:
        for name, result in file["results"].items():
            totals[name].merge(result)
    from ...replay.model_prices import load_prices

    table = load_prices(prices_file)
    dollars = [_dollars(file, table) for file in files]
    total_dollars = _summed(dollars, names)

    def document(steps: bool) -> dict:
        return {
            "budget": budget,
            "window": window or DEFAULT_WINDOW,
            "files": [
                {
                    "path": f["name"],
                    "format": f["format"],
                    **f["choice"],
                    "repairs": f["repairs"],
                    "by_script": f["by_script"],
                    "model": f["model"],
                    "policies": {
                        n: {**_replay_dict(f["recorded"], r, prices, steps), **d[n]} for n, r in f["results"].items()
                    },
                }
                for f, d in zip(files, dollars)
            ],
            "policies": {n: {**r.to_dict(prices), **total_dollars[n]} for n, r in totals.items()},
            "prices": {"date": table.date, "source": table.source},
            **combined.to_dict(),
        }

    if html:
        write_html(html, "replay", document(steps=True), top=top)
    if json:
        write_json(document(steps))
        many.finish(combined, quiet=quiet, verbose=verbose)
        return
    out = render.console(StdoutText())
    for file, usd in zip(files, dollars):
        render_replay.replay_table(
            out,
            [(n, {**r.to_dict(prices), **usd[n]}) for n, r in file["results"].items()],
            title=f"  {render.escape(file['name'])} — budget {file['budget']:,}, "
            f"window {file['window']:,}; counter {file['choice']['counter']}",
        )
    if len(files) > 1:
        render_replay.replay_table(
            out,
            [(n, {**r.to_dict(prices), **total_dollars[n]}) for n, r in totals.items()],
            title=f"  total over {len(files)} transcripts — budget {budget:,}",
        )
    out.print(render_replay.REPLAY_LEGEND)
    if chart if chart is not None else len(files) == 1:
        for file in files:
            for name, result in file["results"].items():
                render_replay.size_chart(
                    out,
                    f"{file['name']} · {name}",
                    [s.tokens for s in result.steps],
                    budget=file["budget"],
                    window=file["window"],
                )
    many.finish(combined, quiet=quiet, verbose=verbose)


def _dollars(file: dict, table) -> dict[str, dict]:
    """Each policy's input cost in dollars at the file's model's prices, and what it saves
    against sending everything (policy none, when it was replayed); None where the model has no
    price."""
    price = table.price(file["model"]) if file["model"] else None
    costs = {
        name: None
        if price is None
        else round(price.cost(input=r.uncached, cache_write=r.cache_write, cache_read=r.cache_read, output=0), 6)
        for name, r in file["results"].items()
    }
    everything = costs.get("none")
    return {
        name: {"usd": usd, "saves_usd": None if usd is None or everything is None else round(everything - usd, 6)}
        for name, usd in costs.items()
    }


def _summed(dollars: list[dict[str, dict]], names: list[str]) -> dict[str, dict]:
    """The dollars over every file whose model has a price."""
    summed = {}
    for name in names:
        usd = [d[name]["usd"] for d in dollars if d[name]["usd"] is not None]
        saves = [d[name]["saves_usd"] for d in dollars if d[name]["saves_usd"] is not None]
        summed[name] = {
            "usd": round(sum(usd), 6) if usd else None,
            "saves_usd": round(sum(saves), 6) if saves else None,
        }
    return summed


def _replay_dict(recorded: dict | None, result: PolicyReplay, prices: Prices, steps: bool) -> dict:
    """A policy's replay; with steps, each step also carries the prompt size the log recorded
    for that call (`recorded`, null where it recorded none)."""
    document = result.to_dict(prices, steps=steps)
    if steps and recorded is not None:
        for step in document["steps"]:
            step["recorded"] = recorded.get(step["call"])
    return document
