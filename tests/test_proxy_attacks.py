"""`ctxfit proxy` under attack (issue 20: R4-R8, R15, R16), each reproduction against a real proxy
process on loopback in front of the fake provider. Whatever the proxy cannot handle still reaches
the provider byte for byte (fail open), and no traceback ever reaches its log."""

from __future__ import annotations

import base64
import gzip
import hashlib
import http.client
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import anthropic
import httpx
import openai
import orjson
import pytest

from conftest import Chat, ascii_text
from ctxfit_cli import count
from servers import Server, fake_provider, proxy, recorded
from test_proxy import KEY, Stack, assert_fitted, eventually


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("attacks"))
    assert eventually(lambda: "ctxfit proxy on" in stack.proxy.stderr)  # the log's first line
    yield stack
    log = stack.proxy.stop()
    stack.provider.stop()
    assert "Traceback" not in log, log[-3000:]
    assert KEY not in log


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def post(stack: Stack, path: str, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(f"{stack.url}{path}", content=body, timeout=30,
                      headers={"x-api-key": KEY, "content-type": "application/json", **headers})


# --- R4: what ctxfit cannot handle is forwarded byte for byte ---------------------------------

CANNOT_HANDLE = {
    "lone-surrogate-in-system": ("/v1/messages",
                                 r'{"model":"m","system":"bad \ud83d","messages":[{"role":"user","content":"hi"}]}'),
    "lone-surrogate-in-first-message": ("/v1/messages",
                                        r'{"model":"m","messages":[{"role":"user","content":"bad \udc00 hi"}]}'),
    "lone-surrogate-in-openai-system": ("/v1/chat/completions",
                                        r'{"model":"m","messages":[{"role":"system","content":"\ud83d"},'
                                        r'{"role":"user","content":"hi"}]}'),
    "int-past-64-bits-in-first-message": ("/v1/messages",
                                          '{"model":"m","messages":[{"role":"user","content":"hi",'
                                          '"n":18446744073709551616}]}'),
    "nesting-300-in-first-message": ("/v1/messages",
                                     '{"model":"m","messages":[{"role":"user","content":"hi","x":' + deep(300) + '}]}'),
    "nesting-5000-in-a-later-message": ("/v1/messages",
                                        '{"model":"m","messages":[{"role":"user","content":"hi"},'
                                        '{"role":"assistant","content":"yo","x":' + deep(5000) + '},'
                                        '{"role":"user","content":"again"}]}'),
    "nesting-5000-outside-messages": ("/v1/messages",
                                      '{"model":"m","metadata":' + deep(5000) + ','
                                      '"messages":[{"role":"user","content":"hi"}]}'),
}


@pytest.mark.parametrize("case", sorted(CANNOT_HANDLE))
def test_what_ctxfit_cannot_handle_reaches_the_provider_byte_for_byte(stack, case):
    path, text = CANNOT_HANDLE[case]
    body = text.encode()
    mark, lines = stack.mark(), len(stack.proxy.stderr.splitlines())
    response = post(stack, path, body)
    assert "x-fake-request" in response.headers  # the provider's answer, whatever it is
    [record] = stack.since(mark)
    assert record["sha256"] == hashlib.sha256(body).hexdigest()
    assert eventually(lambda: len(stack.proxy.stderr.splitlines()) > lines)
    new = stack.proxy.stderr.splitlines()[lines:]
    [line] = new
    assert "forwarded unchanged, not fitted" in line and " 500 " not in line


# --- R8: repeated top-level "messages" keys ---------------------------------------------------


def test_repeated_messages_keys_fit_the_array_the_provider_reads(stack):
    chat = Chat("anthropic", system=None).user("Duplicate keys: read the files.")
    for _ in range(12):
        chat.round(ascii_text(600))  # 7,200 seed tokens of results, ~50,000 by the claude profile: over the budget
    small = orjson.dumps([{"role": "user", "content": "small"}])
    body = b'{"model": "claude-test", "max_tokens": 10, "messages": ' + small + b', "messages": ' + \
        orjson.dumps(chat.lines) + b"}"
    mark = stack.mark()
    assert post(stack, "/v1/messages", body).status_code == 200
    [record] = stack.since(mark)
    sent = record["body"]  # parsed as the provider parses it: the last key wins
    assert sent["messages"][0]["content"] == "Duplicate keys: read the files."
    assert_fitted([record], "anthropic")
    assert count(sent["messages"], dialect="anthropic") < count(chat.lines, dialect="anthropic")


# --- R5: the agent's own Accept-Encoding, and bodies never decompressed -----------------------


def raw_post(url: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict, bytes]:
    """A POST with exactly these headers (http.client adds no Accept-Encoding when told not to
    and never decodes the reply): status, headers, the reply's bytes as they came."""
    parsed = urlsplit(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    try:
        connection.putrequest("POST", path, skip_accept_encoding=True)
        for name, value in {"content-length": str(len(body)), **headers}.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def gzip_stack(tmp_path_factory):
    """A provider that gzips its replies to requests that accept it, as the real ones do."""
    record = tmp_path_factory.mktemp("gzip") / "upstream.jsonl"
    with fake_provider(record, 30, "--gzip") as provider, proxy(provider.url) as px:
        yield px, record
        log = px.stop()
    assert "Traceback" not in log, log[-3000:]


BODY = b'{"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "encodings"}]}'


@pytest.mark.parametrize("accept", [None, "gzip", "identity"])
def test_the_provider_is_asked_for_exactly_the_encodings_the_agent_asked_for(gzip_stack, accept):
    px, record = gzip_stack
    mark = len(recorded(record))
    headers = {"x-api-key": KEY, "content-type": "application/json",
               **({"accept-encoding": accept} if accept else {})}
    status, reply_headers, reply = raw_post(px.url, "/v1/messages", BODY, headers)
    [sent] = recorded(record)[mark:]
    assert status == 200 and sent["headers"].get("accept-encoding") == accept
    assert reply == base64.b64decode(sent["reply"])  # as the provider sent it, compressed or not
    assert (reply_headers.get("content-encoding") == "gzip") == (accept == "gzip")
    assert orjson.loads(gzip.decompress(reply) if accept == "gzip" else reply)["type"] == "message"


def test_a_compressed_request_body_is_forwarded_as_sent(gzip_stack):
    px, record = gzip_stack
    mark = len(recorded(record))
    status, _, _ = raw_post(px.url, "/v1/messages", gzip.compress(BODY),
                            {"x-api-key": KEY, "content-type": "application/json", "content-encoding": "gzip"})
    [sent] = recorded(record)[mark:]
    assert status == 200 and sent["body"] == orjson.loads(BODY)  # the provider decompressed it itself
    assert eventually(lambda: "a compressed body (Content-Encoding: gzip)" in px.stderr)


# --- R15: credentials in --upstream, and who may read /ctxfit/stats ---------------------------


def test_credentials_in_the_upstream_url_are_never_shown(tmp_path):
    record = tmp_path / "upstream.jsonl"
    with fake_provider(record) as provider:
        with_credentials = provider.url.replace("http://", "http://gateway-user:s3cret-pass@")
        with proxy(with_credentials) as px:
            assert eventually(lambda: "ctxfit proxy on" in px.stderr)
            stats = httpx.get(f"{px.url}/ctxfit/stats")
            anthropic_style = post_to(px.url, {"x-api-key": KEY})
            openai_style = post_to(px.url, {"authorization": f"Bearer {KEY}"})
            log = px.stop()
    assert stats.status_code == 200 and stats.json()["upstream"] == provider.url.replace("http://", "http://***@")
    assert "s3cret" not in log and "gateway-user" not in log and "***@" in log
    assert (anthropic_style, openai_style) == (200, 200)
    first, second = recorded(record)
    assert first["headers"]["authorization"] == "Basic " + base64.b64encode(b"gateway-user:s3cret-pass").decode()
    assert second["headers"]["authorization"] == f"Bearer {KEY}"  # the agent's own wins


def post_to(url: str, headers: dict, model: str = "m") -> int:
    return httpx.post(f"{url}/v1/messages", content=body_for(model), headers=headers, timeout=30).status_code


def body_for(model: str) -> bytes:
    return BODY.replace(b'"model": "m"', b'"model": "' + model.encode() + b'"')


@pytest.mark.parametrize("host, answered", [("evil.example", False), ("127.0.0.1.nip.io:8787", False),
                                            ("localhost", True), ("127.0.0.1:8787", True), ("[::1]:8787", True)])
def test_stats_answer_only_a_loopback_host(stack, host, answered):
    response = httpx.get(f"{stack.url}/ctxfit/stats", headers={"host": host})
    assert response.status_code == (200 if answered else 403)
    assert ("conversations" in response.json()) == answered


# --- R16: a bounded, graceful stop; the provider's error types for upstream failures ----------


def stop_with_a_request_in_flight(tmp_path, model: str, *options: str) -> tuple[dict, float, str, int]:
    """Send a request for `model`, SIGTERM the proxy once it is in flight: (what the client got,
    seconds from the signal to the proxy's exit, its log, its exit code)."""
    got: dict = {}
    with fake_provider(tmp_path / "upstream.jsonl") as provider, proxy(provider.url, *options) as px:
        def send() -> None:
            try:
                got["status"] = post_to(px.url, {"x-api-key": KEY}, model)
            except httpx.HTTPError as error:
                got["error"] = type(error).__name__

        client = threading.Thread(target=send)
        client.start()
        assert eventually(lambda: httpx.get(f"{px.url}/ctxfit/stats").json()["in_flight"] == 1)
        signalled = time.monotonic()
        px.process.send_signal(signal.SIGTERM)
        code = px.process.wait(timeout=30)
        took = time.monotonic() - signalled
        client.join(timeout=30)
        log = px.stop()
    assert "Traceback" not in log, log[-3000:]
    return got, took, log, code


def test_sigterm_lets_a_request_in_flight_finish(tmp_path):
    got, took, log, code = stop_with_a_request_in_flight(tmp_path, "fake-slow")  # answers after 3 s
    assert got == {"status": 200} and code == 0
    assert took < 5  # done when the request is, not after aiohttp's 60 s
    assert "stopping: up to 5 s for the 1 requests in flight" in log


def test_sigterm_cuts_what_is_still_in_flight_after_the_grace(tmp_path):
    got, took, log, code = stop_with_a_request_in_flight(tmp_path, "fake-hang", "--shutdown-grace", "3")
    assert "error" in got and code == 0
    assert "stopping: up to 3 s for the 1 requests in flight" in log
    # The grace announced, not aiohttp's 60 s, nor twice the grace (aiohttp waits it once for
    # the handler, then again after only cancelling the read of its request: 6 s and more).
    assert 3 <= took < 5.5


@pytest.mark.parametrize("path, dialect", [("/v1/messages", "anthropic"), ("/v1/chat/completions", "openai")])
def test_upstream_failures_carry_the_providers_error_type(tmp_path, path, dialect):
    with fake_provider(tmp_path / "upstream.jsonl") as provider, \
            proxy(provider.url, "--upstream-timeout", "1") as slow, proxy("http://127.0.0.1:9") as unreachable:
        timed_out = httpx.post(f"{slow.url}{path}", content=body_for("fake-slow"), timeout=30)
        refused = httpx.post(f"{unreachable.url}{path}", content=BODY, timeout=30)
    assert (timed_out.status_code, refused.status_code) == (504, 502)
    if dialect == "anthropic":
        assert timed_out.json()["error"]["type"] == "timeout_error"
        assert refused.json() == {"type": "error", "error": {"type": "api_error",
                                                             "message": refused.json()["error"]["message"]}}
    else:
        assert [r.json()["error"]["type"] for r in (timed_out, refused)] == ["server_error", "server_error"]
    with pytest.raises(anthropic.InternalServerError if dialect == "anthropic" else openai.InternalServerError):
        raise_as_the_sdk_does(dialect, refused)


def raise_as_the_sdk_does(dialect: str, response: httpx.Response) -> None:
    """The SDK's own mapping from an error response to its exception class."""
    client = (anthropic.Anthropic(api_key=KEY, base_url="http://127.0.0.1:9") if dialect == "anthropic"
              else openai.OpenAI(api_key=KEY, base_url="http://127.0.0.1:9"))
    raise client._make_status_error_from_response(response)


# --- R6: slow clients are timed out, and a flood of them starves no one ------------------------


def closed_by_peer(connection: socket.socket, deadline: float) -> bool:
    """Whether the proxy closes `connection` before `deadline` (what it sent first is skipped)."""
    while (left := deadline - time.monotonic()) > 0:
        connection.settimeout(left)
        try:
            if connection.recv(65536) == b"":
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
    return False


def test_slow_clients_are_timed_out_and_starve_no_one():
    # Under a 256-descriptor limit: room for (256 - 64) // 2 = 96 connections, not the default 512.
    with fake_provider(None) as provider, \
            Server(["sh", "-c", 'ulimit -n 256 && exec "$0" "$@"', sys.executable, "-m", "ctxfit_cli", "proxy",
                    "--port", "0", "--upstream", provider.url, "--client-timeout", "2"]) as px:
        address = (urlsplit(px.url).hostname, urlsplit(px.url).port)
        slow_heads = [socket.create_connection(address) for _ in range(300)]
        for connection in slow_heads:  # a request head that never ends
            connection.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nx-slow: ")
        started = time.monotonic()
        assert post_to(px.url, {"x-api-key": KEY}) == 200
        assert time.monotonic() - started < 5  # served at once, though 300 connections dribble
        slow_bodies = [socket.create_connection(address) for _ in range(20)]
        for connection in slow_bodies:  # a body that never ends
            connection.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 1000\r\n\r\n{")
        deadline = time.monotonic() + 20
        assert all(closed_by_peer(c, deadline) for c in slow_heads)
        answers = []
        for connection in slow_bodies:
            connection.settimeout(max(0.1, deadline - time.monotonic()))
            answers.append(connection.recv(65536))
        assert all(a.startswith(b"HTTP/1.1 408") for a in answers), answers[:2]
        assert post_to(px.url, {"x-api-key": KEY}) == 200
        for connection in slow_heads + slow_bodies:
            connection.close()
        log = px.stop()
    assert "Traceback" not in log, log[-3000:]
    assert "at most 96 connections instead of 512" in log
    assert log.count("did not arrive within 2 s") == 20  # one line per request, whatever its end (issue 35 F5)
    assert log.count("--max-connections") == 1
    assert len(log) < 5_000


# --- R7: conversation memory is bounded by bytes -----------------------------------------------


def rss_mb(pid: int) -> float:
    """The resident memory of the process and its children (the proxy's fitting workers)."""
    children = [int(c) for task in Path(f"/proc/{pid}/task").iterdir() for c in (task / "children").read_text().split()]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024 + sum(rss_mb(child) for child in children)
    raise AssertionError("no VmRSS")


def conversation_body(number: int, megabytes: float) -> bytes:
    chat = Chat("anthropic", system=None).user(f"Conversation {number}: read the files.")
    while len(chat.lines) * 10_000 < megabytes * 2**20:
        chat.round(f"{number} " + "word " * 2_000)  # ~10 KB per round, like a file read
    return orjson.dumps({"model": "claude-test", "max_tokens": 10, "messages": chat.lines})


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RSS from /proc")
def test_conversation_memory_is_bounded_by_bytes():
    limit = 32  # MB; each 1 MB conversation is estimated at ~5 MB of state: 30 of them are 150 MB
    with fake_provider(None) as provider, proxy(provider.url, "--budget", "20000", "--memory-mb", str(limit)) as px:
        for worker in range(8):  # each worker loads the claude profile (and numpy) on its first Claude request
            small = {"model": "claude-test", "max_tokens": 10, "messages": [{"role": "user", "content": f"{worker}"}]}
            httpx.post(f"{px.url}/v1/messages", json=small, headers={"x-api-key": KEY}, timeout=60)
        baseline = rss_mb(px.process.pid)
        for number in range(30):
            response = httpx.post(f"{px.url}/v1/messages", content=conversation_body(number, 1), timeout=60,
                                  headers={"x-api-key": KEY, "content-type": "application/json"})
            assert response.status_code == 200
        grown = rss_mb(px.process.pid) - baseline
        memory = httpx.get(f"{px.url}/ctxfit/stats").json()["memory_mb"]
        log = px.stop()
    assert "Traceback" not in log
    assert memory["limit"] == limit and memory["held"] <= limit
    # (+32 MB: since issue 35 a Claude model is counted with the claude profile, whose numpy
    # measuring leaves ~12-14 MB more RSS per worker than the seed rule for the same state held,
    # measured in one worker: 26.1 MB against 14.5 MB. Open: issue 35's report.)
    assert grown < limit + 48, f"RSS grew by {grown:.0f} MB past a {limit} MB limit"
