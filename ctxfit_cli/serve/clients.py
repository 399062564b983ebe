"""Keeping slow or too many clients from starving the rest, and a log that attacks cannot flood.

- Time: a connection gets `client_timeout` seconds to send a request's headers (aiohttp's
  keep-alive timer runs from the moment a connection opens and from the end of each reply, and
  closes a connection that has not sent a whole request head by then), then as long again for
  the body (`Proxy._body`).
- Count: at most `limit` connections, and at most `per_client` (half of them) from one client
  address, or with requests under way under one credential (a digest of it, `owner.py`): one
  slow or greedy client never holds them all (DESIGN §15). One more evicts the connection that
  has waited longest without a request under way (an idle keep-alive connection, or one still
  dribbling its headers), else the oldest upload still arriving (a request whose body has not
  come: a slow upload holds a connection as long as the body timeout allows, and reconnects);
  only when every connection has a request whose body has come is the new one closed. Past an
  address's share, its own connections are the ones closed. The limit fits the descriptors the
  process may open (each connection may need one to the provider too), so `accept()` never runs
  out of them.
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
    """Holds a server to `limit` connections, `per_client` of them from one address, and
    `per_client` requests under way with one credential (see above)."""

    def __init__(self, limit: int, log: RateLimitedLog, per_client: int | None = None) -> None:
        self.limit, self.log = limit, log
        self.per_client = per_client if per_client is not None else max(limit // 2, 1)
        #: Connections without a request under way, by when they became so (oldest first).
        self._idle_since: dict[web.RequestHandler, float] = {}
        #: Connections whose request is still arriving (its body not read yet), oldest first.
        self._uploading: dict[web.RequestHandler, float] = {}
        self._busy: set[web.RequestHandler] = set()
        #: Each connection's client address, and how many connections each address holds.
        self._address: dict[web.RequestHandler, str] = {}
        self._per_address: dict[str, int] = {}
        #: The credential digest of each request under way (`owner.py`), and how many each holds.
        self._key: dict[web.RequestHandler, str] = {}
        self._per_key: dict[str, int] = {}
        #: Connections closed to make room, and why: their request's log line says so (`closed`).
        self._evicted: dict[web.RequestHandler, str] = {}

    def install(self, server: web.Server) -> None:
        """Hook the server's own connection bookkeeping (aiohttp calls it for every connection)."""
        made, lost = server.connection_made, server.connection_lost

        def connection_made(handler: web.RequestHandler, transport) -> None:
            made(handler, transport)
            self._idle_since[handler] = time.monotonic()
            peer = transport.get_extra_info("peername") if transport is not None else None
            address = str(peer[0]) if isinstance(peer, tuple) and peer else ""
            self._address[handler] = address
            self._per_address[address] = self._per_address.get(address, 0) + 1
            if self._per_address[address] > self.per_client:
                self._make_room(handler, lambda h: self._address.get(h) == address, "from one address")
            if handler in self._address and len(self._address) > self.limit:
                self._make_room(handler, lambda _h: True, "")

        def connection_lost(handler: web.RequestHandler, exc: BaseException | None = None) -> None:
            self._forget(handler)
            lost(handler, exc)

        # (wrapping the server's own hooks is the point: aiohttp has no other place to watch them)
        server.connection_made, server.connection_lost = connection_made, connection_lost  # type: ignore[method-assign]

    def request_started(self, handler: web.RequestHandler | None, key: str = "") -> None:
        """A request's head arrived on `handler`; `key`: a digest of its credential ("" none)."""
        if handler is None or self._idle_since.pop(handler, None) is None:
            return
        self._uploading[handler] = time.monotonic()
        if key:
            self._key[handler] = key
            self._per_key[key] = self._per_key.get(key, 0) + 1
            if self._per_key[key] > self.per_client:
                self._make_room(handler, lambda h: self._key.get(h) == key, "with one key", idle=False)

    def body_read(self, handler: web.RequestHandler | None) -> None:
        """The request's body has arrived: it is under way, never evicted now."""
        if handler is not None and self._uploading.pop(handler, None) is not None:
            self._busy.add(handler)

    def request_finished(self, handler: web.RequestHandler | None) -> None:
        if handler is not None and (handler in self._busy or handler in self._uploading):
            self._busy.discard(handler)
            self._uploading.pop(handler, None)
            self._drop_key(handler)
            self._idle_since[handler] = time.monotonic()

    def _make_room(self, newcomer: web.RequestHandler, whose, which: str, idle: bool = True) -> None:
        """Close one connection `whose` says may go: the one idle longest, else the oldest
        slow upload, else (every one has a request under way) the newcomer itself."""
        found = [h for h in self._idle_since if h is not newcomer and whose(h)] if idle else []
        kind = "closed the connection that waited longest without a request"
        if not found:
            found = [h for h in self._uploading if h is not newcomer and whose(h)]
            kind = "closed the oldest slow upload"
        victim = found[0] if found else newcomer  # (the dicts keep their oldest first)
        if victim is newcomer:
            kind = "every connection has a request under way: refused a new one"
        limit = f"{self.per_client} {which} (half of --max-connections)"
        limit = limit if which else f"{self.limit} (--max-connections)"
        if len(self._evicted) >= 4 * self.limit:  # (those without a request to log: forgotten)
            self._evicted.pop(next(iter(self._evicted)))
        self._evicted[victim] = f"{kind}: {limit}"
        self._forget(victim)
        victim.force_close()
        self.log.error(f"connection limit {which}", f"{limit} connections: {kind}")

    def closed(self, handler: web.RequestHandler | None) -> str:
        """Why `handler`'s connection was closed to make room ("" if it was not)."""
        return self._evicted.pop(handler, "") if handler is not None else ""

    def _forget(self, handler: web.RequestHandler) -> None:
        self._idle_since.pop(handler, None)
        self._uploading.pop(handler, None)
        self._busy.discard(handler)
        self._drop_key(handler)
        address = self._address.pop(handler, None)
        if address is not None:
            self._per_address[address] -= 1
            if not self._per_address[address]:
                del self._per_address[address]

    def _drop_key(self, handler: web.RequestHandler) -> None:
        key = self._key.pop(handler, None)
        if key is not None:
            self._per_key[key] -= 1
            if not self._per_key[key]:
                del self._per_key[key]


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
