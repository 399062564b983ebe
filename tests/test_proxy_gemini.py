"""`ctxfit proxy` on Gemini (what Gemini CLI speaks): a real proxy process in front of the fake
provider, driven by the real `google-genai` SDK, `generateContent` and `streamGenerateContent?alt=sse`,
the provider counting every request exactly (`fake_provider.py --usage exact`)."""

from __future__ import annotations

import base64
import re
import socket
import threading

import httpx
import orjson
import pytest
from servers import ROOT, eventually, fake_provider, proxy, Recorded, recorded
from test_gemini import gemini_problems

from ctxfit_cli import CLEARED_RESULT, validate_request

genai = pytest.importorskip("google.genai")
types = pytest.importorskip("google.genai.types")
errors = pytest.importorskip("google.genai.errors")

BUDGET = 20_000
STEPS = 30
KEY = "AIza-test-gemini-4242"  # in the x-goog-api-key header, as the SDKs send it
QUERY_KEY = "AIza-test-query-9191"  # in ?key=, as curl examples send it
SYSTEM = "You are a coding agent working in this repository. Read files when asked; be brief."
TOOLS = [
    types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name="read_file",
                description="Read a file of the repository.",
                parameters=types.Schema(type="OBJECT", properties={"path": types.Schema(type="STRING")}),
            )
        ]
    )
]
CONFIG = types.GenerateContentConfig(system_instruction=SYSTEM, tools=TOOLS, max_output_tokens=4096)


class Tee(httpx.HTTPTransport):
    """The bytes of each reply exactly as they came off the socket (before any decoding), and its headers."""

    def __init__(self) -> None:
        super().__init__()
        self.replies: list[tuple[httpx.Headers, list[bytes]]] = []
        self.lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        chunks: list[bytes] = []
        with self.lock:
            self.replies.append((response.headers, chunks))
        original = response.stream

        class Stream(httpx.SyncByteStream):
            def __iter__(self):
                for chunk in original:
                    chunks.append(chunk)
                    yield chunk

            def close(self) -> None:
                original.close()

        response.stream = Stream()
        return response


class Stack(Recorded):
    def __init__(self, tmp, usage: str = "exact") -> None:
        self.record = tmp / "upstream.jsonl"
        self.provider = fake_provider(self.record, STEPS + 10, usage=usage)
        self.proxy = proxy(self.provider.url, "--budget", str(BUDGET))
        self.tee = Tee()
        self.client = genai.Client(
            api_key=KEY,
            http_options=types.HttpOptions(
                base_url=self.proxy.url, api_version="v1beta", httpx_client=httpx.Client(transport=self.tee)
            ),
        )


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("gemini"))
    yield stack
    log = stack.proxy.stop()
    stack.provider.stop()
    assert KEY not in log and QUERY_KEY not in log
    assert "Traceback" not in log, log[-3000:]



def stats(stack: Stack) -> dict:
    return httpx.get(f"{stack.proxy.url}/ctxfit/stats").json()


def drive(stack: Stack) -> dict[str, dict]:
    """A Gemini CLI-like loop of `STEPS` function calls, every other step streamed; each reply is
    checked byte for byte. The function call parts the provider produced, by call id."""
    contents = [types.Content(role="user", parts=[types.Part.from_text(text="Read the files (gemini loop).")])]
    produced: dict[str, dict] = {}  # the provider's function call parts, by call id
    for step in range(STEPS):
        stack.tee.replies.clear()
        if step % 2:  # streamed, as Gemini CLI asks for every turn
            chunks = list(
                stack.client.models.generate_content_stream(model="gemini-2.5-pro", contents=contents, config=CONFIG)
            )
            content = types.Content(role="model", parts=[p for c in chunks for p in c.candidates[0].content.parts])
        else:
            content = (
                stack.client.models.generate_content(model="gemini-2.5-pro", contents=contents, config=CONFIG)
                .candidates[0]
                .content
            )
        [(headers, chunks_seen)] = stack.tee.replies
        assert b"".join(chunks_seen) == stack.reply_of(headers)  # the reply, byte for byte
        contents.append(content)
        call = next(p for p in content.parts if p.function_call)
        produced[call.function_call.id] = call.model_dump(exclude_none=True, mode="json", by_alias=True)
        text = (ROOT / call.function_call.args["path"]).read_text(encoding="utf-8")
        answer = types.FunctionResponse(id=call.function_call.id, name="read_file", response={"output": text})
        contents.append(types.Content(role="user", parts=[types.Part(function_response=answer)]))
    return produced


