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


def shown(url: str) -> str:
    """`url` as logs show it: without its credentials.

    >>> shown("http://user:pass@host:8080"), shown("https://api.anthropic.com")
    ('http://***@host:8080', 'https://api.anthropic.com')
    """
    return Upstream.parse(url).shown
