"""`ctxfit proxy`: an HTTP proxy in front of the provider API that fits every request (aiohttp).

Anthropic `POST /v1/messages` and OpenAI `POST /v1/chat/completions` are fitted to the budget
(see `fitting.py`), then forwarded; every other request is forwarded untouched. Replies, SSE
streams included, are passed back as they arrive, byte for byte (the provider's compression
too). Headers, API keys included, are forwarded and never logged. One line per request goes to
the log; `GET /ctxfit/stats` shows what was done per conversation.
"""

from __future__ import annotations

import asyncio
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import aiohttp
import orjson
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from ..core.options import DEFAULT_WINDOW
from .body import Readers
from .conversations import Conversations, Stats, conversation_key
from .fitting import DIALECTS, Limits, Outcome, fit_body, parse, provider_error
from .usage import Reported, ReplyUsage

#: Bodies from this size on are read and fitted in a worker thread, so the event loop keeps
#: serving other requests (and streaming their replies) meanwhile.
WORKER_FROM = 256 * 1024
#: Headers that belong to one connection, not to the request (RFC 9110 §7.6.1), plus the ones
#: aiohttp sets itself.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                        "trailer", "transfer-encoding", "upgrade", "host", "content-length"})


@dataclass
class Settings:
    upstream: str
    limits: Limits
    max_body: int = 32 * 1024 * 1024
    conversations: int = 32
    upstream_timeout: float = 600.0
    log: Callable[[str], None] = print


@dataclass
class Totals:
    requests: int = 0
    fitted: int = 0
    passed_through: int = 0  # not a fitted path
    failed_open: int = 0
    rejected: int = 0
    fitted_in_worker: int = 0
    upstream_errors: int = 0
    started: float = field(default_factory=time.time)


