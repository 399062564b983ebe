"""`ctxfit proxy`: an HTTP proxy in front of the provider API that fits every request (aiohttp).

Anthropic `POST /v1/messages`, OpenAI `POST /v1/chat/completions` and `POST /v1/responses` are
fitted to the budget (see `fitting.py`, `responses.py`; each request's budget and window come
from its model, `limits.py`), then forwarded; every other request is forwarded untouched. Replies, SSE
streams included, are passed back as they arrive, byte for byte (the provider's compression
too: the provider is asked for exactly the encodings the agent asked for). Headers, API keys
included, are forwarded and never logged. One line per request goes to the log; `GET /ctxfit/stats`
shows what was done per conversation.
"""

from __future__ import annotations

import asyncio
import ipaddress
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import aiohttp
import orjson
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from ..core.model import Dialect
from . import responses
from .body import READER_MEMORY, BodyError, Readers
from .clients import ConnectionGuard, RateLimitedLog, connection_limit, quiet_http_stack
from .conversations import SESSION_MEMORY, Conversations, Stats, conversation_key
from .errors import provider_error
from .fitting import DIALECTS, Outcome, fit_body, parse
from .limits import LimitRule
from .upstream import Upstream
from .usage import ReplyUsage, Reported

#: Bodies from this size on are read and fitted in a worker thread, so the event loop keeps
#: serving other requests (and streaming their replies) meanwhile.
WORKER_FROM = 256 * 1024
#: Headers that belong to one connection, not to the request (RFC 9110 §7.6.1), plus the ones
#: aiohttp sets itself.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
#: Request headers aiohttp's client adds when the agent sent none: never added.
AUTO_HEADERS = ("Accept-Encoding", "User-Agent")


