"""A fake model provider on loopback: Anthropic Messages, OpenAI Chat Completions and Responses, Gemini, for tests.

    python tests/fake_provider.py [--port 0] [--steps 30] [--record FILE] [--gzip] [--usage bytes|exact|hidden]

Prints `http://127.0.0.1:PORT` on its first line of stdout once it listens. It plays an agent
that reads files: for `--steps` calls it answers with a `read_file` tool call (the paths are the
repository's own Python files, so the examples' tool can read them), then with a final text.
The step is read from the id of the last tool result in the request (`toolu_0007` -> step 8),
so it works whatever the client trimmed from the history. A Responses reply is a `reasoning`
item (with `encrypted_content`) and a `function_call`, as a reasoning model's is. Gemini's
`/v1beta/models/{model}:generateContent` (and `/v1/...`) answers a model content with a text part
and a `functionCall` part (with an `id` and a `thoughtSignature`, as Gemini 2.5 and 3 send);
`:streamGenerateContent?alt=sse` sends it in two SSE chunks, the last one carrying
`usageMetadata` (without `alt=sse`, as a JSON array).

Every request is appended to `--record` as one JSON line: path, the headers that carry keys or
choose the encoding, the body (and the SHA-256 of its exact bytes), and the exact bytes of the
reply it sent. `stream: true` is answered with the provider's SSE events. The model name
chooses a misbehaviour, for the proxy's tests: `fake-error-429`, `fake-error-500` (an error as
the provider sends it), `fake-slow` (answers after 3 s), `fake-hang` (never answers),
`fake-disconnect` (closes the connection in the middle of the reply). With `--gzip` a reply is gzipped when the request accepts it, as providers do.

`--usage` says what each reply reports as the prompt's size: `bytes` (default) a quarter of the
body's bytes; `exact` the request's true size, counted as a provider counts it with a real
tokenizer (`true_size`: o200k for OpenAI, cl100k plus a framing cost per message and block for
Anthropic, o200k plus a framing cost per content and part for Gemini — whose own tokenizer no
package here ships); `hidden` no prompt size at all (as a stream the client asked no usage for), the true
size still recorded. With `exact` and `hidden` each recorded line has the request's `true_tokens`,
and an OpenAI stream carries its usage chunk only when `stream_options.include_usage` asks.

`--window N` refuses a request past a context window of N tokens as each provider does (its
`true_size`, with the reply's room where the provider counts it): Anthropic a 400
`invalid_request_error` "prompt is too long: S tokens > N maximum", or, when the prompt fits but
not with `max_tokens`, "input length and `max_tokens` exceed context limit: S + M > N, decrease
input length or `max_tokens` and try again" (what Claude Code lowers `max_tokens` on); OpenAI Chat
Completions a 400 `context_length_exceeded` "This model's maximum context length is N tokens. ...";
the Responses API `context_length_exceeded` "Your input exceeds the context window of this model.
Please adjust your input and try again." (a stream: `response.failed`, as Codex reads it; else a
400); Gemini a 400 `INVALID_ARGUMENT` "The input token count (S) exceeds the maximum number of
tokens allowed (N)." (the input alone: Gemini holds the reply apart). Every refusal is recorded
with its `true_tokens`; `count_tokens` then answers the true size too.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import functools
import gc
import gzip
import hashlib
import re
import sys
from pathlib import Path

import orjson
from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "ctxfit_cli").rglob("*.py") if p.stat().st_size > 3_000)
#: Recorded: the headers that carry keys, and the one that chooses the reply's encoding.
RECORDED_HEADERS = ("x-api-key", "authorization", "x-goog-api-key", "anthropic-version", "accept-encoding")


#: What the fake provider's `exact` count adds per message, per content block, per tool
#: definition and per request (Anthropic; OpenAI's chat framing is 3 per message and 3 per reply).
FRAMING = {"anthropic": {"message": 5, "block": 3, "request": 4}, "openai": {"message": 3, "block": 0, "request": 3},
           "gemini": {"message": 4, "block": 2, "request": 3}}


def true_size(value: dict, dialect: str) -> int:
    """The request's size as the provider counts it: every string of it through a real tokenizer
    (o200k for OpenAI, cl100k for Anthropic), plus the framing of its messages and blocks."""
    encoding = "cl100k" if dialect == "anthropic" else "o200k"
    count = lambda text: _tokens(text, encoding) if text else 0  # noqa: E731
    if dialect == "responses":
        return _responses_size(value, count)
    frame = FRAMING[dialect]
    if dialect == "gemini":
        return _gemini_size(value, frame, count)
    total = frame["request"] + count(orjson.dumps(value.get("tools")).decode() if value.get("tools") else "")
    system = value.get("system")
    total += count(system) if isinstance(system, str) else sum(count(b.get("text", "")) for b in system or [])
    for message in value["messages"]:
        total += frame["message"] + count(message.get("role", ""))
        content = message.get("content")
        blocks = [{"text": content}] if isinstance(content, str) else content or []
        for call in message.get("tool_calls") or []:
            blocks.append({"text": call["function"]["name"] + call["function"]["arguments"]})
        for block in blocks:
            total += frame["block"] + sum(count(block.get(key) if isinstance(block.get(key), str) else "")
                                          for key in ("text", "thinking", "name", "id", "tool_use_id"))
            if isinstance(block.get("input"), dict):
                total += count(orjson.dumps(block["input"]).decode())
            inner = block.get("content")
            total += count(inner) if isinstance(inner, str) else sum(count(b.get("text", "")) for b in inner or [])
    return total


def _gemini_size(value: dict, frame: dict, count) -> int:
    """A generateContent body's size: every text through the tokenizer, a call's name and
    arguments, a response's name and JSON, the tools' JSON, plus the framing of contents and parts
    (a thought signature is not counted, as the API does not count it)."""
    def part_size(part: dict) -> int:
        size = frame["block"] + count(part.get("text") if isinstance(part.get("text"), str) else "")
        for key in ("functionCall", "function_call", "functionResponse", "function_response"):
            if isinstance(part.get(key), dict):
                inner = part[key]
                size += count(inner.get("name", "")) + count(orjson.dumps(inner.get("args", inner.get("response")))
                                                              .decode())
        return size
    tools = value.get("tools")
    total = frame["request"] + count(orjson.dumps(tools).decode() if tools else "")
    system = value.get("systemInstruction") or value.get("system_instruction") or {}
    total += sum(part_size(p) for p in system.get("parts") or [])
    for content in value["contents"]:
        total += frame["message"] + count(content.get("role", "user"))
        total += sum(part_size(p) for p in content.get("parts") or [])
    return total


#: Keys of a Responses item that carry no text the model reads (ids, states, opaque blobs).
_RESPONSES_SKIPPED = frozenset({"id", "type", "status", "call_id", "encrypted_content", "role"})


def _responses_size(value: dict, count) -> int:
    """A Responses body's size: every string the model reads in `instructions`, `tools` and each
    `input` item (reasoning's encrypted content aside), plus 4 per item and 3 per request."""
    def strings(node) -> int:
        if isinstance(node, str):
            return count(node)
        if isinstance(node, list):
            return sum(strings(n) for n in node)
        if isinstance(node, dict):
            return sum(strings(v) for k, v in node.items() if k not in _RESPONSES_SKIPPED)
        return 0
    items = value.get("input")
    items = [{"content": items}] if isinstance(items, str) else items or []
    total = 3 + count(value.get("instructions") or "") + (count(orjson.dumps(value["tools"]).decode())
                                                          if value.get("tools") else 0)
    return total + sum(4 + strings(item) for item in items)


@functools.lru_cache(maxsize=4096)
def _tokens(text: str, encoding: str) -> int:
    """A text's tokens (remembered: a loop sends the same system prompt and messages again)."""
    from ctxfit_cli.counters.tokenizers import get_tokenizer
    tokenizer = get_tokenizer(encoding)
    return tokenizer.tokens(tokenizer.measure(text))


class Provider:
    def __init__(self, steps: int, record: Path | None, gzip: bool = False, usage: str = "bytes",
                 window: int | None = None) -> None:
        self.steps, self.record, self.gzip, self.usage, self.window = steps, record, gzip, usage, window
        self.served = 0
        #: id(body) -> (body, its true size) while it is answered: the body is held, so no other
        #: request's body can be given its id (ids are reused once an object is freed).
        self.true_tokens: dict[int, tuple[bytes, int]] = {}

    def prompt_usage(self, body: bytes, value: dict, dialect: str) -> dict:
        """The usage fields about the prompt, as `--usage` says (`{}`: none)."""
        if self.usage == "bytes":
            if dialect == "gemini":
                return {"promptTokenCount": len(body) // 4, "cachedContentTokenCount": len(body) // 8}
            if dialect == "anthropic":
                return {"input_tokens": len(body) // 4, "cache_read_input_tokens": len(body) // 8,
                        "cache_creation_input_tokens": 0}
            return {"prompt_tokens": len(body) // 4, "prompt_tokens_details": {"cached_tokens": len(body) // 8}}
        size = true_size(value, dialect)
        self.true_tokens[id(body)] = (body, size)
        if self.usage == "hidden":
            return {}
        if dialect == "gemini":
            return {"promptTokenCount": size, "cachedContentTokenCount": size * 3 // 4}
        if dialect == "anthropic":  # most of it read from the cache, as an agent's prompt is
            return {"input_tokens": size - size * 3 // 4, "cache_read_input_tokens": size * 3 // 4,
                    "cache_creation_input_tokens": 0}
        return {"prompt_tokens": size, "prompt_tokens_details": {"cached_tokens": size * 3 // 4}}

    def log(self, request: web.Request, body: bytes, reply: bytes) -> None:
        self.served += 1
        if self.record is None:
            return
        line = {"path": request.path, "query": request.query_string, "method": request.method,
                "headers": {h: request.headers[h] for h in RECORDED_HEADERS if h in request.headers},
                "body": None, "sha256": hashlib.sha256(body).hexdigest(), "reply": base64.b64encode(reply).decode()}
        held = self.true_tokens.pop(id(body), None)
        if held is not None and held[0] is body:
            line["true_tokens"] = held[1]
        try:
            line["body"] = orjson.loads(body) if body else None
            recorded = orjson.dumps(line)
        except (orjson.JSONDecodeError, TypeError):  # not JSON, or JSON orjson cannot write back
            line["body"] = {"raw": base64.b64encode(body).decode()}
            recorded = orjson.dumps(line)
        with self.record.open("ab") as f:
            f.write(recorded + b"\n")

    # --- past the window: refused as each provider refuses -----------------------------------

    async def refusal(self, request: web.Request, body: bytes, value: dict, dialect: str):
        """The provider's own refusal of a request past `--window` (None: within it)."""
        if self.window is None:
            return None
        window, size = self.window, true_size(value, dialect)
        room = _reply_room(value, dialect)
        if dialect == "gemini":
            if size <= window:
                return None
            message = f"The input token count ({size}) exceeds the maximum number of tokens allowed ({window})."
            return self.refuse(request, body, size, {"error": {"code": 400, "message": message,
                                                               "status": "INVALID_ARGUMENT"}})
        if size + room <= window:
            return None
        if dialect == "anthropic":
            message = (f"prompt is too long: {size} tokens > {window} maximum" if size > window else
                       f"input length and `max_tokens` exceed context limit: {size} + {room} > {window}, "
                       "decrease input length or `max_tokens` and try again")
            return self.refuse(request, body, size, {"type": "error", "error": {
                "type": "invalid_request_error", "message": message}, "request_id": f"req_fake{self.served:04d}"})
        if dialect == "responses":
            error = {"code": "context_length_exceeded", "message": "Your input exceeds the context window of this "
                     "model. Please adjust your input and try again."}
            if value.get("stream"):  # a stream is refused inside it, as Codex reads it (`response.failed`)
                response = {"id": f"resp_fake{self.served:04d}", "object": "response", "status": "failed",
                            "model": value.get("model", ""), "output": [], "error": error, "usage": None}
                events = [_sse("response.created", {"type": "response.created", "sequence_number": 0,
                                                    "response": {**response, "status": "in_progress", "error": None}}),
                          _sse("response.failed", {"type": "response.failed", "sequence_number": 1,
                                                   "response": response})]
                self.true_tokens[id(body)] = (body, size)
                return await self.stream(request, body, events)
            return self.refuse(request, body, size, {"error": {**error, "type": "invalid_request_error",
                                                               "param": "input"}})
        message = (f"This model's maximum context length is {window} tokens. However, you requested {size + room} "
                   f"tokens ({size} in the messages, {room} in the completion). Please reduce the length of the "
                   "messages or completion." if room else
                   f"This model's maximum context length is {window} tokens. However, your messages resulted in "
                   f"{size} tokens. Please reduce the length of the messages.")
        return self.refuse(request, body, size, {"error": {"message": message, "type": "invalid_request_error",
                                                           "param": "messages", "code": "context_length_exceeded"}})

    def refuse(self, request: web.Request, body: bytes, size: int, error: dict) -> web.Response:
        self.true_tokens[id(body)] = (body, size)
        return self.reply(request, body, orjson.dumps(error), status=400)

    # --- what the agent does next ------------------------------------------------------------

    def step(self, messages: list) -> int:
        """The next step: one past the newest tool result's call id."""
        for message in reversed(messages):
            content = message.get("content")
            ids = []
            if message.get("role") == "tool":
                ids = [message.get("tool_call_id", "")]
            elif isinstance(content, list):
                ids = [b.get("tool_use_id", "") for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if message.get("type", "").endswith("_call_output"):  # a Responses output item
                ids = [message.get("call_id", "")]
            for part in message.get("parts") or []:  # a Gemini content
                part = part if isinstance(part, dict) else {}
                answer = part.get("functionResponse") or part.get("function_response")
                if isinstance(answer, dict):
                    ids.append(answer.get("id", ""))
            for call_id in reversed(ids):
                found = re.search(r"(\d+)$", call_id or "")
                if found:
                    return int(found.group(1)) + 1
        return 0

    # --- handlers ---------------------------------------------------------------------------

    async def anthropic(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        value = self.parse(body)
        if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
            return self.invalid(request, body)
        if (refused := await self.refusal(request, body, value, "anthropic")) is not None:
            return refused
        step = self.step(value["messages"])
        if step < self.steps:
            content = [{"type": "text", "text": f"Reading {FILES[step % len(FILES)]}."},
                       {"type": "tool_use", "id": f"toolu_{step:04d}", "name": "read_file",
                        "input": {"path": FILES[step % len(FILES)]}}]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": f"Done: read {step} files."}], "end_turn"
        message = {"id": f"msg_{step:04d}", "type": "message", "role": "assistant", "model": value.get("model", ""),
                   "content": content, "stop_reason": stop, "stop_sequence": None,
                   "usage": {**self.prompt_usage(body, value, "anthropic"), "output_tokens": 20}}
        misbehaviour = await self.misbehave(request, body, value.get("model", ""), "anthropic")
        if misbehaviour is not None:
            return misbehaviour
        if value.get("stream"):
            return await self.stream(request, body, _anthropic_events(message))
        return self.reply(request, body, orjson.dumps(message))

    async def openai(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        value = self.parse(body)
        if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
            return self.invalid(request, body)
        if (refused := await self.refusal(request, body, value, "openai")) is not None:
            return refused
        step = self.step(value["messages"])
        if step < self.steps:
            path = FILES[step % len(FILES)]
            message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [
                {"id": f"call_{step:04d}", "type": "function",
                 "function": {"name": "read_file", "arguments": orjson.dumps({"path": path}).decode()}}]}
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": f"Done: read {step} files.", "refusal": None}, "stop"
        completion = {"id": f"chatcmpl-{step:04d}", "object": "chat.completion", "created": 1_700_000_000,
                      "model": value.get("model", ""),
                      "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                      "usage": {**self.prompt_usage(body, value, "openai"), "completion_tokens": 20}}
        if "prompt_tokens" in completion["usage"]:
            completion["usage"]["total_tokens"] = completion["usage"]["prompt_tokens"] + 20
        misbehaviour = await self.misbehave(request, body, value.get("model", ""), "openai")
        if misbehaviour is not None:
            return misbehaviour
        if value.get("stream"):
            asked = self.usage == "bytes" or (value.get("stream_options") or {}).get("include_usage")
            return await self.stream(request, body, _openai_events(completion, usage=bool(asked)))
        return self.reply(request, body, orjson.dumps(completion))

    async def responses(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        value = self.parse(body)
        if not isinstance(value, dict) or not isinstance(value.get("input"), (list, str)):
            return self.invalid(request, body)
        if (refused := await self.refusal(request, body, value, "responses")) is not None:
            return refused
        step = self.step(value["input"] if isinstance(value["input"], list) else [])
        reasoning = {"id": f"rs_{step:04d}", "type": "reasoning", "summary": [],
                     "encrypted_content": f"gAAAAB{step:04d}" + "c2VjcmV0" * 24}
        if step < self.steps:
            path = FILES[step % len(FILES)]
            output = [reasoning, {"id": f"fc_{step:04d}", "type": "function_call", "status": "completed",
                                  "call_id": f"call_{step:04d}", "name": "read_file",
                                  "arguments": orjson.dumps({"path": path}).decode()}]
        else:
            output = [reasoning, {"id": f"msg_{step:04d}", "type": "message", "role": "assistant", "status": "completed",
                                  "content": [{"type": "output_text", "text": f"Done: read {step} files.",
                                               "annotations": []}]}]
        usage = {"input_tokens": len(body) // 4, "input_tokens_details": {"cached_tokens": len(body) // 8},
                 "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 12},
                 "total_tokens": len(body) // 4 + 20}
        response = {"id": f"resp_{step:04d}", "object": "response", "created_at": 1_700_000_000, "status": "completed",
                    "model": value.get("model", ""), "output": output, "parallel_tool_calls": True,
                    "tool_choice": "auto", "tools": [], "usage": usage}
        misbehaviour = await self.misbehave(request, body, value.get("model", ""), "openai")
        if misbehaviour is not None:
            return misbehaviour
        if value.get("stream"):
            return await self.stream(request, body, _responses_events(response))
        return self.reply(request, body, orjson.dumps(response))

    async def gemini(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        value = self.parse(body)
        model = request.match_info["model"]
        if not isinstance(value, dict) or not isinstance(value.get("contents"), list):
            return self.gemini_error(request, body)
        if (refused := await self.refusal(request, body, value, "gemini")) is not None:
            return refused
        reply, chunks = self.gemini_reply(body, value, model)
        misbehaviour = await self.misbehave(request, body, model, "gemini")
        if misbehaviour is not None:
            return misbehaviour
        if request.path.endswith(":streamGenerateContent"):
            if request.query.get("alt") == "sse":
                return await self.stream(request, body, [b"data: " + orjson.dumps(c) + b"\r\n\r\n" for c in chunks])
            return await self.stream(request, body, [b"[" + b",\r\n".join(orjson.dumps(c) for c in chunks) + b"]"],
                                     content_type="application/json")
        return self.reply(request, body, orjson.dumps(reply, option=orjson.OPT_INDENT_2))

    async def code_assist(self, request: web.Request) -> web.StreamResponse:
        """Google's Code Assist API (Gemini CLI signed in with Google): a generateContent request
        wrapped in `{"model", "project", "request"}`, each reply wrapped in `{"response"}`."""
        body = await request.read()
        outer = self.parse(body)
        value = outer.get("request") if isinstance(outer, dict) else None
        if not isinstance(value, dict) or not isinstance(value.get("contents"), list) or not outer.get("model"):
            return self.gemini_error(request, body)
        if (refused := await self.refusal(request, body, value, "gemini")) is not None:
            return refused
        reply, chunks = self.gemini_reply(body, value, outer["model"])
        trace = f"trace-{self.served:04d}"
        if request.path.endswith(":streamGenerateContent"):
            events = [b"data: " + orjson.dumps({"response": c, "traceId": trace}) + b"\r\n\r\n" for c in chunks]
            return await self.stream(request, body, events)
        return self.reply(request, body, orjson.dumps({"response": reply, "traceId": trace}))

    def gemini_reply(self, body: bytes, value: dict, model: str) -> tuple[dict, list[dict]]:
        """The reply to a generateContent request, whole and as a stream's chunks."""
        step = self.step(value["contents"])
        if step < self.steps:
            path = FILES[step % len(FILES)]
            parts = [{"text": f"Reading {path}."},
                     {"functionCall": {"id": f"call_{step:04d}", "name": "read_file", "args": {"path": path}},
                      "thoughtSignature": base64.b64encode(f"signature {step:04d} ".encode() * 6).decode()}]
        else:
            parts = [{"text": f"Done: read {step} files."}]
        usage = {**self.prompt_usage(body, value, "gemini"), "candidatesTokenCount": 20}
        if "promptTokenCount" in usage:
            usage["totalTokenCount"] = usage["promptTokenCount"] + 20
        reply = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                 "usageMetadata": usage, "modelVersion": model, "responseId": f"resp-{step:04d}"}
        chunks = [{"candidates": [{"content": {"role": "model", "parts": parts[:1]}, "index": 0}],
                   "modelVersion": model, "responseId": reply["responseId"]},
                  {**reply, "candidates": [{**reply["candidates"][0], "content": {"role": "model", "parts": parts[1:]}}]}]
        return reply, chunks if parts[1:] else [reply]

    def gemini_error(self, request: web.Request, body: bytes) -> web.Response:
        error = {"error": {"code": 400, "message": "invalid request body", "status": "INVALID_ARGUMENT"}}
        return self.reply(request, body, orjson.dumps(error), status=400)

    @staticmethod
    def parse(body: bytes):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            return None

    def invalid(self, request: web.Request, body: bytes) -> web.Response:
        error = {"type": "error", "error": {"type": "invalid_request_error", "message": "invalid request body"}}
        return self.reply(request, body, orjson.dumps(error), status=400)

    async def other(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if request.path.endswith("/count_tokens"):
            value = self.parse(body)
            counted = (true_size(value, "anthropic") if self.window is not None and isinstance(value, dict)
                       and isinstance(value.get("messages"), list) else len(body) // 4)
            return self.reply(request, body, orjson.dumps({"input_tokens": counted}))
        if request.path == "/v1/models":
            return self.reply(request, body, orjson.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}))
        return self.reply(request, body, orjson.dumps({"error": {"type": "not_found_error", "message": request.path}}),
                          status=404)

    def reply(self, request: web.Request, body: bytes, reply: bytes, status: int = 200, headers=None) -> web.Response:
        headers = {**(headers or {})}
        if self.gzip and "gzip" in request.headers.get("accept-encoding", ""):
            reply = gzip.compress(reply, mtime=0)
            headers["content-encoding"] = "gzip"
        self.log(request, body, reply)
        return web.Response(body=reply, status=status, content_type="application/json",
                            headers={"x-fake-request": str(self.served), **headers})

    async def stream(self, request: web.Request, body: bytes, events: list[bytes],
                     content_type: str = "text/event-stream") -> web.StreamResponse:
        self.log(request, body, b"".join(events))
        response = web.StreamResponse(headers={"content-type": content_type, "cache-control": "no-cache",
                                               "x-fake-request": str(self.served)})
        await response.prepare(request)
        for event in events:
            await response.write(event)
            await asyncio.sleep(0.005)  # events arrive apart, as a model's do
        await response.write_eof()
        return response

    async def misbehave(self, request: web.Request, body: bytes, model: str, dialect: str):
        if model.startswith("fake-error-"):
            status = int(model.rsplit("-", 1)[1])
            kind = {429: "rate_limit_error", 500: "api_error"}.get(status, "invalid_request_error")
            error = ({"type": "error", "error": {"type": kind, "message": f"fake {status}"}} if dialect == "anthropic"
                     else {"error": {"message": f"fake {status}", "type": kind, "code": None, "param": None}})
            if dialect == "gemini":
                name = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL"}.get(status, "INVALID_ARGUMENT")
                error = {"error": {"code": status, "message": f"fake {status}", "status": name}}
            return self.reply(request, body, orjson.dumps(error), status=status, headers={"retry-after": "0"})
        if model == "fake-slow":
            await asyncio.sleep(3)
            return None
        if model == "fake-hang":
            self.log(request, body, b"")
            await asyncio.Event().wait()
        if model == "fake-disconnect":
            self.log(request, body, b"")
            response = web.StreamResponse(headers={"content-type": "text/event-stream"})
            await response.prepare(request)
            await response.write(b"event: message_start\ndata: {\"type\":\"message_start\"")
            request.transport.close()  # mid-reply, as a dropped connection does
            return response
        return None


def _reply_room(value: dict, dialect: str) -> int:
    """The room the request asks for its reply, as its provider reads it."""
    if dialect == "gemini":
        config = value.get("generationConfig") or value.get("generation_config") or {}
        fields = [config.get("maxOutputTokens"), config.get("max_output_tokens")]
    else:
        fields = [value.get(k) for k in ("max_output_tokens", "max_completion_tokens", "max_tokens")]
    return next((f for f in fields if isinstance(f, int) and not isinstance(f, bool) and f > 0), 0)


def _sse(event: str | None, data: dict | str) -> bytes:
    payload = data if isinstance(data, str) else orjson.dumps(data).decode()
    return (f"event: {event}\n" if event else "").encode() + f"data: {payload}\n\n".encode()


def _anthropic_events(message: dict) -> list[bytes]:
    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
    events = [_sse("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {"type": "text", "text": ""}}))
            events.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                       "delta": {"type": "text_delta", "text": block["text"]}}))
        else:
            events.append(_sse("content_block_start", {"type": "content_block_start", "index": i, "content_block":
                                                       {"type": "tool_use", "id": block["id"], "name": block["name"],
                                                        "input": {}}}))
            events.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": orjson.dumps(block["input"]).decode()}}))
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(_sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"],
                                                                            "stop_sequence": None},
                                         "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


def _openai_events(completion: dict, usage: bool = True) -> list[bytes]:
    base = {"id": completion["id"], "object": "chat.completion.chunk", "created": completion["created"],
            "model": completion["model"]}
    message = completion["choices"][0]["message"]
    chunk = lambda delta, finish=None: _sse(None, {**base, "choices": [
        {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]})
    events = [chunk({"role": "assistant", "content": ""})]
    if message.get("content"):
        events.append(chunk({"content": message["content"]}))
    for i, call in enumerate(message.get("tool_calls") or []):
        events.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                             "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]}))
    events.append(chunk({}, completion["choices"][0]["finish_reason"]))
    if usage:
        events.append(_sse(None, {**base, "choices": [], "usage": completion["usage"]}))
    events.append(_sse(None, "[DONE]"))
    return events


def _responses_events(response: dict) -> list[bytes]:
    numbers = iter(range(1_000))
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    events = [_sse("response.created", {"type": "response.created", "sequence_number": next(numbers),
                                        "response": started})]
    for index, item in enumerate(response["output"]):
        events.append(_sse("response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                                          "sequence_number": next(numbers), "item": item}))
        events.append(_sse("response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                                         "sequence_number": next(numbers), "item": item}))
    events.append(_sse("response.completed", {"type": "response.completed", "sequence_number": next(numbers),
                                              "response": response}))
    return events


def make_app(steps: int = 30, record: Path | None = None, gzip: bool = False,
             usage: str = "bytes", window: int | None = None) -> web.Application:
    provider = Provider(steps, record, gzip, usage, window)
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/messages", provider.anthropic)
    app.router.add_post("/v1/chat/completions", provider.openai)
    app.router.add_post("/v1/responses", provider.responses)
    app.router.add_post("/backend-api/codex/responses", provider.responses)  # (Codex signed in with ChatGPT)
    for method in ("generateContent", "streamGenerateContent"):  # (Gemini CLI signed in with Google)
        app.router.add_post(f"/v1internal:{method}", provider.code_assist)
    for method in ("generateContent", "streamGenerateContent"):
        app.router.add_post(f"/{{version:v1|v1beta|v1alpha}}/models/{{model}}:{method}", provider.gemini)
    app.router.add_route("*", "/{tail:.*}", provider.other)
    return app


async def serve(port: int, steps: int, record: Path | None, gzip: bool, usage: str = "bytes",
                backlog: int = 128, window: int | None = None) -> None:
    runner = web.AppRunner(make_app(steps, record, gzip, usage, window), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=backlog)
    await site.start()
    # What it loaded stays: a full collection then walks only what a request made. (Unfrozen,
    # one every ~8 requests of a 1.8 MB body took the provider 20-30 ms, which a benchmark of
    # the proxy counted as latency added or saved, whichever request it fell on.)
    gc.freeze()
    bound = site._server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{bound}", flush=True)
    await asyncio.Event().wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--record", type=Path)
    ap.add_argument("--gzip", action="store_true", help="gzip replies to requests that accept it")
    ap.add_argument("--usage", choices=("bytes", "exact", "hidden"), default="bytes")
    ap.add_argument("--backlog", type=int, default=128, help="listen queue (a team's worth of clients: deeper)")
    ap.add_argument("--window", type=int, help="refuse a request past this many tokens, as each provider does")
    args = ap.parse_args()
    try:
        asyncio.run(serve(args.port, args.steps, args.record, args.gzip, args.usage, args.backlog, args.window))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
