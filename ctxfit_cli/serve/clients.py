"""Keeping slow or too many clients from starving the rest, and a log that attacks cannot flood.

- Time: a connection gets `client_timeout` seconds to send a request's headers (aiohttp's
  keep-alive timer runs from the moment a connection opens and from the end of each reply, and
  closes a connection that has not sent a whole request head by then), then as long again for
  the body (`Proxy._body`).
- Count: at most `limit` connections. One more evicts the connection that has waited longest
  without a request under way (an idle keep-alive connection, or one still dribbling its
  headers); when every connection has a request under way, the new one is closed. The limit
  fits the descriptors the process may open (each connection may need one to the provider
  too), so `accept()` never runs out of them.
- Log: the errors of the HTTP stack (aiohttp's and asyncio's loggers) and the proxy's own
  per-client errors become one line each, without a traceback, and at most one line per kind
  of error per interval, saying how many more were left out.
"""

from __future__ import annotations

import logging
import re
import resource
import time
from collections.abc import Callable

from aiohttp import web

#: Descriptors kept for what is not a client connection: the listening socket, log, DNS, ...
RESERVED_FDS = 64
#: What may hold a credential in the bytes an HTTP error quotes (a malformed request line or
#: header): a URL's query (Gemini's `?key=`) and the value of a header that carries a key.
_SECRETS = re.compile(
    r"\?[^\s'\"]*|((?:proxy-)?authorization\s*:|x-goog-api-key\s*:|x-api-key\s*:|api-key\s*:)[^\r\n'\"]*", re.I
)


def connection_limit(wanted: int) -> tuple[int, str]:
    """The connection limit the process can hold (raising its soft descriptor limit toward the
    hard one first), and a warning when that is below `wanted` ("" if not)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = 2 * wanted + RESERVED_FDS
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return wanted, ""
    limit = max(1, (soft - RESERVED_FDS) // 2)
    return limit, (
        f"warning: {soft} file descriptors allowed (ulimit -n): at most {limit} connections instead of {wanted}"
    )


class ConnectionGuard:
    """Holds a server to `limit` connections, evicting the one idle longest (see above)."""

    def __init__(self, limit: int, log: RateLimitedLog) -> None:
        self.limit, self.log = limit, log
        #: Connections without a request under way, by when they became so.
        self._idle_since: dict[web.RequestHandler, float] = {}
        self._busy: set[web.RequestHandler] = set()

    def install(self, server: web.Server) -> None:
        """Hook the server's own connection bookkeeping (aiohttp calls it for every connection)."""
        made, lost = server.connection_made, server.connection_lost

        def connection_made(handler: web.RequestHandler, transport) -> None:
            made(handler, transport)
            self._idle_since[handler] = time.monotonic()
            if len(self._idle_since) + len(self._busy) > self.limit:
                self._make_room(handler)

        def connection_lost(handler: web.RequestHandler, exc: BaseException | None = None) -> None:
            self._idle_since.pop(handler, None)
            self._busy.discard(handler)
            lost(handler, exc)

        # (wrapping the server's own hooks is the point: aiohttp has no other place to watch them)
        server.connection_made, server.connection_lost = connection_made, connection_lost  # type: ignore[method-assign]

    def request_started(self, handler: web.RequestHandler | None) -> None:
        if handler is not None and self._idle_since.pop(handler, None) is not None:
            self._busy.add(handler)

    def request_finished(self, handler: web.RequestHandler | None) -> None:
        if handler in self._busy:
            self._busy.discard(handler)
            self._idle_since[handler] = time.monotonic()

    def _make_room(self, newcomer: web.RequestHandler) -> None:
        waiting = [h for h in self._idle_since if h is not newcomer]
        victim = min(waiting, key=self._idle_since.__getitem__) if waiting else newcomer
        self._idle_since.pop(victim, None)
        victim.force_close()
        what = (
            "closed the connection that waited longest without a request"
            if victim is not newcomer
            else "every connection has a request under way: refused a new one"
        )
        self.log.error("connection limit", f"{self.limit} connections (--max-connections): {what}")


class RateLimitedLog:
    """At most one line per kind of error per `interval` seconds; the next line of a kind says
    how many were left out."""

    def __init__(self, write: Callable[[str], None], interval: float = 60.0, kinds: int = 1000) -> None:
        self.write, self.interval, self.kinds = write, interval, kinds
        self._last: dict[str, tuple[float, int]] = {}  # kind -> (when last written, left out since)

    def error(self, kind: str, line: str) -> None:
        now = time.monotonic()
        last, left_out = self._last.get(kind, (None, 0))
        if last is not None and now - last < self.interval:
            self._last[kind] = (last, left_out + 1)
            return
        if kind not in self._last and len(self._last) >= self.kinds:
            self._last.clear()  # a flood of distinct kinds: forget them rather than grow
        self._last[kind] = (now, 0)
        more = f" ({left_out:,} more like it in the last {self.interval:g} s)" if left_out else ""
        self.write(line + more)


class OneLineHandler(logging.Handler):
    """A logging handler for the HTTP stack's loggers: each record one rate-limited line."""

    def __init__(self, log: RateLimitedLog) -> None:
        super().__init__(logging.WARNING)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = str(record.getMessage()).strip().splitlines()
            line = text[0] if text else record.name
            error = record.exc_info[1] if record.exc_info else None
            kind = f"{record.name}:{str(record.msg)[:80]}:{type(error).__name__}"
            if error is not None:
                line += f": {type(error).__name__}: {' '.join(str(error).split())[:200]}"
            self.log.error(kind, f"{record.name}: {redacted(line)}")
        except Exception:  # a log line must never raise
            pass


def redacted(text: str) -> str:
    """`text` without what may be a credential: queries and key-carrying headers' values.

    >>> redacted("Bad status line: b'POST /v1beta/models/m:generateContent?key=AIza123 HTTX/1.1'")
    "Bad status line: b'POST /v1beta/models/m:generateContent?(not shown) HTTX/1.1'"
    >>> redacted("Invalid header value char: b'x-goog-api-key: AIza123\\x01'")
    "Invalid header value char: b'x-goog-api-key:(not shown)'"
    """
    return _SECRETS.sub(lambda found: (found.group(1) or "?") + "(not shown)", text)


def quiet_http_stack(log: RateLimitedLog) -> None:
    """Send aiohttp's and asyncio's errors through `log`, one line each, never a traceback."""
    for name in ("aiohttp", "asyncio"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [OneLineHandler(log)]
        logger.propagate = False
