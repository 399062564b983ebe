"""A proxy a team shares behaves as a well-kept reverse proxy (issue 35 items 4 and 5, DESIGN §15):
one log line per request whatever its end, no request content in the log, a request's path never
climbs out of `--upstream`'s, an agent wrap cannot run and a busy port end in one line and exit 2,
wrap's log is its user's alone; and slow uploads from one address cannot lock another client out.

Real proxy processes on loopback in front of the fake provider; a client's "address" is a
loopback address of its own (127.0.0.2: Linux routes all of 127/8 to loopback)."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys

import httpx
from conftest import run_cli
from servers import eventually, fake_provider, proxy, recorded

KEY = "sk-test-fairness"


def test_dot_segments_never_climb_out_of_the_upstreams_path(tmp_path):
    record = tmp_path / "upstream.jsonl"
    with fake_provider(record) as provider, proxy(provider.url + "/v1") as front:
        for path in ("/../admin", "/models/../../secret", "/%2e%2e/%2E%2E/x", "/a/./b/.."):
            with socket.create_connection(("127.0.0.1", int(front.url.rsplit(":", 1)[1]))) as raw:
                raw.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
                while raw.recv(65536):
                    pass
        assert eventually(lambda: len(recorded(record)) == 4)
    assert [r["path"] for r in recorded(record)] == ["/v1/admin", "/v1/secret", "/v1/x", "/v1/a/"]


def test_a_body_that_never_arrives_gets_its_own_line_every_time(tmp_path):
    with fake_provider(None) as provider, proxy(provider.url, "--client-timeout", "1") as front:
        port = int(front.url.rsplit(":", 1)[1])
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", port)) as raw:
                raw.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
                assert raw.recv(65536).startswith(b"HTTP/1.1 408")
        assert eventually(lambda: front.stderr.count("POST /v1/messages 408") == 3), front.stderr


def test_no_piece_of_a_request_reaches_the_log(tmp_path):
    secret = "the-private-thing-a-user-typed-" * 3
    call = {"type": "tool_use", "id": secret, "name": "read", "input": {}}
    bad = [  # an id used twice (the error quotes it), a content of the wrong type: the body goes on unfitted
        {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": [call, call]}]},
        {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": {secret: 1}}]},
    ]
    with fake_provider(None) as provider, proxy(provider.url) as front:
        for body in bad:
            httpx.post(f"{front.url}/v1/messages", json=body, headers={"x-api-key": KEY})
        assert eventually(lambda: front.stderr.count("POST /v1/messages") == 2)
        log = front.stop()
    assert "is used twice" in log and "(a string of 93 characters, not shown)" in log, log
    assert "private-thing" not in log and KEY not in log, log


def test_a_busy_port_is_one_line_and_exit_2():
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "ctxfit_cli", "proxy", "--port", str(port), "--upstream",
                               "http://127.0.0.1:9"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"ctxfit: error: ctxfit proxy cannot listen on 127.0.0.1:{port} (address already in use): choose another --port"]


def test_wrap_on_a_file_it_cannot_run_is_one_line_and_exit_2_and_its_log_is_private(tmp_path):
    program = tmp_path / "agent"
    program.write_bytes(b"\x00\x01not a program")
    program.chmod(0o755)
    log = tmp_path / "wrap.log"
    done = run_cli("wrap", "--env", "ANTHROPIC_BASE_URL", "--upstream", "http://127.0.0.1:9", "--log", str(log),
                   "--", str(program))
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.decode().splitlines() if line.startswith("ctxfit: error")]
    assert errors == [f"ctxfit: error: {program}: cannot be run (Exec format error): give a program this system "
                      "can execute"], done.stderr
    assert "internal error" not in done.stderr.decode()
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600


# --- fair connections ----------------------------------------------------------------------------

SLOW_UPLOADS = 520
HEAD = b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n{\"messages\": ["


def closed(connection: socket.socket) -> bool:
    """Whether the proxy closed this connection (it sends nothing else to a slow upload)."""
    try:
        return connection.recv(65536, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except ConnectionError:
        return True


def test_520_slow_uploads_from_one_address_do_not_lock_another_client_out(tmp_path):
    """One address opens 520 uploads that never finish (the proxy holds 512 connections): it
    keeps at most half of them; a client at another address (127.0.0.2)
    meanwhile goes through a 12-request conversation, every request answered by the provider."""
    record = tmp_path / "upstream.jsonl"
    with fake_provider(record, 12) as provider, proxy(provider.url, "--client-timeout", "120") as front:
        port = int(front.url.rsplit(":", 1)[1])
        uploads = []
        for _ in range(SLOW_UPLOADS):
            connection = socket.create_connection(("127.0.0.1", port))
            connection.sendall(HEAD)
            uploads.append(connection)
        evicted = SLOW_UPLOADS - 256
        try:
            assert eventually(lambda: sum(map(closed, uploads)) == evicted, 60), front.stderr[-2000:]
            oldest_closed = sum(map(closed, uploads[:evicted]))
            other = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=60)
            history: list = [{"role": "user", "content": "Read the files."}]
            statuses = []
            for _ in range(13):
                response = other.post(f"http://127.0.0.1:{port}/v1/messages", headers={"x-api-key": KEY}, json={
                    "model": "claude-sonnet-4-5", "max_tokens": 100, "messages": history})
                statuses.append(response.status_code)
                reply = response.json()
                history.append({"role": "assistant", "content": reply["content"]})
                calls = [block for block in reply["content"] if block["type"] == "tool_use"]
                if not calls:
                    break
                history.append({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": calls[0]["id"], "content": "print('hi')\n" * 50}]})
            still_open = sum(not closed(c) for c in uploads)
        finally:
            for connection in uploads:
                connection.close()
        log = front.stop()
    assert statuses == [200] * 13, statuses
    assert len(recorded(record)) == 13
    assert still_open == 256, still_open  # (the address's share: half of the 512)
    # Closed: a connection still waiting without a request first (one accepted in the same burst
    # whose head the proxy has not read yet: no request, no line), else the oldest upload (its line says so).
    assert oldest_closed > 0 and "256 from one address (half of --max-connections) connections: closed" in log