def test_gemini_cli_like_loop_is_fitted_valid_within_the_budget_pairs_intact(stack):
    mark = stack.mark()
    produced = drive(stack)
    records = stack.since(mark)
    assert len(records) == STEPS
    first = records[0]["body"]
    for record in records:
        body = record["body"]
        assert validate_request(body, "gemini") == [] and gemini_problems(body) == []
        assert body["systemInstruction"] == first["systemInstruction"] and body["tools"] == first["tools"]
        assert body["generationConfig"] == {"maxOutputTokens": 4096}
        assert record["true_tokens"] <= BUDGET or len(body["contents"]) <= 3  # the smallest request
        assert record["headers"]["x-goog-api-key"] == KEY
        for i, content in enumerate(body["contents"]):
            for part in content["parts"]:
                if "functionCall" in part:  # the model's call as it made it, signature included
                    call_id = part["functionCall"]["id"]
                    assert part == produced[call_id]
                    [answer] = body["contents"][i + 1]["parts"]
                    assert answer["functionResponse"]["id"] == call_id
    assert records[-2]["path"] == "/v1beta/models/gemini-2.5-pro:generateContent"
    assert records[-1]["path"] == "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    assert records[-1]["query"] == "alt=sse"
    assert CLEARED_RESULT in orjson.dumps(records[-1]["body"]).decode()
    conversation = latest_conversation(stack)  # (its key holds a digest of the API key: salted)
    assert conversation["requests"] == STEPS and conversation["dialect"] == "gemini"
    assert conversation["requests_anchored"] == STEPS - 1  # each request sized from the reply before
    lines_of = lambda: [line for line in stack.proxy.stderr.splitlines() if "/models/gemini-2.5-pro:" in line]
    assert eventually(lambda: len(lines_of()) >= STEPS)  # (a line is written once its reply has gone)
    lines = lines_of()[-STEPS:]
    assert "gemini-2.5-pro, window 1,048,576" in lines[-1] and "less 4,096 for the reply" in lines[-1]
    assert "results cleared" in lines[-1]
    # Each request is sized from the exact count the provider reported for the one before (the
    # streamed ones' in their last SSE chunk), plus the estimate of what changed since.
    confirmed = [int(re.search(r"([\d,]+) confirmed", line)[1].replace(",", "")) for line in lines[1:]]
    assert confirmed == [r["true_tokens"] for r in records[:-1]]


def test_a_key_in_the_query_is_forwarded_and_never_logged(stack):
    mark = stack.mark()
    body = {
        "contents": [{"role": "user", "parts": [{"text": "Hello (query key)."}]}],
        "generationConfig": {"maxOutputTokens": 64},
    }
    url = f"{stack.proxy.url}/v1/models/gemini-2.5-flash:generateContent?key={QUERY_KEY}"
    assert httpx.post(url, content=orjson.dumps(body)).status_code == 200
    not_json = httpx.post(url, content=b"{not json")  # fails open: forwarded as it came
    assert not_json.status_code == 400 and not_json.json()["error"]["status"] == "INVALID_ARGUMENT"
    counted = httpx.post(f"{stack.proxy.url}/v1beta/models/gemini-2.5-flash:countTokens?key={QUERY_KEY}", json=body)
    assert counted.status_code == 404  # (the fake has no countTokens) passed through
    records = stack.since(mark)
    assert [r["query"] for r in records] == [f"key={QUERY_KEY}"] * 3
    assert records[0]["body"] == body and records[1]["body"] == {"raw": base64.b64encode(b"{not json").decode()}
    assert QUERY_KEY not in httpx.get(f"{stack.proxy.url}/ctxfit/stats").text
    assert eventually(lambda: ":countTokens" in stack.proxy.stderr)
    log = stack.proxy.stderr
    assert "gemini-2.5-flash:generateContent" in log and "forwarded unchanged" in log and ":countTokens" in log


def test_a_malformed_request_with_a_query_key_is_refused_and_its_key_stays_out_of_the_log(stack):
    port = int(stack.proxy.url.rsplit(":", 1)[1])
    path = f"/v1beta/models/gemini-2.5-pro:generateContent?key={QUERY_KEY}"
    for request in (
        f"POST {path}\x01 HTTP/1.1\r\nHost: a\r\n\r\n",
        f"POST {path} HTTX/1.1\r\nHost: a\r\n\r\n",
        f"POST {path} HTTP/1.1\r\nHost: a\r\nx-goog-api-key: {KEY}\x01\r\n\r\n",
    ):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            client.sendall(request.encode("latin-1"))
            assert client.recv(100).startswith(b"HTTP/1.0 400 Bad Request")  # aiohttp's own answer
    assert eventually(lambda: stack.proxy.stderr.count("aiohttp.server") >= 2)  # quoted, redacted
    assert "generateContent?(not shown)" in stack.proxy.stderr


