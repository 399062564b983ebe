"""The provider's URL as given to `--upstream`: where requests go, and how it is shown.

Credentials in the URL (`http://user:pass@gateway`) are a secret like an API key: every place
that shows the URL (the start line, `/ctxfit/stats`) shows it without them, and they are sent as
the request's Basic authorization only when the agent sent no `Authorization` of its own.

>>> upstream = Upstream.parse("https://user:s3cret@gateway.example/api/")
>>> upstream.base, upstream.shown
('https://gateway.example/api', 'https://***@gateway.example/api')
>>> upstream.authorization
'Basic dXNlcjpzM2NyZXQ='
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit


@dataclass(frozen=True)
class Upstream:
    #: The URL requests are sent to, credentials left out, no trailing slash.
    base: str
    #: The URL as logs and stats show it.
    shown: str
    #: `Basic ...` from the URL's credentials, or None.
    authorization: str | None = None

    def joined(self, path_qs: str) -> str:
        """The URL a request's path (and query, as sent) goes to: under `base`'s own path,
        whatever dot segments it holds (`..`, `.`, `%2e%2e`: removed first, as RFC 3986 §5.2.4
        does, never climbing out of the path `--upstream` names).

        >>> Upstream.parse("http://gw/api").joined("/v1/../../admin/%2E%2e/x?a=../b")
        'http://gw/api/x?a=../b'
        """
        path, mark, query = path_qs.partition("?")
        return self.base + without_dot_segments(path) + mark + query

    @classmethod
    def parse(cls, url: str) -> Upstream:
        parts = urlsplit(url.rstrip("/"))
        if parts.username is None and parts.password is None:
            return cls(urlunsplit(parts), urlunsplit(parts))
        host = parts.netloc.rsplit("@", 1)[1]
        credentials = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()
        return cls(
            urlunsplit(parts._replace(netloc=host)),
            urlunsplit(parts._replace(netloc="***@" + host)),
            "Basic " + base64.b64encode(credentials).decode(),
        )


def without_dot_segments(path: str) -> str:
    """An absolute path with its `.` and `..` segments (percent-encoded too) resolved, never above
    its root; a trailing slash kept.

    >>> without_dot_segments("/a/./b/../../../c/"), without_dot_segments("/.."), without_dot_segments("")
    ('/c/', '/', '')
    """
    if not path:
        return path
    kept: list[str] = []
    segments = path.split("/")[1:] if path.startswith("/") else path.split("/")
    for number, segment in enumerate(segments):
        dots = segment.lower().replace("%2e", ".")
        last = number == len(segments) - 1
        if dots == "..":
            if kept:
                kept.pop()
        elif dots != ".":
            kept.append(segment)
            continue
        if last:
            kept.append("")  # (`/a/..` is `/`, `/a/.` is `/a/`: the path ends in a slash)
    return "/" + "/".join(kept)


def shown(url: str) -> str:
    """`url` as logs show it: without its credentials.

    >>> shown("http://user:pass@host:8080"), shown("https://api.anthropic.com")
    ('http://***@host:8080', 'https://api.anthropic.com')
    """
    return Upstream.parse(url).shown


def why_unreachable(error: BaseException, base: str) -> str:
    """What failed on the way to the provider at `base`, in words a user can act on:
    'DNS lookup of api.anthropic.com failed', 'connection to 127.0.0.1:9 refused', …

    >>> why_unreachable(TimeoutError(), "https://api.openai.com/v1")
    'no answer from api.openai.com in time'
    """
    import ssl

    import aiohttp

    parts = urlsplit(base)
    host = parts.hostname or base
    where = f"{host}:{parts.port}" if parts.port else host
    if isinstance(error, aiohttp.ClientConnectorDNSError):
        return f"DNS lookup of {host} failed (offline, or a wrong --upstream?)"
    if isinstance(error, (aiohttp.ClientConnectorCertificateError, aiohttp.ClientSSLError, ssl.SSLError)):
        return f"TLS with {where} failed ({_first_line(error)})"
    if isinstance(error, aiohttp.ClientConnectorError):
        cause = error.os_error
        if isinstance(cause, ConnectionRefusedError):
            return f"connection to {where} refused (nothing listens there)"
        return f"no connection to {where} ({_first_line(cause)})"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return f"{where} closed the connection without an answer"
    if isinstance(error, TimeoutError):
        return f"no answer from {host} in time"
    return f"{where}: {type(error).__name__} ({_first_line(error)})"


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return (text[0][:160] if text else "") or type(error).__name__