class Proxy:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.upstream = settings.upstream.rstrip("/")
        self.conversations = Conversations(settings.conversations)
        self.readers = Readers(settings.conversations)
        self.totals = Totals()
        self.workers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ctxfit-fit")
        self.client: aiohttp.ClientSession | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.settings.max_body)
        app.router.add_get("/ctxfit/stats", self.stats)
        for path in DIALECTS:
            app.router.add_post(path, self.fitted)
        app.router.add_route("*", "/{tail:.*}", self.passthrough)
        app.on_startup.append(self._open)
        app.on_cleanup.append(self._close)
        return app

    async def _open(self, _app: web.Application) -> None:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=self.settings.upstream_timeout)
        # auto_decompress off: compressed replies pass through as the provider sent them.
        self.client = aiohttp.ClientSession(timeout=timeout, auto_decompress=False,
                                            connector=aiohttp.TCPConnector(limit=0))

    async def _close(self, _app: web.Application) -> None:
        await self.client.close()
        self.workers.shutdown(wait=False, cancel_futures=True)

    # --- handlers -----------------------------------------------------------------------------

    async def stats(self, _request: web.Request) -> web.Response:
        totals = self.totals
        document = {"upstream": self.upstream, "budget": self.settings.limits.budget,
                    "window": self.settings.limits.window or DEFAULT_WINDOW,
                    "uptime_s": round(time.time() - totals.started, 1),
                    "totals": {k: v for k, v in vars(totals).items() if k != "started"},
                    "conversations": self.conversations.stats()}
        return web.Response(body=orjson.dumps(document, option=orjson.OPT_INDENT_2), content_type="application/json")

    async def passthrough(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        self.totals.requests += 1
        self.totals.passed_through += 1
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        response, status = await self.forward(request, body, None)
        self._log(request, started, status, "passed through")
        return response

    async def fitted(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        self.totals.requests += 1
        dialect = DIALECTS[request.path]
        body = await self._body(request, dialect)
        if isinstance(body, web.Response):
            return body
        outcome = await self._fit(body, dialect)
        stats = outcome.conversation.stats if outcome.conversation else None
        if outcome.error is not None:
            self.totals.rejected += 1
            stats.rejected += 1
            self._log(request, started, 400, f"{_conversation(outcome)} {outcome.plan.tokens_after:,} tokens: "
                                             "past the window, answered 400 without calling the provider")
            return web.Response(status=400, body=outcome.error, content_type="application/json")
        if outcome.skipped:
            self.totals.failed_open += 1
            if stats:
                stats.failed_open += 1
        elif outcome.body is not body:
            self.totals.fitted += 1
        response, status = await self.forward(request, outcome.body, stats, outcome)
        self._log(request, started, status, _describe(outcome))
        return response

    async def _body(self, request: web.Request, dialect: str = "anthropic") -> bytes | web.Response:
        try:
            return await request.read()
        except web.HTTPRequestEntityTooLarge:
            message = (f"request body over the proxy's limit of {self.settings.max_body:,} bytes "
                       "(ctxfit proxy --max-body-mb)")
            self._log(request, time.perf_counter(), 413, message)
            return web.Response(status=413, body=provider_error(dialect, message), content_type="application/json")

    async def _fit(self, body: bytes, dialect: str) -> Outcome:
        big = len(body) >= WORKER_FROM
        loop = asyncio.get_running_loop()
        run = (lambda f, *a: loop.run_in_executor(self.workers, f, *a)) if big else _now
        parsed = await run(parse, self.readers, body)
        if isinstance(parsed, str):
            return Outcome(body, skipped=parsed)
        request, layout = parsed
        conversation = self.conversations.get(conversation_key(dialect, request), dialect)
        async with conversation.lock:
            outcome = await run(fit_body, body, request, layout, dialect, conversation, self.settings.limits)
        conversation.stats.requests += 1
        if outcome.plan is not None and outcome.error is None:
            conversation.stats.record_plan(outcome.plan)
        self.totals.fitted_in_worker += big
        return outcome

    # --- forwarding ---------------------------------------------------------------------------

    async def forward(self, request: web.Request, body: bytes, stats: Stats | None,
                      fitted: Outcome | None = None) -> tuple[web.StreamResponse, str]:
        """Send the request upstream and stream the reply back as it arrives: (response, status
        for the log). The usage the reply reports anchors the `fitted` conversation."""
        headers = CIMultiDict((k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP)
        url = URL(self.upstream + request.rel_url.raw_path_qs, encoded=True)
        try:
            upstream = await self.client.request(request.method, url, headers=headers, data=body,
                                                 allow_redirects=False)
        except asyncio.TimeoutError:
            return self._upstream_error(request, 504, "the provider did not answer in time"), "504"
        except aiohttp.ClientError as error:
            return self._upstream_error(request, 502, f"cannot reach the provider ({type(error).__name__})"), "502"
        async with upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in upstream.headers.items():
                if name.lower() not in HOP_BY_HOP or name.lower() == "content-length":
                    response.headers.add(name, value)
            await response.prepare(request)
            usage = ReplyUsage(upstream.headers.get("content-type", ""), upstream.headers.get("content-encoding", ""))
            chunks = upstream.content.iter_any()
            anchoring = fitted if upstream.status == 200 else None
            while True:
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    break
                except (aiohttp.ClientError, asyncio.TimeoutError):
                    # The provider broke off mid-reply: break off the agent's reply the same way.
                    self.totals.upstream_errors += 1
                    request.transport.close()
                    return response, f"{upstream.status} (broken off by the provider mid-reply)"
                usage.feed(chunk)
                if anchoring is not None and usage.found is not None:  # before the agent has it all
                    await _anchor(anchoring, usage.found)
                    anchoring = None
                try:
                    await response.write(chunk)
                except ConnectionResetError:  # the agent went away: the provider's reply is dropped
                    return response, f"{upstream.status} (the client went away mid-reply)"
            await response.write_eof()
        reported = usage.reported()
        if reported is not None and stats is not None:
            stats.prompt_tokens += reported.prompt
            stats.cache_read_tokens += reported.cache_read
        return response, str(upstream.status)

    def _upstream_error(self, request: web.Request, status: int, message: str) -> web.Response:
        self.totals.upstream_errors += 1
        dialect = DIALECTS.get(request.path, "anthropic")
        return web.Response(status=status, body=provider_error(dialect, f"ctxfit proxy: {message}"),
                            content_type="application/json")

    def _log(self, request: web.Request, started: float, status: int | str, what: str) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        self.settings.log(f"{request.method} {request.path} {status} {elapsed:,.0f} ms  {what}")


async def _now(function, *args):
    return function(*args)


def _conversation(outcome: Outcome) -> str:
    return f"conversation {outcome.conversation.key}" if outcome.conversation else "request"


def _describe(outcome: Outcome) -> str:
    if outcome.skipped:
        return f"{_conversation(outcome)} forwarded unchanged, not fitted: {outcome.skipped}"
    plan = outcome.plan
    cleared = sum(len(b.results) for b in plan.batches if b.cleared)
    stage = plan.stage if plan.stage == "none" else f"{plan.stage}, {cleared} results cleared"
    over = ", over the budget: the smallest request" if plan.overrun else ""
    counted = (f"{plan.confirmed:,} confirmed {'+' if plan.estimated >= 0 else '-'} {abs(plan.estimated):,} estimated"
               if plan.confirmed else "estimated")
    return f"{_conversation(outcome)} {plan.tokens_before:,} -> {plan.tokens_after:,} tokens ({stage}{over}; {counted})"


async def _anchor(outcome: Outcome, reported: Reported) -> None:
    """The size the provider reported for the request sent anchors the conversation's next one
    (DESIGN §11); the session is not shared while a request of its conversation is fitted."""
    if outcome.session is None or outcome.sent is None or reported.prompt <= 0:
        return
    async with outcome.conversation.lock:
        outcome.session.record(reported, sent=outcome.sent)


async def serve(settings: Settings, host: str, port: int, ready: Callable[[str], None]) -> None:
    """Run the proxy until SIGINT or SIGTERM; `ready` gets its URL once it listens."""
    runner = web.AppRunner(Proxy(settings).app(), access_log=None, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = site._server.sockets[0].getsockname()
    ready(f"http://{bound[0]}:{bound[1]}" if ":" not in bound[0] else f"http://[{bound[0]}]:{bound[1]}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