def test_a_stream_without_sse_is_a_json_array_passed_on_whole_and_anchors(stack):
    body = {"contents": [{"role": "user", "parts": [{"text": "Read the files (JSON stream)."}]}]}
    model = f"{stack.proxy.url}/v1beta/models/gemini-2.5-flash"
    reply = httpx.post(f"{model}:streamGenerateContent", json=body, headers={"x-goog-api-key": KEY})
    assert reply.headers["content-type"].startswith("application/json")
    assert reply.content == stack.reply_of(reply.headers) and reply.content.startswith(b"[")
    parts = [part for chunk in reply.json() for part in chunk["candidates"][0]["content"]["parts"]]
    call = parts[-1]["functionCall"]
    body["contents"] += [
        {"role": "model", "parts": parts},
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": call["id"],
                        "name": call["name"],
                        "response": {"output": "two lines\nof a file"},
                    }
                }
            ],
        },
    ]
    assert httpx.post(f"{model}:generateContent", json=body, headers={"x-goog-api-key": KEY}).status_code == 200
    conversation = latest_conversation(stack)
    assert conversation["requests"] == 2 and conversation["requests_anchored"] == 1


def latest_conversation(stack) -> dict:
    """The stats of the conversation the proxy served last (they are listed least recent first)."""
    return list(stats(stack)["conversations"].values())[-1]


def test_a_request_on_a_cached_content_is_forwarded_and_says_why(stack):
    mark = stack.mark()
    big = [{"role": "user", "parts": [{"text": "x" * 200_000}]}]
    stack.client.models.generate_content(
        model="gemini-2.5-flash",
        contents=big,
        config=types.GenerateContentConfig(cached_content="cachedContents/abc123"),
    )
    [record] = stack.since(mark)
    assert record["body"]["contents"] == big and record["body"]["cachedContent"] == "cachedContents/abc123"
    assert eventually(lambda: "cachedContent" in stack.proxy.stderr)
    line = next(line for line in stack.proxy.stderr.splitlines() if "cachedContent" in line)
    assert "forwarded unchanged" in line and "cached history" in line


def test_past_the_window_the_sdk_gets_googles_own_error_from_the_provider(tmp_path):
    record = tmp_path / "upstream.jsonl"
    with fake_provider(record, 30, "--window", "3000", usage="exact") as provider, \
            proxy(provider.url, "--window", "3000") as front:
        client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=front.url))
        with pytest.raises(errors.ClientError) as raised:
            client.models.generate_content(model="gemini-2.5-pro", contents="y " * 20_000)
        assert raised.value.code == 400 and raised.value.status == "INVALID_ARGUMENT"
        assert re.fullmatch(r"The input token count \(\d+\) exceeds the maximum number of tokens allowed \(3000\)\.",
                            raised.value.message)
        assert len(recorded(record)) == 1  # forwarded: the provider's count decides (fail open)
        log = front.stop()
    assert "past the window by ctxfit's count: forwarded" in log and "window 3,000 (--window)" in log and KEY not in log


def test_an_unreachable_provider_is_a_google_shaped_502_and_the_query_key_stays_out_of_the_log():
    with proxy("http://127.0.0.1:9") as front:  # (nothing listens on the discard port)
        reply = httpx.post(
            f"{front.url}/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key={QUERY_KEY}",
            json={"contents": [{"parts": [{"text": "hi"}]}]},
        )
        assert reply.status_code == 502 and reply.json()["error"]["status"] == "UNAVAILABLE"
        counted = httpx.post(f"{front.url}/v1beta/models/gemini-2.5-pro:countTokens?key={QUERY_KEY}", json={})
        assert counted.status_code == 502 and counted.json()["error"]["code"] == 502  # passed through: Google's too
        log = front.stop()
    assert ":streamGenerateContent 502" in log and QUERY_KEY not in log and "Traceback" not in log


if __name__ == "__main__":  # the figures: python tests/test_proxy_gemini.py
    import tempfile
    from pathlib import Path

    for usage in ("exact", "hidden"):
        stack = Stack(Path(tempfile.mkdtemp()), usage)
        try:
            drive(stack)
            sizes = [r["true_tokens"] for r in recorded(stack.record)]
        finally:
            stack.proxy.stop()
            stack.provider.stop()
        print(
            f"{'anchored' if usage == 'exact' else 'estimate alone':14} largest {max(sizes) / BUDGET:.2%} of the "
            f"budget, {sum(size > BUDGET for size in sizes)} of {len(sizes)} requests over it"
        )
