"""The `ctxfit proxy` command. Light on purpose: the HTTP stack is imported only when it runs."""

from __future__ import annotations

import re
import sys
from typing import Annotated, Optional

import typer

from ...errors import MissingExtra, UsageProblem
from ..defaults import DEFAULT_WINDOW
from ..error_reporting import reports_errors

LOOPBACK = ("127.0.0.1", "localhost", "::1")

# The proxy's options, shared with `ctxfit wrap` (which runs the same proxy for one agent).
Budget = Annotated[
    Optional[str],
    typer.Option(
        "--budget",
        "-b",
        help="Target per request: tokens (150000) or a share of the model's window (80%). "
        "Default: the model's window less the reply's max tokens (400,000 for a model not in ctxfit's table).",
        show_default=False,
    ),
]
Window = Annotated[
    Optional[int],
    typer.Option(
        "--window",
        "-w",
        min=1,
        help="The context window in tokens, for every model (default: each request's "
        f"model's, from ctxfit's table; {DEFAULT_WINDOW:,} for a model not in it).",
        show_default=False,
    ),
]
MaxBodyMb = Annotated[int, typer.Option("--max-body-mb", min=1, help="Largest request body accepted.")]
MemoryMb = Annotated[
    int,
    typer.Option(
        "--memory-mb",
        min=1,
        help="Memory for the conversations' fitting "
        "state (about 5 bytes per byte of a conversation's request); the least recently used "
        "are dropped past it, and rebuilt if they come back.",
    ),
]
Conversations = Annotated[
    int, typer.Option("--conversations", min=1, help="Conversations whose fitting state is kept in memory, at most.")
]
UpstreamTimeout = Annotated[
    float,
    typer.Option("--upstream-timeout", min=1, help="Seconds to wait for the provider between two pieces of a reply."),
]
FitTimeout = Annotated[
    float,
    typer.Option(
        "--fit-timeout",
        min=0.1,
        help="Seconds a fitting worker may take over one request; past it the request, and those "
        "queued behind it, are forwarded unchanged and the worker is replaced.",
    ),
]
ShutdownGrace = Annotated[
    float,
    typer.Option(
        "--shutdown-grace",
        min=0,
        help="On Ctrl-C or SIGTERM, "
        "seconds the requests in flight get to finish before they are cut "
        "(a second signal cuts them at once).",
    ),
]
ClientTimeout = Annotated[
    float,
    typer.Option(
        "--client-timeout",
        min=0.1,
        help="Seconds a client gets "
        "to send a request's headers, and then its body; an idle connection is "
        "closed after as long.",
    ),
]
Workers = Annotated[
    Optional[int],
    typer.Option(
        "--workers",
        min=1,
        help="Processes that fit the requests, each conversation always in the same one (default: one per core).",
        show_default=False,
    ),
]
MaxConnections = Annotated[
    int,
    typer.Option(
        "--max-connections", min=1, help="Client connections held at once; one more closes the one idle longest."
    ),
]


@reports_errors
def proxy(
    upstream: Annotated[
        str,
        typer.Option(
            "--upstream",
            "-u",
            help="The provider's API, e.g. https://api.anthropic.com, https://api.openai.com or "
            "https://generativelanguage.googleapis.com.",
        ),
    ],
    budget: Budget = None,
    window: Window = None,
    port: Annotated[
        int, typer.Option("--port", "-p", min=0, max=65535, help="Port to listen on (0: any free one).")
    ] = 8787,
    host: Annotated[
        str,
        typer.Option(
            "--host", help="Address to listen on. Anything but loopback exposes your API keys' use to the network."
        ),
    ] = "127.0.0.1",
    max_body_mb: MaxBodyMb = 32,
    memory_mb: MemoryMb = 512,
    conversations: Conversations = 256,
    upstream_timeout: UpstreamTimeout = 600.0,
    fit_timeout: FitTimeout = 30.0,
    shutdown_grace: ShutdownGrace = 5.0,
    client_timeout: ClientTimeout = 30.0,
    max_connections: MaxConnections = 512,
    workers: Workers = None,
    listen_fd: Annotated[
        Optional[int],
        typer.Option(
            "--listen-fd",
            hidden=True,
            help="Serve on this listening socket, inherited (`ctxfit wrap`: the agent starts while the proxy does).",
        ),
    ] = None,
) -> None:
    """Run a proxy in front of the provider API that fits every request to the budget.

    Anthropic `POST /v1/messages`, OpenAI `POST /v1/chat/completions` and `POST /v1/responses`
    (Codex CLI), and Gemini's `:generateContent` and `:streamGenerateContent` (Gemini CLI) are
    fitted (same core and defaults as `ctxfit fit` and `ctxfit_cli.fit`) and forwarded; replies
    and SSE streams come back unchanged; everything else is forwarded untouched. What cannot be
    fitted is forwarded unchanged (fail open); a conversation past the window gets a 400 without
    calling the provider. Prints its URL on stdout, one line per request on stderr; stats at
    GET /ctxfit/stats. Needs `pip install 'ctxfit[proxy]'`. Exits 0 when stopped (Ctrl-C, SIGTERM),
    2 on a bad option or a --port it cannot listen on (one line).

    To run Claude Code through it:  `ctxfit proxy --upstream https://api.anthropic.com` then
    `ANTHROPIC_BASE_URL=http://127.0.0.1:8787 claude` (or in one command: `ctxfit wrap claude`).
    """
    import asyncio
    import gc

    from ...serve.spawning import default_workers, spawn_workers, stop_unused

    with asyncio.Runner() as runner:
        # The fitting workers start first: their imports run while this process imports its
        # own (the agent's first request waits for both, issue #33).
        spawned = runner.run(spawn_workers(workers or default_workers()))
        try:
            settings = proxy_settings(
                upstream,
                budget,
                window,
                max_body_mb,
                conversations,
                upstream_timeout,
                _log,
                memory_mb=memory_mb,
                fit_timeout=fit_timeout,
                shutdown_grace=shutdown_grace,
                client_timeout=client_timeout,
                max_connections=max_connections,
                workers=workers,
            )
            from ...serve.running import serve
            from ...serve.upstream import shown
        except BaseException:
            runner.run(stop_unused(spawned))
            raise

        if host not in LOOPBACK:
            _log(f"warning: listening on {host}: anyone who can reach it can use the API keys sent through it")

        def ready(url: str) -> None:
            sys.stdout.write(url + "\n")
            sys.stdout.flush()
            fitting = f"{settings.workers} fitting worker{'s' if settings.workers != 1 else ''}"
            limits = settings.limits.describe()
            _log(f"ctxfit proxy on {url} -> {shown(upstream)}; {limits}; {fitting}; stats at {url}/ctxfit/stats")

        # `main` turns the cyclic GC off for short runs; a server runs for days and its HTTP stack
        # makes cycles. What is loaded now lives for the whole run: frozen, full collections skip it.
        gc.enable()
        gc.freeze()
        runner.run(serve(settings, host, port, ready, listen_fd, spawned))


