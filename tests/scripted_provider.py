"""A scripted model provider on loopback that plays the model for a real agent, in the three dialects.

    python tests/scripted_provider.py --files F1 F2 ... [--port 0] [--record FILE] [--bodies DIR]

Prints `http://127.0.0.1:PORT` on its first line of stdout once it listens. For the agent's main
conversation it answers, one step per request, with a call of a tool the agent itself advertised
that reads the next of `--files` (absolute paths), then with `FINAL_ANSWER` and the files' names:

- Claude Code (`POST /v1/messages`): a `tool_use` of `Read` (`file_path`); in the same dialect,
  OpenCode's `read` (`filePath`) and Copilot CLI's `view` (`path`, with `forceReadLargeFiles`:
  it reads no more than 20 KB otherwise).
- Codex CLI (`POST /v1/responses`): in code mode (an `exec` custom tool inside an `additional_tools`
  input item, as 0.171 advertises it) a `custom_tool_call` whose JavaScript runs
  `tools.exec_command({cmd: "cat …"})`; with a plain function tool, `exec_command` (`cmd`) or
  `shell` (`command` argv).
- Gemini CLI (`:streamGenerateContent?alt=sse`, `:generateContent`): a `functionCall` of
  `read_file` (with an `id` and a `thoughtSignature`, as Gemini 3 sends).
- OpenAI Chat Completions (`POST /v1/chat/completions`: Copilot CLI with its default provider
  type; Qwen Code; Cline CLI): a `tool_calls` entry of `view` (`path`, `forceReadLargeFiles`),
  `read_file` or `read_files` (`files: [{path}]`); a model it asks for (`GET /v1/models/{id}`) exists.

The step is read from the newest of its own call ids among the request's tool results, so it does
not matter what a proxy cleared from the history. A request is the main conversation's when it
advertises the reading tool (Claude Code `Read`, OpenCode `read`, Copilot CLI `view`, Codex `exec`/`exec_command`/`shell`, Gemini CLI
`read_file`); every other request is a side request (Claude Code's title and quota calls, Gemini
CLI's router and next-speaker checks) and gets a short text, or, when it asks for JSON by a schema
(Anthropic `output_config.format`, Gemini `responseJsonSchema`/`responseSchema`), a value built
from the schema. `count_tokens` is answered with the request's true size, `HEAD`/`GET /` with 200,
Codex's WebSocket attempt (`GET /v1/responses` with `Upgrade`) with 426 so it falls back to HTTPS.

Every reply reports the request's true size as its usage (`fake_provider.true_size`; a Responses
body is sized the same way, see `responses_size`), so a proxy in front anchors on it. Every request
is appended to `--record` as one JSON line: method, path, query, headers (values of the ones that
carry keys replaced by `<redacted>`), body, `main`, `dialect`, `step`, `true_tokens`, and when it
arrived (`at`, Unix seconds); with
`--bodies DIR`, each body's exact bytes are also kept in `DIR/NNNN.json` (NNNN: the line's `n`).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import re
import sys
import time
from pathlib import Path

import orjson
from aiohttp import web
from fake_provider import _anthropic_events, _openai_events, _responses_events, true_size

#: Headers whose values are keys: recorded as present, never their value.
SECRET_HEADERS = ("x-api-key", "authorization", "x-goog-api-key", "cookie", "chatgpt-account-id")
#: The final answer starts with this, so a test can find it in the agent's output.
FINAL_ANSWER = "SCRIPTED-FINAL-ANSWER"
#: The call ids the script gives: the step is the number after the prefix.
CALL_ID = re.compile(r"ctxfit_step_(\d+)")
#: The tools that read a file, per dialect, in the order they are preferred.
ANTHROPIC_READ = ("Read", "read", "view")
GEMINI_READ = "read_file"
CHAT_READ = ("view", "read_file", "read_files")
CODEX_TOOLS = ("exec", "exec_command", "shell")


class Script:
    """The files to read, one per step; what was asked, recorded."""

    def __init__(self, files: list[str], record: Path | None, bodies: Path | None = None) -> None:
        self.files, self.record, self.bodies = files, record, bodies
        self.served = 0

    def final_text(self) -> str:
        names = ", ".join(Path(f).name for f in self.files)
        return f"{FINAL_ANSWER}: read {len(self.files)} files ({names})."

    def step(self, result_ids: list[str]) -> int:
        """The next step: one past the newest of the script's own call ids among the results."""
        steps = [int(m.group(1)) for i in result_ids if (m := CALL_ID.search(i or ""))]
        return max(steps) + 1 if steps else 0

    def log(self, request: web.Request, body: bytes, **facts) -> None:
        self.served += 1
        if self.bodies is not None and body:
            (self.bodies / f"{self.served:04d}.json").write_bytes(body)
        if self.record is None:
            return
        headers = {k.lower(): ("<redacted>" if k.lower() in SECRET_HEADERS else v) for k, v in request.headers.items()}
        try:
            value = orjson.loads(body) if body else None
        except orjson.JSONDecodeError:
            value = {"raw": base64.b64encode(body).decode()}
        line = {"n": self.served, "at": round(time.time(), 3), "method": request.method, "path": request.path,
                "query": request.query_string, "headers": headers, "body": value, **facts}
        with self.record.open("ab") as f:
            f.write(orjson.dumps(line) + b"\n")

    # --- Anthropic Messages (Claude Code) -------------------------------------------------------

    async def anthropic(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        value = _json(body)
        if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
            self.log(request, body, dialect="anthropic", main=False)
            return _error(400, "invalid request body")
        size = true_size(value, "anthropic")
        tool = next(filter(None, (_named(value.get("tools") or [], name) for name in ANTHROPIC_READ)), None)
        step = self.step([b.get("tool_use_id", "") for m in value["messages"] for b in _blocks(m)
                          if b.get("type") == "tool_result"])
        self.log(request, body, dialect="anthropic", main=tool is not None, step=step, true_tokens=size)
        if tool is not None and step < len(self.files):
            arguments = _read_arguments(tool.get("input_schema") or {}, self.files[step])
            content = [{"type": "text", "text": f"Reading {Path(self.files[step]).name}."},
                       {"type": "tool_use", "id": f"toolu_ctxfit_step_{step:04d}", "name": tool["name"],
                        "input": arguments}]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": self.side_text(value, tool is not None)}], "end_turn"
        message = {"id": f"msg_{self.served:04d}", "type": "message", "role": "assistant",
                   "model": value.get("model", ""), "content": content, "stop_reason": stop, "stop_sequence": None,
                   "usage": {"input_tokens": size - size * 3 // 4, "cache_read_input_tokens": size * 3 // 4,
                             "cache_creation_input_tokens": 0, "output_tokens": 20}}
        if value.get("stream"):
            return await _stream(request, _anthropic_events(message))
        return web.json_response(message)

    def side_text(self, value: dict, main: bool) -> str:
        """The final answer of the main conversation; a side request's short text or schema's JSON."""
        if main:
            return self.final_text()
        schema = ((value.get("output_config") or {}).get("format") or value.get("output_format") or {}).get("schema")
        return orjson.dumps(sample(schema)).decode() if isinstance(schema, dict) else "Reading files"

    async def count_tokens(self, request: web.Request) -> web.Response:
        body = await request.read()
        value = _json(body)
        valid = isinstance(value, dict) and isinstance(value.get("messages"), list)
        size = true_size(value, "anthropic") if valid else 0
        self.log(request, body, dialect="anthropic", main=False, true_tokens=size)
        return web.json_response({"input_tokens": size})

    # --- OpenAI Responses (Codex CLI) -----------------------------------------------------------

    async def responses(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        value = _json(body)
        if not isinstance(value, dict) or not isinstance(value.get("input"), (list, str)):
            self.log(request, body, dialect="responses", main=False)
            return _error(400, "invalid request body")
        items = value["input"] if isinstance(value["input"], list) else []
        size = responses_size(value)
        tool = _codex_tool(value)
        step = self.step([i.get("call_id", "") for i in items if isinstance(i, dict)
                          and str(i.get("type", "")).endswith("_call_output")])
        self.log(request, body, dialect="responses", main=tool is not None, step=step, true_tokens=size)
        reasoning = {"id": f"rs_{self.served:04d}", "type": "reasoning", "summary": [],
                     "encrypted_content": "gAAAAB" + base64.b64encode(f"step {step}".encode()).decode()}
        if tool is not None and step < len(self.files):
            output = [reasoning, _codex_call(tool, step, self.files[step])]
        else:
            text = self.final_text() if tool is not None else "Reading files"
            output = [reasoning, {"id": f"msg_{self.served:04d}", "type": "message", "role": "assistant",
                                  "status": "completed",
                                  "content": [{"type": "output_text", "text": text, "annotations": []}]}]
        usage = {"input_tokens": size, "input_tokens_details": {"cached_tokens": size * 3 // 4},
                 "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 12}, "total_tokens": size + 20}
        response = {"id": f"resp_{self.served:04d}", "object": "response", "created_at": 1_700_000_000,
                    "status": "completed", "model": value.get("model", ""), "output": output,
                    "parallel_tool_calls": False, "tool_choice": "auto", "tools": [], "usage": usage}
        if value.get("stream"):
            return await _stream(request, _responses_events(response))
        return web.json_response(response)

    # --- OpenAI Chat Completions (Copilot CLI) ---------------------------------------------------

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        value = _json(body)
        if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
            self.log(request, body, dialect="openai", main=False)
            return _error(400, "invalid request body")
        size = true_size(value, "openai")
        functions = [t.get("function") for t in value.get("tools") or [] if isinstance(t, dict)]
        tool = next(filter(None, (_named(functions, name) for name in CHAT_READ)), None)
        step = self.step([m.get("tool_call_id", "") for m in value["messages"]
                          if isinstance(m, dict) and m.get("role") == "tool"])
        self.log(request, body, dialect="openai", main=tool is not None, step=step, true_tokens=size)
        if tool is not None and step < len(self.files):
            arguments = _read_arguments(tool.get("parameters") or {}, self.files[step])
            message = {"role": "assistant", "content": f"Reading {Path(self.files[step]).name}.", "tool_calls": [
                {"id": f"call_ctxfit_step_{step:04d}", "type": "function",
                 "function": {"name": tool["name"], "arguments": orjson.dumps(arguments).decode()}}]}
            finish = "tool_calls"
        else:
            schema = ((value.get("response_format") or {}).get("json_schema") or {}).get("schema")
            text = self.final_text() if tool is not None else "Reading files"
            text = orjson.dumps(sample(schema)).decode() if tool is None and isinstance(schema, dict) else text
            message, finish = {"role": "assistant", "content": text}, "stop"
        usage = {"prompt_tokens": size, "completion_tokens": 20, "total_tokens": size + 20,
                 "prompt_tokens_details": {"cached_tokens": size * 3 // 4}}
        completion = {"id": f"chatcmpl-{self.served:04d}", "object": "chat.completion", "created": 1_700_000_000,
                      "model": value.get("model", ""), "usage": usage,
                      "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}]}
        if value.get("stream"):
            with_usage = bool((value.get("stream_options") or {}).get("include_usage"))
            return await _stream(request, _openai_events(completion, usage=with_usage))
        return web.json_response(completion)

    # --- Gemini generateContent (Gemini CLI) ----------------------------------------------------

    async def gemini(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        value = _json(body)
        if not isinstance(value, dict) or not isinstance(value.get("contents"), list):
            self.log(request, body, dialect="gemini", main=False)
            return web.json_response({"error": {"code": 400, "message": "invalid request body",
                                                "status": "INVALID_ARGUMENT"}}, status=400)
        size = true_size(value, "gemini")
        declarations = [d for t in value.get("tools") or [] for d in t.get("functionDeclarations") or []]
        tool = _named(declarations, GEMINI_READ)
        answers = [p.get("functionResponse") or {} for c in value["contents"] for p in c.get("parts") or []]
        step = self.step([a.get("id", "") for a in answers])
        self.log(request, body, dialect="gemini", main=tool is not None, step=step, true_tokens=size)
        if tool is not None and step < len(self.files):
            schema = tool.get("parametersJsonSchema") or tool.get("parameters") or {}
            call = {"id": f"ctxfit_step_{step:04d}", "name": tool["name"],
                    "args": {_path_parameter(schema): self.files[step]}}
            signature = base64.b64encode(f"signature of step {step}".encode()).decode()
            parts = [{"text": f"Reading {Path(self.files[step]).name}."},
                     {"functionCall": call, "thoughtSignature": signature}]
        else:
            parts = [{"text": self.final_text() if tool is not None else gemini_side_text(value)}]
        usage = {"promptTokenCount": size, "cachedContentTokenCount": size * 3 // 4, "candidatesTokenCount": 20,
                 "totalTokenCount": size + 20}
        model = request.match_info["model"]
        reply = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                 "usageMetadata": usage, "modelVersion": model, "responseId": f"resp-{self.served:04d}"}
        if not request.path.endswith(":streamGenerateContent"):
            return web.json_response(reply)
        chunks = [{"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}], "modelVersion": model,
                   "responseId": reply["responseId"]} for p in parts[:-1]]
        chunks.append({**reply, "candidates": [{**reply["candidates"][0],
                                                "content": {"role": "model", "parts": parts[-1:]}}]})
        if request.query.get("alt") == "sse":
            return await _stream(request, [b"data: " + orjson.dumps(c) + b"\r\n\r\n" for c in chunks])
        return await _stream(request, [b"[" + b",\r\n".join(orjson.dumps(c) for c in chunks) + b"]"],
                             "application/json")

    # --- everything else ------------------------------------------------------------------------

    async def other(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.log(request, body, main=False)
        if request.headers.get("upgrade", "").lower() == "websocket":
            return web.Response(status=426, text="WebSockets are not served here: use HTTPS")
        if request.path in ("/", "") or request.method == "HEAD":
            return web.Response(status=200)
        if request.path.rstrip("/").endswith("/models"):
            return web.json_response({"object": "list", "data": [], "models": []})
        if "/models/" in request.path and request.method == "GET":  # (Copilot CLI asks for its model)
            return web.json_response({"id": request.path.rsplit("/", 1)[1], "object": "model", "owned_by": "scripted"})
        return _error(404, f"no such path: {request.path}")


def gemini_side_text(value: dict) -> str:
    """A Gemini side request's answer: JSON from its schema when it asks for JSON (the router's
    model choice, the next-speaker check), else a short text."""
    config = value.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    return orjson.dumps(sample(schema)).decode() if isinstance(schema, dict) else "Reading files"


def sample(schema: dict):
    """A small value that satisfies a JSON schema: an enum's first choice, an object's required
    properties (all of them when none is marked), a number's minimum (else 1), an empty array, a
    short string. Gemini writes types in capitals (`OBJECT`)."""
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        names = schema.get("required") or list(properties)
        return {n: sample(properties.get(n) or {"type": "string"}) for n in names}
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    return {"array": [], "boolean": False, "null": None}.get(kind, "user")


def responses_size(value: dict) -> int:
    """A Responses body's true size, counted as `true_size` counts a chat: o200k over the tools'
    JSON and every item's text (its strings, but not ids, `encrypted_content`, which stands for
    reasoning the script did not do, or Codex's own metadata), framed per item."""
    items = value["input"] if isinstance(value["input"], list) else [{"type": "message", "content": value["input"]}]
    instructions = value.get("instructions")
    messages = [{"role": "system", "content": instructions}] if isinstance(instructions, str) else []
    messages += [{"role": str(i.get("type", "")), "content": "\n".join(_strings(i))} for i in items
                 if isinstance(i, dict)]
    return true_size({"tools": value.get("tools"), "messages": messages}, "openai")


#: Keys of a Responses item that the model does not read as text.
_UNCOUNTED = {"id", "call_id", "encrypted_content", "internal_chat_message_metadata_passthrough", "status", "type"}


def _strings(value, key: str = "") -> list[str]:
    if key in _UNCOUNTED:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(v, k)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _codex_tool(value: dict) -> dict | None:
    """The tool Codex advertised that the script answers with: the code-mode `exec` custom tool
    (inside an `additional_tools` item, under a namespace), else `exec_command` or `shell`."""
    found: dict[str, dict] = {}

    def walk(tools: list) -> None:
        for tool in tools:
            if isinstance(tool, dict):
                if tool.get("name") in CODEX_TOOLS and tool.get("type") in ("custom", "function"):
                    found.setdefault(tool["name"], tool)
                walk(tool.get("tools") or [])

    walk(value.get("tools") or [])
    for item in value["input"] if isinstance(value.get("input"), list) else []:
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            walk(item.get("tools") or [])
    return next((found[n] for n in CODEX_TOOLS if n in found), None)


def _codex_call(tool: dict, step: int, path: str) -> dict:
    """Codex's call that prints a file, in the tool's own form."""
    call_id, command = f"call_ctxfit_step_{step:04d}", f"cat {path}"
    if tool["type"] == "custom":  # code mode: JavaScript that calls the nested exec_command
        source = (f"const r = await tools.exec_command({{cmd: {orjson.dumps(command).decode()}}});\n"
                  "text(r.output);\n")
        return {"id": f"ctc_{step:04d}", "type": "custom_tool_call", "status": "completed", "call_id": call_id,
                "name": tool["name"], "input": source}
    arguments = {"cmd": command} if tool["name"] == "exec_command" else {"command": ["bash", "-lc", command]}
    return {"id": f"fc_{step:04d}", "type": "function_call", "status": "completed", "call_id": call_id,
            "name": tool["name"], "arguments": orjson.dumps(arguments).decode()}


def _named(tools: list, name: str) -> dict | None:
    return next((t for t in tools if isinstance(t, dict) and t.get("name") == name), None)


def _read_arguments(schema: dict, path: str) -> dict:
    """The arguments of a reading tool that read all of `path`."""
    files = (schema.get("properties") or {}).get("files")
    if isinstance(files, dict) and files.get("type") == "array":  # Cline CLI's read_files: [{path}]
        return {"files": [_read_arguments(files.get("items") or {}, path)]}
    arguments: dict = {_path_parameter(schema): path}
    if "forceReadLargeFiles" in (schema.get("properties") or {}):  # Copilot's view: past 20 KB
        arguments["forceReadLargeFiles"] = True
    return arguments


def _path_parameter(schema: dict) -> str:
    """The parameter that names the file: a required one with `path` in its name."""
    properties = schema.get("properties") or {}
    names = [n for n in schema.get("required") or list(properties) if "path" in n.lower()]
    return names[0] if names else "file_path"


def _blocks(message: dict) -> list[dict]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _json(body: bytes):
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"type": "error", "error": {"type": "invalid_request_error", "message": message}},
                             status=status)


async def _stream(request: web.Request, events: list[bytes], content_type: str = "text/event-stream"):
    response = web.StreamResponse(headers={"content-type": content_type, "cache-control": "no-cache"})
    await response.prepare(request)
    for event in events:
        await response.write(event)
    await response.write_eof()
    return response


def make_app(files: list[str], record: Path | None, bodies: Path | None = None) -> web.Application:
    script = Script(files, record, bodies)
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/messages", script.anthropic)
    app.router.add_post("/v1/messages/count_tokens", script.count_tokens)
    app.router.add_post("/v1/responses", script.responses)
    app.router.add_post("/v1/chat/completions", script.chat)
    for method in ("generateContent", "streamGenerateContent"):
        app.router.add_post(f"/{{version:v1|v1beta|v1alpha}}/models/{{model}}:{method}", script.gemini)
    app.router.add_route("*", "/{tail:.*}", script.other)
    return app


async def serve(port: int, files: list[str], record: Path | None, bodies: Path | None) -> None:
    runner = web.AppRunner(make_app(files, record, bodies), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    print(f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}", flush=True)
    await asyncio.Event().wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--files", nargs="+", required=True, help="absolute paths of the files to read, in order")
    ap.add_argument("--record", type=Path)
    ap.add_argument("--bodies", type=Path, help="a folder: each request's body is also kept there, byte for byte")
    args = ap.parse_args()
    if args.bodies is not None:
        args.bodies.mkdir(parents=True, exist_ok=True)
    try:
        asyncio.run(serve(args.port, [str(Path(f).resolve()) for f in args.files], args.record, args.bodies))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
