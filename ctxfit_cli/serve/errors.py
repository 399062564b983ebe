"""Error bodies the proxy answers with itself, shaped as the provider shapes its own, so the
agent's SDK raises the same exception class it would for the provider's (and retries what it
would retry).

Anthropic: `{"type": "error", "error": {"type": ..., "message": ...}}` with the type its error
docs give for the status (`api_error` for 500, `timeout_error` for 504, `request_too_large`
for 413, ...). OpenAI: `{"error": {"message", "type", "param", "code"}}`, `server_error` for 5xx.
Gemini (Google's API error model): `{"error": {"code", "message", "status"}}`, the status the
gRPC code's name (`INVALID_ARGUMENT`, `UNAVAILABLE`, `DEADLINE_EXCEEDED`, ...).

>>> provider_error("anthropic", 502, "cannot reach the provider")
b'{"type":"error","error":{"type":"api_error","message":"cannot reach the provider"}}'
>>> provider_error("openai", 504, "no answer in time")
b'{"error":{"message":"no answer in time","type":"server_error","param":null,"code":null}}'
>>> provider_error("gemini", 502, "cannot reach the provider")
b'{"error":{"code":502,"message":"cannot reach the provider","status":"UNAVAILABLE"}}'
"""

from __future__ import annotations

import zlib

import orjson

_ANTHROPIC = {
    400: "invalid_request_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}
#: Google's status names for the HTTP statuses the proxy answers with (google.rpc.Code).
_GOOGLE = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def provider_error(
    dialect: str, status: int, message: str, *, param: str | None = None, code: str | None = None
) -> bytes:
    """The body the provider of `dialect` sends with `status`, saying `message`."""
    if dialect == "anthropic":
        kind = _ANTHROPIC.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return orjson.dumps({"type": "error", "error": {"type": kind, "message": message}})
    if dialect == "gemini":
        status_name = _GOOGLE.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")
        return orjson.dumps({"error": {"code": status, "message": message, "status": status_name}})
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return orjson.dumps({"error": {"message": message, "type": kind, "param": param, "code": code}})


def message_of(body: bytes, encoding: str = "") -> str:
    """The message of an error body in any of the three shapes, gzip or deflate undone ("" when
    it has none, or it cannot be read).

    >>> message_of(b'{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}')
    'prompt is too long'
    """
    encoding = encoding.strip().lower()
    try:
        if encoding in ("gzip", "x-gzip", "deflate"):
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS if "gzip" in encoding else zlib.MAX_WBITS)
            body = inflate.decompress(body, 1 << 20)
        elif encoding not in ("", "identity"):
            return ""
        document = orjson.loads(body)
    except (orjson.JSONDecodeError, zlib.error):
        return ""
    error = document.get("error") if isinstance(document, dict) else None
    if isinstance(document, list) and document and isinstance(document[0], dict):  # Gemini's stream: [{"error"}]
        error = document[0].get("error")
    message = error.get("message") if isinstance(error, dict) else error
    return " ".join(message.split()) if isinstance(message, str) else ""


#: Sent with the errors the proxy answers itself for an unreachable provider: the Anthropic and
#: OpenAI SDKs (Python and TypeScript) and Claude Code (checked on 2.1.337) do not retry a reply
#: that says so, where they would retry a 502 for minutes. Codex CLI and Gemini CLI (0.171, 0.61)
#: do not read it and retry a 5xx a few times with backoff.
NO_RETRY = {"x-should-retry": "false"}
