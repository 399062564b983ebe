"""`ctxfit watch`: the sessions being written, live (the following: fleet/live.py; the view:
cli/watch_view.py)."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from ...errors import BadInput, UsageProblem
from ..error_reporting import reports_errors
from ..options import Json

#: The proxy looked for when none is named (the port `ctxfit proxy` listens on by default).
DEFAULT_PROXY = "http://127.0.0.1:8787"
#: The proxy's stats are asked for at most this often (seconds), whatever the interval.
PROXY_EVERY = 2.0


@reports_errors
def watch(
    paths: Annotated[
        Optional[list[str]],
        typer.Argument(help="Logs or folders to watch (default: the agents' default log folders).", show_default=False),
    ] = None,
    interval: Annotated[
        float, typer.Option("--interval", min=0.05, max=3600, help="Seconds between two looks at the logs.")
    ] = 1.0,
    active: Annotated[
        float,
        typer.Option(
            "--active",
            min=0,
            help="In folders, watch the logs written to in the last this-many minutes "
            "(0: every log). Files named are always watched.",
        ),
    ] = 60.0,
    proxy: Annotated[
        Optional[str],
        typer.Option(
            "--proxy",
            metavar="URL",
            show_default=False,
            help=f"A running `ctxfit proxy` whose stats to show (default: {DEFAULT_PROXY}, if one answers).",
        ),
    ] = None,
    once: Annotated[bool, typer.Option("--once", help="Print one snapshot and exit.")] = False,
    json: Json = False,
    statusline: Annotated[
        bool,
        typer.Option(
            "--statusline",
            help="Print one short line for Claude Code's status line (implies --once): reads "
            "the session's JSON on stdin and watches its transcript_path.",
        ),
    ] = False,
) -> None:
    """Watch the sessions being written: context size now, growth per call, calls left.

    \b
    Live, in a terminal (q or Ctrl-C quits):
        ctxfit watch
    One snapshot for a script:
        ctxfit watch --once --json | jq '.sessions[] | select(.window_share > 0.8)'
    As Claude Code's status line (~/.claude/settings.json):
        "statusLine": {"type": "command", "command": "ctxfit watch --once --statusline"}

    Per session: the size of its next request (the latest call's reported size plus an estimate
    of what was written since; DESIGN §11), its share of the model's window, the growth per
    call over the latest calls, and the calls left at that rate before the agent compacts on
    its own (Claude Code: window − 33k, 83.5% of 200k; Codex: 90%; Gemini CLI: 50%) and
    before the window. Logs are followed as they grow: only what was written since the last
    look is read. With a `ctxfit proxy` running, what it fitted and cleared.
    """
    if json and statusline:
        raise UsageProblem("--json and --statusline print different things: choose one")
    from ...fleet.live import Watch

    for path in paths or []:
        if not os.path.exists(path):
            raise BadInput(path, None, "no such file or folder")
    proxy_url = proxy or DEFAULT_PROXY
    window, transcript = _statusline_input() if statusline else (None, None)
    if transcript is not None:
        _status_of(transcript, proxy_url, window)
        return
    watcher = Watch(paths, active=active * 60 or None)
    if once or json or statusline:
        _snapshot(watcher, proxy_url, json=json, statusline=statusline, window=window)
        return
    if not sys.stdout.isatty():
        raise UsageProblem("the live view needs a terminal: use --once (with --json for scripts)")
    _live(watcher, proxy_url, interval)


def _statusline_input() -> tuple[int | None, str | None]:
    """What Claude Code gives a status line on stdin: the window it uses
    (`context_window.context_window_size`) and the session's transcript (`transcript_path`,
    watched instead of the folders); (None, None) without them."""
    if sys.stdin is None or sys.stdin.isatty():
        return None, None
    from ..lazy import orjson

    try:
        given = orjson.loads(sys.stdin.buffer.read() or b"{}")
    except orjson.JSONDecodeError:
        return None, None
    if not isinstance(given, dict):
        return None, None
    transcript = given.get("transcript_path")
    context = given.get("context_window")
    size = context.get("context_window_size") if isinstance(context, dict) else None
    window = size if isinstance(size, int) and size > 0 else None
    return window, (transcript if isinstance(transcript, str) and transcript else None)


def _status_of(transcript: str, proxy_url: str, window: int | None) -> None:
    """The status line of one session, read from where the last status line stopped (a status
    line runs after every reply: the log is never read whole twice; `fleet/live_state.py`)."""
    from ...fleet import live_state, proxy_stats
    from .. import watch_view
    from ..outputs import write_stdout

    session = live_state.load(transcript)
    while session.update():
        pass
    live_state.save(session)
    line = watch_view.status_line(session.row(window), proxy_stats.look(proxy_url))
    write_stdout((line + "\n").encode())


def _snapshot(watcher, proxy_url: str, *, json: bool, statusline: bool, window: int | None) -> None:
    from ...fleet import proxy_stats
    from .. import watch_view
    from ..lazy import render
    from ..outputs import write_stdout
    from ..writing import write_json

    watcher.catch_up()
    rows = watcher.snapshot(window)
    proxy = proxy_stats.look(proxy_url)
    if json:
        write_json({"sessions": rows, "proxy": proxy})
    elif statusline:
        write_stdout((watch_view.status_line(rows[0] if rows else None, proxy) + "\n").encode())
    else:
        out = render.console(sys.stdout)
        out.print(watch_view.screen(rows, proxy, width=out.width, height=len(rows) + 8, live=False))


def _live(watcher, proxy_url: str, interval: float) -> None:
    import time

    from rich.live import Live

    from ...fleet import proxy_stats
    from .. import watch_view
    from ..lazy import render

    out = render.console(sys.stdout)
    proxy, asked = None, float("-inf")
    with watch_view.keys() as keyboard, Live(console=out, screen=True, auto_refresh=False) as live:
        try:
            while True:
                watcher.poll()
                if time.monotonic() - asked >= PROXY_EVERY:
                    proxy, asked = proxy_stats.look(proxy_url), time.monotonic()
                size = out.size
                live.update(
                    watch_view.screen(watcher.snapshot(), proxy, width=size.width, height=size.height), refresh=True
                )
                if keyboard.quit_within(interval):
                    return
        except KeyboardInterrupt:
            return
