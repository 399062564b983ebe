"""Running `ctxfit proxy`: start it (its fitting workers, its listening socket), serve until
SIGINT or SIGTERM, then stop within the grace it announces and say what it did (`app.py` is
the proxy itself)."""

from __future__ import annotations

import asyncio
import signal
import socket
import time
from collections.abc import Callable

from aiohttp import web

from ..errors import EXIT_INTERNAL, CtxfitError, UsageProblem
from .app import Proxy, Settings
from .clients import ConnectionGuard, connection_limit, quiet_http_stack
from .pool import WorkerLost
from .supervise import summary


class StartFailed(CtxfitError):
    """The proxy could not start its fitting workers: one line, nothing left running."""

    exit_code = EXIT_INTERNAL


async def serve(
    settings: Settings,
    host: str,
    port: int,
    ready: Callable[[str], None],
    listen_fd: int | None = None,
    spawned: list[asyncio.subprocess.Process] | None = None,
) -> None:
    """Run the proxy until SIGINT or SIGTERM; `ready` gets its URL once it listens. With
    `listen_fd` it serves on that listening socket, made and bound by its parent (`ctxfit wrap`,
    which starts the agent meanwhile: its first connections wait in the socket's backlog).
    `spawned`: its fitting workers, started already (`spawning.py`)."""
    # auto_decompress off: a compressed request body is forwarded as sent, never decompressed
    # and sent on under its Content-Encoding.
    proxy = Proxy(settings, spawned)
    quiet_http_stack(proxy.errors)
    limit, warning = connection_limit(settings.max_connections)
    if warning:
        settings.log(warning)
    # aiohttp's keep-alive timer is the header timeout too: it runs from the moment a connection
    # opens and closes one that has not sent a whole request head when it fires.
    runner = web.AppRunner(
        proxy.app(),
        access_log=None,
        handler_cancellation=True,
        auto_decompress=False,
        shutdown_timeout=settings.shutdown_grace,
        keepalive_timeout=settings.client_timeout,
    )
    try:
        await runner.setup()  # (the fitting workers start here)
    except WorkerLost as error:
        await runner.cleanup()
        raise StartFailed(f"ctxfit proxy: its fitting workers could not start ({error})") from None
    proxy.guard = ConnectionGuard(limit, proxy.errors)
    assert runner.server is not None  # (made by setup)
    proxy.guard.install(runner.server)
    site: web.BaseSite
    if listen_fd is not None:
        site = web.SockSite(runner, socket.socket(fileno=listen_fd))
    else:
        site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as error:  # (the port is taken, or not ours to take): one line, nothing left running
        await runner.cleanup()
        why = str(error.strerror).rsplit(": ", 1)[-1]
        raise UsageProblem(f"ctxfit proxy cannot listen on {host}:{port} ({why}): choose another --port") from None
    assert isinstance(site._server, asyncio.Server)  # (started just above)
    bound = site._server.sockets[0].getsockname()
    ready(f"http://{bound[0]}:{bound[1]}" if ":" not in bound[0] else f"http://[{bound[0]}]:{bound[1]}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        proxy.stopping = True
        await _stop(runner, proxy, settings)


async def _stop(runner: web.AppRunner, proxy: Proxy, settings: Settings) -> None:
    """Stop listening, let the requests in flight finish for the grace period, then cut them.
    A second SIGINT or SIGTERM cuts them at once."""
    if proxy.in_flight:
        settings.log(
            f"stopping: up to {settings.shutdown_grace:g} s for the {proxy.in_flight} "
            "requests in flight (signal again to stop at once)"
        )
    stopping = asyncio.ensure_future(_drain(runner, proxy, settings.shutdown_grace))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.cancel)
    try:
        await stopping
    except asyncio.CancelledError:
        pass
    settings.log(f"stopped after {_duration(time.time() - proxy.totals.started)}: {summary(proxy.document())}")


def _duration(seconds: float) -> str:
    """`42 s`, `12 min`, `3.5 h`."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


async def _drain(runner: web.AppRunner, proxy: Proxy, grace: float) -> None:
    """The grace is kept here, not left to aiohttp's shutdown: once its grace is over aiohttp
    only stops reading the requests, and waits as long again for a handler awaiting the
    provider. What is still in flight after the grace is cut (its client sees the connection
    close), so the stop takes the grace it announced."""
    for site in runner.sites:
        await site.stop()  # no new connection
    if runner.server is not None:
        runner.server.pre_shutdown()  # no new request on a kept-alive one
    if proxy.handling:
        _, late = await asyncio.wait(set(proxy.handling), timeout=grace)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late)
    await runner.cleanup()