def proxy_settings(
    upstream: str,
    budget: str | None,
    window: int | None,
    max_body_mb: int,
    conversations: int,
    upstream_timeout: float,
    log,
    *,
    memory_mb: int = 512,
    fit_timeout: float = 30.0,
    shutdown_grace: float = 5.0,
    client_timeout: float = 30.0,
    max_connections: int = 512,
    workers: int | None = None,
):
    """The proxy's settings from its options (usage errors raised here, before anything starts)."""
    from importlib.util import find_spec

    if find_spec("aiohttp") is None:  # (not imported here: `wrap` checks its options before it starts)
        raise MissingExtra("ctxfit proxy needs aiohttp: pip install 'ctxfit[proxy]'")
    from ...serve.limits import LimitRule, parse_budget
    from ...serve.settings import Settings

    if not upstream.startswith(("http://", "https://")):
        raise UsageProblem(f"--upstream must be an http:// or https:// URL, not {upstream!r}")
    try:
        tokens, share = parse_budget(budget) if budget is not None else (None, None)
    except ValueError as error:
        raise UsageProblem(str(error)) from None
    return Settings(
        upstream,
        LimitRule(tokens, share, window),
        max_body=max_body_mb * 1024 * 1024,
        memory=memory_mb * 1024 * 1024,
        conversations=conversations,
        upstream_timeout=upstream_timeout,
        fit_timeout=fit_timeout,
        shutdown_grace=shutdown_grace,
        client_timeout=client_timeout,
        max_connections=max_connections,
        log=log,
        **({"workers": workers} if workers is not None else {}),
    )


_console = None
#: A request's line: method, path, status (or "-" when none was sent).
_REQUEST_LINE = re.compile(r"^[A-Z]+ \S+ (\d{3}|-)")
#: What a line says that deserves an eye, and the colour it gets on a terminal.
_MARKS = (
    (re.compile(r"-> [\d,]+ tokens \((clear|turns|rounds)[^)]*\)"), "cyan"),
    (re.compile(r"forwarded unchanged, not fitted:.*|past the window.*"), "yellow"),
    (re.compile(r"\((the client went away|cut off)[^)]*\)"), "yellow"),
    (re.compile(r"^(warning|stopping|stopped after).*|fitting worker \d+ .*"), "bold"),
)


def _log(line: str) -> None:
    """One line on stderr: coloured through rich on a terminal (unless NO_COLOR is set, which
    rich honours), plain text otherwise."""
    global _console
    if sys.stderr.isatty():
        if _console is None:
            from rich.console import Console

            _console = Console(stderr=True, highlight=False)
        _console.print(_styled(line), soft_wrap=True)
    else:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _styled(line: str):
    """`line` as rich Text: the status by its class, the notable parts marked."""
    from rich.text import Text

    text = Text(line)
    request = _REQUEST_LINE.match(line)
    if request:
        status = request.group(1)
        colour = "dim" if status == "-" else {"2": "green", "4": "yellow", "5": "red"}.get(status[0], "")
        text.stylize(colour, request.start(1), request.end(1))
    for pattern, colour in _MARKS:
        for found in pattern.finditer(line):
            text.stylize(colour, found.start(), found.end())
    return text