@dataclass
class Settings:
    upstream: str
    limits: LimitRule
    max_body: int = 32 * 1024 * 1024
    #: Conversation state kept in memory (sessions and parsed bodies, least recently used
    #: dropped first): at most this many bytes, as estimated, and this many conversations.
    memory: int = 512 * 1024 * 1024
    conversations: int = 256
    upstream_timeout: float = 600.0
    #: On SIGTERM or SIGINT, how long requests in flight may take to finish before they are cut.
    shutdown_grace: float = 5.0
    #: Seconds a client gets to send a request's headers, and again its body (`clients.py`).
    client_timeout: float = 30.0
    max_connections: int = 512
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
        self.upstream = Upstream.parse(settings.upstream)
        # The memory is shared in proportion to what a conversation's session and reader hold;
        # the readers' part half for Chat/Messages bodies, half for Responses bodies.
        sessions = settings.memory * SESSION_MEMORY // (SESSION_MEMORY + READER_MEMORY)
        self.conversations = Conversations(settings.conversations, sessions)
        self.readers = Readers(settings.conversations, (settings.memory - sessions) // 2)
        self.responses_readers = responses.readers(settings.conversations, (settings.memory - sessions) // 2)
        self.totals = Totals()
        self.workers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ctxfit-fit")
        self.client: aiohttp.ClientSession | None = None
        self.in_flight = 0
        #: The tasks handling the requests in flight: what a stop cuts once the grace is over.
        self.handling: set[asyncio.Task] = set()
        self.errors = RateLimitedLog(settings.log)
        self.guard: ConnectionGuard | None = None  # set once the server exists
        #: The replies under way, by id of their request (the last resort must not start another).
        self._replies: dict[int, web.StreamResponse] = {}

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.settings.max_body, middlewares=[self._each_request])
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
        self.client = aiohttp.ClientSession(
            timeout=timeout, auto_decompress=False, connector=aiohttp.TCPConnector(limit=0)
        )

    async def _close(self, _app: web.Application) -> None:
        assert self.client is not None  # (made on start-up, before any request)
        await self.client.close()
        self.workers.shutdown(wait=False, cancel_futures=True)

    # --- handlers -----------------------------------------------------------------------------

    @web.middleware
    async def _each_request(self, request: web.Request, handler) -> web.StreamResponse:
        """Counts the requests in flight (for a graceful stop), and is the last resort: an error
        no handler expected is one log line and a provider-shaped 500, never a traceback."""
        self.in_flight += 1
        task = asyncio.current_task()
        if task is not None:
            self.handling.add(task)
        if self.guard is not None:
            self.guard.request_started(request.protocol)
        try:
            return await handler(request)
        except (web.HTTPException, asyncio.CancelledError):
            raise
        except Exception as error:
            self.errors.error(
                f"internal {type(error).__name__}",
                f"{request.method} {request.path} 500  ctxfit proxy error: {_reason(error)}",
            )
            started = self._replies.get(id(request))
            if started is not None:  # the reply is under way: break it off, as a dropped connection does
                if request.transport is not None:
                    request.transport.close()
                return started
            dialect = DIALECTS.get(request.path, "anthropic")
            return web.Response(
                status=500,
                content_type="application/json",
                body=provider_error(dialect, 500, f"ctxfit proxy: internal error ({_reason(error)})"),
            )
        finally:
            self.in_flight -= 1
            self.handling.discard(task)
            self._replies.pop(id(request), None)
            if self.guard is not None:
                self.guard.request_finished(request.protocol)

    async def stats(self, request: web.Request) -> web.Response:
        if not _loopback(request.host):
            # A web page whose name resolves to 127.0.0.1 (DNS rebinding) must not read it.
            message = (
                "ctxfit proxy: /ctxfit/stats answers only requests addressed to a loopback host "
                "(Host: 127.0.0.1, localhost or [::1])"
            )
            return web.Response(status=403, body=orjson.dumps({"error": message}), content_type="application/json")
        totals = self.totals
        rule = self.settings.limits
        document = {
            "upstream": self.upstream.shown,
            "limits": rule.describe(),
            "budget": rule.budget,
            "budget_share": rule.share,
            "window": rule.window,
            "uptime_s": round(time.time() - totals.started, 1),
            "in_flight": self.in_flight - 1,  # this request aside
            "memory_mb": {
                "limit": round(self.settings.memory / 2**20, 1),
                "held": round((self.conversations.held() + self.readers.held()) / 2**20, 1),
            },
            "totals": {k: v for k, v in vars(totals).items() if k != "started"},
            "conversations": self.conversations.stats(),
        }
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
        outcome = await self._fit(body, dialect, request.headers.get("content-encoding", "identity"))
        stats = outcome.conversation.stats if outcome.conversation else None
        if outcome.error is not None:
            # (an error comes only from a fit: its conversation, plan and limits are set)
            assert stats is not None and outcome.plan is not None and outcome.limits is not None
            self.totals.rejected += 1
            stats.rejected += 1
            self._log(
                request,
                started,
                400,
                f"{_conversation(outcome)} {outcome.plan.tokens_after:,} tokens: "
                "past the window, answered 400 without calling the provider"
                f"; {outcome.limits.about}",
            )
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

    async def _body(self, request: web.Request, dialect: Dialect = "anthropic") -> bytes | web.Response:
        try:
            return await asyncio.wait_for(request.read(), self.settings.client_timeout)
        except TimeoutError:
            message = f"the request body did not arrive within {self.settings.client_timeout:g} s"
            self.errors.error("body timeout", f"{request.method} {request.path} 408  {message}")
            response = web.Response(
                status=408,
                body=provider_error(dialect, 408, f"ctxfit proxy: {message}"),
                content_type="application/json",
            )
            response.force_close()
            return response
        except web.HTTPRequestEntityTooLarge:
            message = (
                f"request body over the proxy's limit of {self.settings.max_body:,} bytes (ctxfit proxy --max-body-mb)"
            )
            self._log(request, time.perf_counter(), 413, message)
            return web.Response(status=413, body=provider_error(dialect, 413, message), content_type="application/json")

    async def _fit(self, body: bytes, dialect: Dialect, encoding: str = "identity") -> Outcome:
        """The body fitted, or the agent's own bytes with the reason they were not (fail open).

        The one place a request fails open: whatever reading, recognising or fitting the body
        raises (a body that is not JSON, a value the serializer refuses, nesting past the
        parser's recursion limit, a request whose history the provider holds, a bug) sends the
        body on as it came, with one log line.
        """
        conversation = None
        try:
            if encoding.lower() not in ("identity", ""):
                raise BodyError(f"a compressed body (Content-Encoding: {encoding})")
            big = len(body) >= WORKER_FROM
            loop = asyncio.get_running_loop()
            run = (lambda f, *a: loop.run_in_executor(self.workers, f, *a)) if big else _now
            api = responses if dialect == "responses" else None
            readers = self.responses_readers if api else self.readers
            request, layout = await run(api.parse if api else parse, readers, body)
            key = (api.conversation_key if api else conversation_key)(dialect, request)
            conversation = self.conversations.get(key, dialect)
            limits = self.settings.limits.for_request(request, dialect)
            async with conversation.lock:
                outcome = await run(
                    api.fit_body if api else fit_body, body, request, layout, dialect, conversation, limits
                )
            outcome.limits = limits
            self.conversations.fitted(conversation, len(body))
            conversation.stats.requests += 1
            if outcome.plan is not None and outcome.error is None:
                conversation.stats.record_plan(outcome.plan)
            self.totals.fitted_in_worker += big
            return outcome
        except Exception as error:
            if conversation is not None:
                conversation.stats.requests += 1
            return Outcome(body, conversation, skipped=_reason(error))

    # --- forwarding ---------------------------------------------------------------------------

    async def forward(
        self, request: web.Request, body: bytes, stats: Stats | None, fitted: Outcome | None = None
    ) -> tuple[web.StreamResponse, str]:
        """Send the request upstream and stream the reply back as it arrives: (response, status
        for the log). The usage the reply reports anchors the `fitted` conversation."""
        headers = CIMultiDict((k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP)
        if self.upstream.authorization and "authorization" not in headers:
            headers["Authorization"] = self.upstream.authorization
        url = URL(self.upstream.base + request.rel_url.raw_path_qs, encoded=True)
        assert self.client is not None  # (made on start-up, before any request)
        try:
            # Only the agent's headers: aiohttp would add its own Accept-Encoding (and then a
            # client that asked for none would get gzip back) and User-Agent.
            upstream = await self.client.request(
                request.method, url, headers=headers, data=body, allow_redirects=False, skip_auto_headers=AUTO_HEADERS
            )
        except TimeoutError:
            return self._upstream_error(request, 504, "the provider did not answer in time"), "504"
        except aiohttp.ClientError as error:
            return self._upstream_error(request, 502, f"cannot reach the provider ({type(error).__name__})"), "502"
        async with upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in upstream.headers.items():
                if name.lower() not in HOP_BY_HOP or name.lower() == "content-length":
                    response.headers.add(name, value)
            await response.prepare(request)
            self._replies[id(request)] = response
            usage = ReplyUsage(upstream.headers.get("content-type", ""), upstream.headers.get("content-encoding", ""))
            chunks = upstream.content.iter_any()
            anchoring = fitted if upstream.status == 200 else None
            while True:
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    break
                except (TimeoutError, aiohttp.ClientError):
                    # The provider broke off mid-reply: break off the agent's reply the same way.
                    self.totals.upstream_errors += 1
                    if request.transport is not None:  # (None once the agent has hung up itself)
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
        return web.Response(
            status=status,
            body=provider_error(dialect, status, f"ctxfit proxy: {message}"),
            content_type="application/json",
        )

    def _log(self, request: web.Request, started: float, status: int | str, what: str) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        self.settings.log(f"{request.method} {request.path} {status} {elapsed:,.0f} ms  {what}")


def _loopback(host: str) -> bool:
    """Whether a Host header names this machine's loopback (`localhost:8787`, `[::1]:8787`, …)."""
    try:
        name = URL.build(scheme="http", authority=host).host or ""
        return name in ("localhost", "localhost.") or ipaddress.ip_address(name).is_loopback
    except ValueError:  # not an address: a name, and not localhost
        return False


async def _now(function, *args):
    return function(*args)


def _reason(error: Exception) -> str:
    """Why a body was not fitted, on one short line."""
    text = str(error) if isinstance(error, BodyError) else f"{type(error).__name__}: {error}"
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:199] + "…"


def _conversation(outcome: Outcome) -> str:
    return f"conversation {outcome.conversation.key}" if outcome.conversation else "request"


def _describe(outcome: Outcome) -> str:
    if outcome.skipped:
        return f"{_conversation(outcome)} forwarded unchanged, not fitted: {outcome.skipped}"
    plan = outcome.plan
    assert plan is not None  # (not skipped: fitted)
    cleared = sum(len(b.results) for b in plan.batches if b.cleared)
    stage = plan.stage if plan.stage == "none" else f"{plan.stage}, {cleared} results cleared"
    over = ", over the budget: the smallest request" if plan.overrun else ""
    limits = f"; {outcome.limits.about}, budget {outcome.limits.budget:,}" if outcome.limits else ""
    counted = (
        f"{plan.confirmed:,} confirmed {'+' if plan.estimated >= 0 else '-'} {abs(plan.estimated):,} estimated"
        if plan.confirmed
        else "estimated"
    )
    return (
        f"{_conversation(outcome)} {plan.tokens_before:,} -> {plan.tokens_after:,} tokens "
        f"({stage}{over}; {counted}){limits}"
    )


async def _anchor(outcome: Outcome, reported: Reported) -> None:
    """The size the provider reported for the request sent anchors the conversation's next one
    (DESIGN §11); the session is not shared while a request of its conversation is fitted."""
    if outcome.session is None or outcome.sent is None or outcome.conversation is None or reported.prompt <= 0:
        return
    async with outcome.conversation.lock:
        outcome.session.record(reported, sent=outcome.sent)


async def serve(settings: Settings, host: str, port: int, ready: Callable[[str], None]) -> None:
    """Run the proxy until SIGINT or SIGTERM; `ready` gets its URL once it listens."""
    # auto_decompress off: a compressed request body is forwarded as sent, never decompressed
    # and sent on under its Content-Encoding.
    proxy = Proxy(settings)
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
    await runner.setup()
    proxy.guard = ConnectionGuard(limit, proxy.errors)
    assert runner.server is not None  # (made by setup)
    proxy.guard.install(runner.server)
    site = web.TCPSite(runner, host, port)
    await site.start()
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
