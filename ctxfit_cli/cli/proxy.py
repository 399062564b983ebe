"""The `ctxfit proxy` command. Light on purpose: the HTTP stack is imported only when it runs."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ..errors import MissingExtra, UsageProblem
from .defaults import DEFAULT_WINDOW

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def proxy(
    upstream: Annotated[str, typer.Option("--upstream", "-u", help="The provider's API, e.g. "
                                          "https://api.anthropic.com or https://api.openai.com.")],
    budget: Annotated[int, typer.Option("--budget", "-b", min=1, help="Target tokens per request.")] = 400_000,
    window: Annotated[Optional[int], typer.Option("--window", "-w", min=1, help="The model's hard context "
                      f"limit in tokens (default {DEFAULT_WINDOW:,}).", show_default=False)] = None,
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Port to listen on (0: any free one).")] = 8787,
    host: Annotated[str, typer.Option("--host", help="Address to listen on. Anything but loopback exposes "
                                      "your API keys' use to the network.")] = "127.0.0.1",
    max_body_mb: Annotated[int, typer.Option("--max-body-mb", min=1, help="Largest request body accepted.")] = 32,
    conversations: Annotated[int, typer.Option("--conversations", min=1, help="Conversations whose "
                             "fitting state is kept in memory (least recently used are dropped).")] = 32,
    upstream_timeout: Annotated[float, typer.Option("--upstream-timeout", min=1, help="Seconds to wait for "
                                "the provider between two pieces of a reply.")] = 600.0,
) -> None:
    """Run a proxy in front of the provider API that fits every request to the budget.

    Anthropic `POST /v1/messages`, OpenAI `POST /v1/chat/completions` and `POST /v1/responses`
    (Codex CLI) are fitted (same core
    and defaults as `ctxfit fit` and `ctxfit_cli.fit`) and forwarded; replies and SSE streams
    come back unchanged; everything else is forwarded untouched. What cannot be fitted is
    forwarded unchanged (fail open); a conversation past the window gets a 400 without calling
    the provider. Prints its URL on stdout, one line per request on stderr; stats at
    GET /ctxfit/stats. Needs `pip install 'ctxfit[proxy]'`.

    To run Claude Code through it:  `ctxfit proxy --upstream https://api.anthropic.com` then
    `ANTHROPIC_BASE_URL=http://127.0.0.1:8787 claude`.
    """
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        raise MissingExtra("ctxfit proxy needs aiohttp: pip install 'ctxfit[proxy]'") from None
    import asyncio
    import gc

    from ..serve.app import Settings, serve
    from ..serve.fitting import Limits

    if not upstream.startswith(("http://", "https://")):
        raise UsageProblem(f"--upstream must be an http:// or https:// URL, not {upstream!r}")
    if host not in LOOPBACK:
        _log(f"warning: listening on {host}: anyone who can reach it can use the API keys sent through it")
    settings = Settings(upstream, Limits(budget, window), max_body=max_body_mb * 1024 * 1024,
                        conversations=conversations, upstream_timeout=upstream_timeout, log=_log)

    def ready(url: str) -> None:
        sys.stdout.write(url + "\n")
        sys.stdout.flush()
        _log(f"ctxfit proxy on {url} -> {upstream}, budget {budget:,} tokens; stats at {url}/ctxfit/stats")

    # `main` turns the cyclic GC off for short runs; a server runs for days and its HTTP stack
    # makes cycles. What is loaded now lives for the whole run: frozen, full collections skip it.
    gc.enable()
    gc.freeze()
    asyncio.run(serve(settings, host, port, ready))


_console = None


def _log(line: str) -> None:
    """One line on stderr: through rich on a terminal, plain text otherwise."""
    global _console
    if sys.stderr.isatty():
        if _console is None:
            from rich.console import Console
            _console = Console(stderr=True, highlight=False)
        from rich.markup import escape
        _console.print(escape(line), soft_wrap=True)
    else:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
