"""The proxy's side of Gemini CLI signed in with Google: Google's Code Assist API
(`POST /v1internal:generateContent` and `:streamGenerateContent?alt=sse`, at
cloudcode-pa.googleapis.com unless Gemini CLI's `CODE_ASSIST_ENDPOINT` points elsewhere).

A Code Assist body wraps a generateContent request, the model named beside it:
`{"model", "project", "user_prompt_id", "request": {"contents", "systemInstruction", "tools",
"generationConfig", "session_id"}}`, `request` last (gemini-cli `code_assist/converter.ts`,
`toGenerateContentRequest`). The inner request is fitted as Gemini's is (`gemini.py`): read
incrementally as the bytes of the `request` value, its fitted contents written back in place,
every other byte of the body as the agent sent it. A body of another shape is forwarded as it
came (fail open), its log line saying why. Replies carry the usage as `response.usageMetadata`
(`core.reported`).

>>> request, layout = parse(Readers(key="contents"), b'{"model": "gemini-2.5-pro", "project": "p", "request": '
...                                                   b'{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}}')
>>> request["contents"][0]["parts"], request[MODEL]
([{'text': 'hi'}], 'gemini-2.5-pro')
>>> layout.write([{"role": "user", "parts": [{"text": "yo"}]}])
b'{"model": "gemini-2.5-pro", "project": "p", "request": {"contents": [{"role":"user","parts":[{"text":"yo"}]}]}}'
"""

from __future__ import annotations

import json

from ..core.model import Dialect
from . import gemini
from .body import BodyError, Layout, Readers
from .fitting import Limits
from .limits import LimitRule

#: Where the parsed request carries the model the outer body names.
MODEL = "ctxfit.model"
_KEY = "request"
#: The members before `request` are looked for in this many leading bytes.
HEAD_BYTES = 16_384
_DECODER = json.JSONDecoder()


def parse(readers: Readers, body: bytes) -> tuple[dict, Layout]:
    """The inner request (with the outer body's model under `MODEL`) and where its contents
    are in `body` (raises `BodyError` saying why it cannot be fitted)."""
    model, start, end = _request_span(body)
    request, inner = gemini.parse(readers, body[start:end])
    spans = [(a + start, b + start) for a, b in inner.spans]
    return {**request, MODEL: model}, Layout(body, inner.messages, spans, inner.open + start, inner.close + start)


def limits(rule: LimitRule, request: dict, _dialect: Dialect, _path_model: str) -> Limits:
    return gemini.limits_for(rule, request, request[MODEL])


def _request_span(body: bytes) -> tuple[str, int, int]:
    """The model the body names and the byte range of its `request` object, its last member.
    Only the members before it are read here (a few hundred bytes)."""
    end = len(body.rstrip())
    inner_end = len(body[: end - 1].rstrip())
    if not body.endswith(b"}", 0, end) or not body.endswith(b"}", 0, inner_end):
        raise BodyError(f'no "{_KEY}" object ending the body (not the Code Assist API\'s shape)')
    head = body[:HEAD_BYTES].decode("utf-8", "ignore")  # (a character cut at the end: not reached)
    model, at = "", _skip(head, 0)
    if not head.startswith("{", at):
        raise BodyError("not a JSON object")
    at = _skip(head, at + 1)
    try:
        while head.startswith('"', at):
            key, at = _DECODER.raw_decode(head, at)
            at = _skip(head, at)
            if not head.startswith(":", at):
                break
            at = _skip(head, at + 1)
            if key == _KEY:
                if not head.startswith("{", at):
                    break
                return model, len(head[:at].encode()), inner_end
            value, at = _DECODER.raw_decode(head, at)
            if key == "model" and isinstance(value, str):
                model = value
            at = _skip(head, at)
            at = _skip(head, at + 1) if head.startswith(",", at) else at
    except ValueError:
        pass
    raise BodyError(f'no "{_KEY}" object ending the body (not the Code Assist API\'s shape)')


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at
