"""`ctxfit proxy`: an HTTP proxy in front of the provider API that fits every request (aiohttp).

Anthropic `POST /v1/messages`, OpenAI `POST /v1/chat/completions` and `POST /v1/responses`, and
Gemini's `/v1beta/models/{model}:generateContent` and `:streamGenerateContent` are fitted to the
budget (see `fitting.py`, `responses.py`, `gemini.py`; each request's budget and window come
from its model, `limits.py`), then forwarded, the reply telling the agent what the fitted
request measures (`ctxfit-tokens`, `ctxfit-counted`); every other request is forwarded untouched
(`HEAD /`, models, …). `count_tokens` too, on purpose: Claude Code asks it the size of one piece
(a file it read) to decide what to send, and the answer it wants is the provider's count of
exactly those bytes; the request the piece then goes into is fitted when it is sent. A
WebSocket upgrade (Codex 0.171 asks for Responses over a WebSocket first) is refused at once
with 426 Upgrade Required, the one answer on which Codex falls back to HTTPS at once (measured:
0.1 s; a 200, 404 or 501 costs it 7 tries and ~6.5 s), so everything it sends goes over HTTPS,
where it is fitted. Replies, SSE streams included, are passed back as they arrive, byte for
byte (the provider's compression too: the provider is asked for exactly the encodings the agent
asked for). Headers, API keys
included, are forwarded and never logged. One line per request goes to the log (a request the
client gave up on too); `GET /ctxfit/stats` shows what was done per conversation.

The event loop only moves bytes: bodies are fitted in worker processes, each conversation in
the same one (`pool.py`), so a team's conversations are fitted side by side on the machine's
cores while replies stream on. A body that provably needs no fitting (its conversation's last
one, which its worker forwarded unchanged, grown by a few elements whose bytes bound their
tokens within the budget) goes on from here without the trip (`bypass.py`): most of an ongoing
conversation's requests; its log line says "fast path". So does a new conversation's first
request whose whole body provably fits (`opening.py`): it goes on at once, and its worker reads
it while the provider answers.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from ..core.model import Dialect
from .bypass import Bypass, Passage, opened
from .channel import Fitted, Setup, base_limit, reason
from .clients import ConnectionGuard, RateLimitedLog
from .errors import NO_RETRY, message_of, provider_error
from .ledger import Ledger, Stats
from .limits import asked_window
from .log_lines import conversation, describe, kind_of
from .opening import Opening, Owners
from .owner import CREDENTIAL_HEADERS, CREDENTIAL_QUERY, owner
from .paths import DIALECTS, HANDLED_AS, dialect_of
from .pool import NotFitted, Pool, WorkerLost
from .refusals import read_refusal, tighter
from .settings import Settings, Totals
from .upstream import Upstream, why_unreachable
from .usage import ReplyUsage

if TYPE_CHECKING:
    from ..core.reported import Reported

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
#: What a request carries for its log line: when it started, what was done, whether it has it.
_STARTED, _WHAT, _LOGGED, _REFUSAL = "ctxfit.started", "ctxfit.what", "ctxfit.logged", "ctxfit.refusal"
#: (route, the passage the request opens or takes, or None: `bypass.py`), set as it is fitted.
_PASSAGE = "ctxfit.passage"
#: A request that went on at once (`opening.py`): its `_AtOnce`; and the reply's usage and
#: refusal message, which its worker's outcome is told of once it is known.
_AT_ONCE, _USAGE, _SAID = "ctxfit.at_once", "ctxfit.usage", "ctxfit.said"
#: Bytes of a provider's error reply kept to read its message (the reply itself passes whole).
ERROR_BYTES = 64 * 1024


class Proxy:
    def __init__(self, settings: Settings, spawned: list[asyncio.subprocess.Process] | None = None) -> None:
        """`spawned`: fitting workers started already (`spawning.py`), for its pool."""
        self.settings = settings
        self.upstream = Upstream.parse(settings.upstream)
        self.ledger = Ledger()
        self.totals = Totals()
        self.client: aiohttp.ClientSession | None = None
        self.in_flight = 0
        #: The tasks handling the requests in flight: what a stop cuts once the grace is over.
        self.handling: set[asyncio.Task] = set()
        self.errors = RateLimitedLog(settings.log)
        setup = Setup(settings.limits, settings.memory // settings.workers, settings.conversations)
        self.pool = Pool(settings.workers, setup, self.errors.error, settings.fit_timeout, spawned)
        #: Requests that provably need no fitting go on from here, without a worker (`bypass.py`).
        self.bypass = Bypass(base_limit(setup))
        #: Whose conversations the proxy has seen: a new one's first request may go on at once (`opening.py`).
        self.owners = Owners(settings.limits)
        self.stopping = False
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
        await self.pool.start()
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=self.settings.upstream_timeout)
        # auto_decompress off: compressed replies pass through as the provider sent them.
        self.client = aiohttp.ClientSession(
            timeout=timeout, auto_decompress=False, connector=aiohttp.TCPConnector(limit=0)
        )
        # A request that went on at once starts its worker's read once its body is upstream
        # (`_at_once`): traced on a session of its own, so that no other request pays for it.
        traces = aiohttp.TraceConfig()
        traces.on_request_chunk_sent.append(_body_sent)
        self.at_once_client = aiohttp.ClientSession(
            timeout=timeout, auto_decompress=False, connector=aiohttp.TCPConnector(limit=0), trace_configs=[traces]
        )

    async def _close(self, _app: web.Application) -> None:
        if self.client is not None:  # (None when the workers could not start)
            await self.client.close()
            await self.at_once_client.close()
        await self.pool.close()

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
            self.guard.request_started(request.protocol, credential(request))
        try:
            return await handler(request)
        except asyncio.CancelledError:
            # The client went away (aiohttp cancels its handler) or the proxy is stopping: the
            # request still gets its line.
            if not request.get(_LOGGED):
                self.totals.client_gone += not self.stopping
                reply = self._replies.get(id(request))
                when = "mid-reply" if reply is not None else "before the reply"
                why = "cut off as the proxy stopped" if self.stopping else f"the client went away {when}"
                evicted = self.guard.closed(request.protocol) if self.guard is not None else ""
                why = f"closed to make room: {evicted}" if evicted else why
                status = f"{reply.status if reply is not None else '-'} ({why})"
                self._log(request, request.get(_STARTED, time.perf_counter()), status, request.get(_WHAT, ""))
            raise
        except web.HTTPException:
            raise
        except Exception as error:
            if not request.get(_LOGGED):  # its own line: every request has one, however many fail so
                self._log(
                    request, request.get(_STARTED, time.perf_counter()), 500, f"ctxfit proxy error: {_reason(error)}"
                )
            started = self._replies.get(id(request))
            if started is not None:  # the reply is under way: break it off, as a dropped connection does
                if request.transport is not None:
                    request.transport.close()
                return started
            dialect = dialect_of(request.path)
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
        document = self.document()
        document["in_flight"] -= 1  # this request aside
        return web.Response(body=orjson.dumps(document, option=orjson.OPT_INDENT_2), content_type="application/json")

    def document(self) -> dict:
        """What `GET /ctxfit/stats` shows."""
        totals = self.totals
        rule = self.settings.limits
        document = {
            "upstream": self.upstream.shown,
            "limits": rule.describe(),
            "budget": rule.budget,
            "budget_share": rule.share,
            "window": rule.window,
            "uptime_s": round(time.time() - totals.started, 1),
            "in_flight": self.in_flight,
            "memory_mb": {
                "limit": round(self.settings.memory / 2**20, 1),
                "held": round(self.pool.held() / 2**20, 1),
            },
            "workers": {"processes": self.pool.size, "replaced": self.pool.replaced, "fitting": self.pool.fitting()},
            "totals": {k: v for k, v in vars(totals).items() if k != "started"},
            "conversations": self.ledger.to_dict(),
        }
        return document

    async def passthrough(self, request: web.Request) -> web.StreamResponse:
        started = request[_STARTED] = time.perf_counter()
        if request.headers.get("upgrade", "").lower() == "websocket":
            return self._refuse_websocket(request, started)
        request[_WHAT] = "passed through"
        self.totals.requests += 1
        self.totals.passed_through += 1
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        response, status = await self.forward(request, body, None)
        self._log(request, started, status, "passed through")
        return response

    async def fitted(self, request: web.Request) -> web.StreamResponse:
        started = request[_STARTED] = time.perf_counter()
        self.totals.requests += 1
        dialect = dialect_of(request.path)
        body = await self._body(request, dialect)
        if isinstance(body, web.Response):
            return body
        outcome, stats = await self._fit(request, body, dialect)
        if outcome.error is not None:
            # (an error comes only from a fit: its conversation, plan and limits are set)
            assert stats is not None and outcome.plan is not None and outcome.limits is not None
            self.totals.rejected += 1
            stats.rejected += 1
            self._log(
                request,
                started,
                400,
                f"{conversation(outcome)} {outcome.plan.tokens_after:,} tokens: "
                "past the window, answered 400 without calling the provider"
                f"; {outcome.limits.about}",
            )
            return web.Response(status=400, body=outcome.error, content_type="application/json")
        if outcome.skipped:
            self.totals.failed_open += 1
            self.totals.tally(self.totals.not_fitted, kind_of(outcome.skipped))
            if stats:
                stats.failed_open += 1
        elif outcome.body is not body:
            self.totals.fitted += 1
        request[_WHAT] = describe(outcome)
        response, status = await self.forward(request, outcome.body, stats, outcome)
        if _AT_ONCE in request:
            status = self._settled(request, body, status)
        self._passed(request, status)
        self._log(request, started, status, request[_WHAT])
        return response

    def _passed(self, request: web.Request, status: str) -> None:
        """The request's reply is over: anything but a whole 200 (a refusal above all: its
        lesson is the worker's to apply; a reply broken off) sends the conversation's next
        request to its worker. A 200's passage was passed as its reply began (`_relay`)."""
        route, _ = request.get(_PASSAGE, (None, None))
        if route is not None and status != "200":
            self.bypass.drop(route)

    async def _body(self, request: web.Request, dialect: Dialect = "anthropic") -> bytes | web.Response:
        try:
            async with asyncio.timeout(self.settings.client_timeout):  # (no task of its own, as `wait_for` makes)
                body = await request.read()
            if self.guard is not None:
                self.guard.body_read(request.protocol)  # (under way now: never evicted)
            return body
        except TimeoutError:
            message = f"the request body did not arrive within {self.settings.client_timeout:g} s"
            self._log(request, request.get(_STARTED, time.perf_counter()), 408, message)  # (its own line, as any)
            response = web.Response(
                status=408,
                body=provider_error(dialect, 408, f"ctxfit proxy: {message}"),
                content_type="application/json",
            )
            response.force_close()
            return response
        except ConnectionError:  # the client went away before it had sent its body, or was closed
            closed = self.guard.closed(request.protocol) if self.guard is not None else ""
            self.totals.client_gone += not closed
            status = f"- (closed to make room: {closed})" if closed else "- (the client went away)"
            self._log(request, request.get(_STARTED, time.perf_counter()), status, "")
            return web.Response(status=400)  # (no one to send it to)
        except web.HTTPRequestEntityTooLarge:
            message = (
                f"request body over the proxy's limit of {self.settings.max_body:,} bytes (ctxfit proxy --max-body-mb)"
            )
            self._log(request, time.perf_counter(), 413, message)
            return web.Response(status=413, body=provider_error(dialect, 413, message), content_type="application/json")

    async def _fit(self, request: web.Request, body: bytes, dialect: Dialect) -> tuple[Fitted, Stats | None]:
        """The body fitted, or the agent's own bytes with the reason they were not (fail open);
        and the stats of its conversation (None when the body was not read that far). The
        worker is told the model the request's path names (Gemini's), how to read the body when
        not as `dialect`'s own API (`paths.HANDLED_AS`) and the window its headers opt into
        (`limits.asked_window`).

        The one place a request fails open: whatever reading, recognising or fitting the body
        raises in its worker (a body that is not JSON, a value the serializer refuses, nesting
        past the parser's recursion limit, a request whose history the provider holds, a bug),
        and a worker that ended before answering, send the body on as it came, with one log line.
        """
        encoding = request.headers.get("content-encoding", "identity")
        model, handling = request.match_info.get("model", ""), HANDLED_AS.get(request.path, dialect)
        window = asked_window(request.headers.get("anthropic-beta", ""))
        try:
            if encoding.lower() not in ("identity", ""):
                raise NotFitted(f"a compressed body (Content-Encoding: {encoding})", None)
            client = owner(request.headers, request.rel_url.query)  # a digest: the key stays here
            route = self.pool.route(handling, body, client)
            who = (client, request.path, window, handling)  # (no query: `?key=` is in `client`, digested)
            new = self.owners.saw(who)
            passage = self.bypass.judge(route, who, body)
            if passage is not None:
                return self._fast(request, passage, route, dialect)
            self.bypass.drop(route)  # (its worker sees this one: what it does next is its own to say)
            opening = self.owners.opening(handling, body, window) if new else None
            if opening is not None:
                fit = functools.partial(self.pool.fit, handling, body, model, window, client, route)
                return self._at_once(request, body, opening, fit, (route, who)), None
            outcome = await self.pool.fit(handling, body, model, window, client, route)
            self.totals.fitted_in_worker += 1
            if outcome.mark is not None and outcome.key is not None and outcome.limits is not None:
                opens = opened(outcome.mark, who, body, outcome.limits, outcome.key, outcome.worker, outcome.ticket)
                request[_PASSAGE] = (route, opens)
        except Exception as error:
            outcome = Fitted(body, getattr(error, "key", None), skipped=_reason(error))
        stats = self.ledger.get(outcome.key, dialect) if outcome.key is not None else None
        if stats is not None:
            stats.requests += 1
            if outcome.plan is not None and outcome.error is None:
                stats.record_plan(outcome.plan)
        return outcome, stats

    def _fast(self, request: web.Request, passage: Passage, route: int, dialect: Dialect) -> tuple[Fitted, Stats]:
        """A request that provably needs no fitting (`bypass.py`): the agent's own bytes go on,
        and the bound of its count is what the log and headers say of it."""
        request[_PASSAGE] = (route, passage)
        self.totals.fast_path += 1
        stats = self.ledger.get(passage.key, dialect)
        stats.requests += 1
        stats.fast_path += 1
        outcome = Fitted(passage.body, passage.key, limits=passage.limits, worker=passage.worker, ticket=passage.ticket)
        outcome.bound, outcome.least = passage.bound(), passage.least
        return outcome, stats

    def _at_once(
        self, request: web.Request, body: bytes, opening: Opening, fit: Callable[[], Awaitable[Fitted]], where: tuple
    ) -> Fitted:
        """A new conversation's first request that provably needs no fitting (`opening.py`): the
        agent's own bytes go on now, its bound is what the headers say of it, and its worker's
        `fit` starts as they go upstream (so that the walk does not compete with sending them:
        on 2 cores a first request waited ~2-3 ms more when both ran at once) and is settled before the
        agent has a byte of the reply (`_settle`): most often long done, as the provider took
        longer, so the conversation's next request finds its passage open."""
        route, who = where
        request[_AT_ONCE] = _AtOnce(fit, opening, route, who, body)
        self.totals.fast_path += 1
        outcome = Fitted(body, limits=opening.limits)
        outcome.bound = outcome.least = opening.bound
        return outcome

    async def _settle(self, request: web.Request) -> Fitted:
        """What the worker made of a request that went on at once, before the agent has a byte of
        its reply (the provider took longer, most often: it is long done): the conversation's
        stats, and the passage its next request takes, which the reply's count then anchors as
        a worker's fit's (`_relay`). Returns the worker's outcome."""
        at_once: _AtOnce = request[_AT_ONCE]
        body = at_once.body
        try:
            outcome = await at_once.start()  # (started by now, as its body went upstream)
        except Exception as error:
            outcome = Fitted(body, getattr(error, "key", None), skipped=_reason(error))
        at_once.outcome = outcome
        if outcome.key is not None:
            self._count_at_once(self.ledger.get(outcome.key, dialect_of(request.path)), outcome)
        passage = None
        if outcome.mark is not None and outcome.key is not None and outcome.limits is not None:
            mark, who, limits = outcome.mark, at_once.who, outcome.limits
            passage = opened(mark, who, body, limits, outcome.key, outcome.worker, outcome.ticket)
        request[_PASSAGE] = (at_once.route, passage)
        return outcome

    def _settled(self, request: web.Request, body: bytes, status: str) -> str:
        """The log line of a request that went on at once, the usage its reply reported, and a
        refusal's lesson; its status for the log."""
        at_once: _AtOnce = request[_AT_ONCE]
        outcome, opening = at_once.outcome, at_once.opening
        if outcome is None:  # (no reply came: its worker's read was not waited for)
            return status
        usage: ReplyUsage | None = request.get(_USAGE)
        reported = usage.reported() if usage is not None else None
        if reported is not None and outcome.key is not None:
            stats = self.ledger.get(outcome.key, dialect_of(request.path))
            stats.prompt_tokens += reported.prompt
            stats.cache_read_tokens += reported.cache_read
        what = describe(outcome)
        if outcome.body is not body or (outcome.plan is not None and outcome.plan.tokens_after > opening.bound):
            what += f"; its bound was {opening.bound:,} tokens, yet its worker would have changed it (please report)"
            self.errors.error("at once", f"ctxfit proxy: went on at once, yet its worker would fit it: {what}")
        how = f"fast path: a new conversation, ≤ {opening.bound:,} tokens by its bytes, sent on at once"
        request[_WHAT] = f"{what}; {how}"
        lesson = self._learn(outcome, request[_SAID], request.get(_REFUSAL, b"")) if _SAID in request else ""
        return f"{status} ({lesson})" if lesson else status

    @staticmethod
    def _count_at_once(stats: Stats, outcome: Fitted) -> None:
        stats.requests += 1
        stats.fast_path += 1
        if outcome.plan is not None and outcome.error is None:
            stats.record_plan(outcome.plan)

    def _anchor(self, fitted: Fitted, found: Reported, dialect: Dialect) -> str | None:
        """The reply's count anchors `fitted`'s conversation (`pool.anchor`); why not, once said."""
        refused = self.pool.anchor(fitted, found)
        if refused and self.ledger.get(fitted.key or "", dialect).refused(refused):
            self.settings.log(f"{conversation(fitted)}: {refused} (the estimate is the count)")
        return refused

    # --- forwarding ---------------------------------------------------------------------------

    async def forward(
        self, request: web.Request, body: bytes, stats: Stats | None, fitted: Fitted | None = None
    ) -> tuple[web.StreamResponse, str]:
        """Send the request upstream and stream the reply back as it arrives: (response, status
        for the log). The usage the reply reports anchors the `fitted` conversation."""
        headers = CIMultiDict((k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP)
        if self.upstream.authorization and "authorization" not in headers:
            headers["Authorization"] = self.upstream.authorization
        url = URL(self.upstream.joined(request.rel_url.raw_path_qs), encoded=True)
        assert self.client is not None  # (made on start-up, before any request)
        try:
            # Only the agent's headers: aiohttp would add its own Accept-Encoding (and then a
            # client that asked for none would get gzip back) and User-Agent.
            at_once = request.get(_AT_ONCE)
            upstream = await (self.client if at_once is None else self.at_once_client).request(
                request.method,
                url,
                headers=headers,
                data=body,
                allow_redirects=False,
                skip_auto_headers=AUTO_HEADERS,
                trace_request_ctx=at_once,
            )
        except (TimeoutError, aiohttp.ClientError) as error:
            why = why_unreachable(error, self.upstream.base)
            status = 504 if isinstance(error, TimeoutError) else 502
            return self._upstream_error(request, status, why), f"{status} (the provider could not be reached: {why})"
        async with upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in upstream.headers.items():
                if name.lower() not in HOP_BY_HOP or name.lower() == "content-length":
                    response.headers.add(name, value)
            if fitted is not None:
                response.headers.update(measured(fitted))
            self._replies[id(request)] = response
            usage = request[_USAGE] = ReplyUsage(
                upstream.headers.get("content-type", ""), upstream.headers.get("content-encoding", "")
            )
            try:
                broken = await self._relay(request, upstream, response, usage, fitted)
            except ConnectionResetError:  # the agent went away: the provider's reply is dropped
                self.totals.client_gone += 1
                return response, f"{upstream.status} (the client went away mid-reply)"
            if broken:
                return response, f"{upstream.status} (broken off by the provider mid-reply)"
            if fitted is not None and upstream.status >= 400:
                encoding = upstream.headers.get("content-encoding", "")
                said = request[_SAID] = message_of(request.get(_REFUSAL, b""), encoding)
                self.totals.tally(self.totals.refused, f"{upstream.status} {kind_of(said or upstream.reason or '')}")
                lesson = self._learn(fitted, said, request.get(_REFUSAL, b""))
                if lesson:
                    return response, f"{upstream.status} ({lesson})"
        reported = usage.reported()
        if reported is not None and stats is not None:
            stats.prompt_tokens += reported.prompt
            stats.cache_read_tokens += reported.cache_read
        return response, str(upstream.status)

    async def _relay(
        self,
        request: web.Request,
        upstream: aiohttp.ClientResponse,
        response: web.StreamResponse,
        usage: ReplyUsage,
        fitted: Fitted | None,
    ) -> bool:
        """Pass the provider's reply on as it arrives, reading its usage on the way; whether the
        provider broke it off (raises `ConnectionResetError` when the agent went away).

        A 200's passage (`bypass.py`) is passed before the agent has a byte of it: the
        conversation's next request can come as soon as the agent has the reply's last byte,
        which for a reply of known length is before the reply is over here."""
        if _AT_ONCE in request:  # (the worker's outcome is what the reply's count anchors)
            fitted = await self._settle(request)
        route, passage = request.get(_PASSAGE, (None, None))
        if passage is not None and upstream.status == 200:
            self.bypass.passed(route, passage)
        await response.prepare(request)
        chunks = upstream.content.iter_any()
        anchoring = fitted if upstream.status == 200 else None
        # A refusal's message is read for wrap's summary (what the provider refused, how often).
        keep = ERROR_BYTES if fitted is not None and upstream.status >= 400 else 0
        kept = bytearray()
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
                return True
            usage.feed(chunk)
            if len(kept) < keep:
                kept += chunk[: keep - len(kept)]
                request[_REFUSAL] = bytes(kept)
            if anchoring is not None and usage.found is not None:  # before the agent has it all
                refused = self._anchor(anchoring, usage.found, dialect_of(request.path))
                if passage is not None and not refused:  # (the worker counts what follows from it)
                    passage = self.bypass.anchored(passage, usage.found.prompt)
                    request[_PASSAGE] = (route, passage)
                    self.bypass.passed(route, passage, unless_replaced=True)
                anchoring = None
            await response.write(chunk)
        await response.write_eof()
        return False

    def _learn(self, fitted: Fitted, said: str, body: bytes) -> str:
        """A refusal of `fitted` as too long makes its conversation's next attempt tighter
        (`refusals.py`): what the log line says of it ("" for any other error)."""
        refusal = read_refusal(said, body)
        counted = fitted.plan.tokens_after if fitted.plan is not None else fitted.least
        if refusal is None or not counted or fitted.limits is None or fitted.key is None:
            return ""
        share = tighter(refusal, counted=counted, budget=fitted.limits.budget)
        if share is None:
            return "the reply's max_tokens refused, the prompt within the window by the provider's count: not tightened"
        self.pool.tighten(fitted, share)
        next_one = f"the conversation's next request is fitted to {share:.0%} of this one's budget"
        return f"too long by the provider's count: {next_one}"

    def _upstream_error(self, request: web.Request, status: int, why: str) -> web.Response:
        """The provider could not be reached: said at once, in the dialect's error shape, with
        the header that keeps the SDKs that read it from retrying for minutes (`errors.NO_RETRY`)."""
        self.totals.upstream_errors += 1
        self.totals.tally(self.totals.unreachable, why)
        dialect = dialect_of(request.path)
        message = (
            f"ctxfit proxy: the provider could not be reached: {why}; retrying will not help until the "
            f"network or the proxy's upstream ({self.upstream.shown}) is fixed (x-should-retry: false)"
        )
        return web.Response(
            status=status,
            body=provider_error(dialect, status, message),
            content_type="application/json",
            headers=NO_RETRY,
        )

    def _refuse_websocket(self, request: web.Request, started: float) -> web.Response:
        """426 Upgrade Required: the proxy does not relay WebSockets, and on this answer Codex
        (0.171) goes on over HTTPS at once, where its requests are fitted."""
        self.totals.websockets_refused += 1
        request[_WHAT] = "WebSocket refused: the agent goes on over HTTPS"
        self._log(request, started, 426, request[_WHAT])
        body = provider_error(dialect_of(request.path), 426, "ctxfit proxy: use HTTPS (no WebSocket through ctxfit)")
        return web.Response(status=426, body=body, content_type="application/json")

    def _log(self, request: web.Request, started: float, status: int | str, what: str) -> None:
        request[_LOGGED] = True
        elapsed = (time.perf_counter() - started) * 1000
        self.settings.log(f"{request.method} {request.path} {status} {elapsed:,.0f} ms  {what}".rstrip())


def measured(fitted: Fitted) -> dict[str, str]:
    """What the fitted request measures, for the agent (response headers): its tokens, and
    whether the provider's count of the request before it anchors the figure ('anchored', how
    many tokens of it the provider confirmed) or it is ctxfit's estimate alone ('estimated',
    what `ctxfit estimate` of the same body reads)."""
    plan = fitted.plan
    if fitted.bound:  # (the fast path: `bypass.py`)
        return {"ctxfit-tokens": str(fitted.bound), "ctxfit-counted": "bound"}
    if plan is None:
        return {"ctxfit-counted": "not-fitted"} if fitted.skipped else {}
    headers = {"ctxfit-tokens": str(plan.tokens_after), "ctxfit-counted": "anchored" if plan.confirmed else "estimated"}
    if plan.confirmed:
        headers["ctxfit-confirmed"] = str(plan.confirmed)
    return headers


def credential(request: web.Request) -> str:
    """A digest of the credential a request carries (never the credential), "" when none: what
    one key's share of the connections is counted by (`clients.ConnectionGuard`)."""
    given = {name: request.headers[name] for name in CREDENTIAL_HEADERS if name in request.headers}
    query = {name: request.rel_url.query[name] for name in CREDENTIAL_QUERY if name in request.rel_url.query}
    return owner(given, query) if given or query else ""


def _loopback(host: str) -> bool:
    """Whether a Host header names this machine's loopback (`localhost:8787`, `[::1]:8787`, …)."""
    try:
        name = URL.build(scheme="http", authority=host).host or ""
        return name in ("localhost", "localhost.") or ipaddress.ip_address(name).is_loopback
    except ValueError:  # not an address: a name, and not localhost
        return False


@dataclass
class _AtOnce:
    """A request that went on at once (`Proxy._at_once`): its worker's read, started by the
    first `start()` (its body's first chunk sent upstream, `_body_sent`, or its reply, whichever
    comes first), and that read's outcome once the reply waited for it (`Proxy._settle`)."""

    fit: Callable[[], Awaitable[Fitted]]
    opening: Opening
    route: int
    who: tuple
    body: bytes
    outcome: Fitted | None = None
    _future: asyncio.Future | None = None

    def start(self) -> asyncio.Future:
        if self._future is None:
            self._future = asyncio.ensure_future(self.fit())
            self._future.add_done_callback(_retrieved)  # (a reply the agent gave up on leaves it unawaited)
        return self._future


async def _body_sent(_session: aiohttp.ClientSession, context: Any, _sent: Any) -> None:
    """aiohttp's trace of a request body's chunk sent upstream: a request that went on at once
    starts its worker's read (`Proxy._at_once`)."""
    at_once = context.trace_request_ctx
    if isinstance(at_once, _AtOnce):
        at_once.start()


def _retrieved(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()  # (retrieved: no "exception was never retrieved" at exit)


def _reason(error: Exception) -> str:
    """Why a body was not fitted, on one short line (a worker's reason as it gave it)."""
    return str(error) if isinstance(error, (NotFitted, WorkerLost)) else reason(error)
