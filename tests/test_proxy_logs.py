"""What the user sees of `ctxfit proxy` (issue #22, item 6): a line for every request, a client
that hangs up included; never a traceback, under load either; colour on a terminal only; a
summary when it is stopped. Real proxy and fake provider processes on loopback."""

from __future__ import annotations

import os
import pty
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import orjson
import pytest
from servers import ROOT, eventually, fake_provider, proxy

HEADERS = {"x-api-key": "sk-log-test", "content-type": "application/json"}
COLOUR = re.compile(r"\x1b\[3\d(;\d+)*m")  # a foreground colour
REQUEST_LINE = re.compile(r"^POST /v1/(messages|chat/completions) ", re.M)


def body(number: int, stream: bool = False, model: str = "claude-test") -> bytes:
    messages = [{"role": "user", "content": f"Client {number}: read the files. " + "lorem ipsum " * 400}]
    return orjson.dumps({"model": model, "max_tokens": 50, "stream": stream, "messages": messages})



# --- the ways a client goes away --------------------------------------------------------------


def whole(url: str, number: int) -> None:
    assert httpx.post(f"{url}/v1/messages", content=body(number), headers=HEADERS, timeout=60).status_code == 200


def hangs_up_mid_stream(url: str, number: int) -> None:
    """Reads the first piece of a streamed reply, then closes the connection."""
    with httpx.stream(
        "POST", f"{url}/v1/messages", content=body(number, stream=True), headers=HEADERS, timeout=60
    ) as response:
        assert response.status_code == 200
        next(response.iter_raw())


def hangs_up_mid_body(url: str, number: int) -> None:
    """Sends the headers and half the body, then closes the connection."""
    payload = body(number)
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(
            f"POST /v1/messages HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n".encode()
            + payload[: len(payload) // 2]
        )
        time.sleep(0.05)  # (the request has begun: the proxy has its headers and part of its body)


def gives_up_waiting(url: str, number: int) -> None:
    """Waits for a slow provider less long than it takes."""
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{url}/v1/messages", content=body(number, model="fake-slow"), headers=HEADERS, timeout=0.3)


CLIENTS = [whole, hangs_up_mid_stream, hangs_up_mid_body, gives_up_waiting]


def test_every_request_has_its_line_a_client_that_hangs_up_too(tmp_path):
    with fake_provider(None) as provider, proxy(provider.url, "--budget", "20000") as px:
        for number in range(12):
            hangs_up_mid_stream(px.url, number)
        assert eventually(lambda: len(REQUEST_LINE.findall(px.stderr)) == 12), px.stderr
        for client in CLIENTS:
            client(px.url, 100)
        assert eventually(lambda: len(REQUEST_LINE.findall(px.stderr)) == 12 + len(CLIENTS)), px.stderr
        stats = httpx.get(f"{px.url}/ctxfit/stats").json()["totals"]
        log = px.stop()
    assert stats["requests"] == 12 + len(CLIENTS)
    assert stats["client_gone"] >= 12 + 3
    lines = REQUEST_LINE.findall(log)
    assert len(lines) == 12 + len(CLIENTS)  # one line each, never two
    assert "(the client went away" in log and "Traceback" not in log
    assert not COLOUR.search(log)  # not a terminal: plain lines


def test_no_traceback_under_load_with_clients_hanging_up(tmp_path):
    """Many clients at once, half of them going away at some point: each request one line,
    not a single traceback in the proxy's log."""
    with fake_provider(None) as provider, proxy(provider.url, "--budget", "20000", "--workers", "2") as px:
        jobs = [(CLIENTS[n % len(CLIENTS)], n) for n in range(64)]
        with ThreadPoolExecutor(24) as pool:
            for done in [pool.submit(client, px.url, number) for client, number in jobs]:
                done.result()
        assert eventually(lambda: len(REQUEST_LINE.findall(px.stderr)) == len(jobs)), px.stderr[-3000:]
        stats = httpx.get(f"{px.url}/ctxfit/stats").json()["totals"]
        log = px.stop()
    assert "Traceback" not in log, log[-3000:]
    assert stats["requests"] == len(REQUEST_LINE.findall(log)) == len(jobs)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_summary_when_stopped(tmp_path, sig):
    with fake_provider(None) as provider, proxy(provider.url, "--budget", "20000") as px:
        for number in range(3):
            whole(px.url, number)
        assert eventually(lambda: len(REQUEST_LINE.findall(px.stderr)) == 3)
        px.process.send_signal(sig)
        assert px.process.wait(timeout=30) == 0
        log = px.stop()
    last = log.strip().splitlines()[-1]
    assert re.match(
        r"stopped after \d+ s: 3 requests, 0 fitted, 0 results cleared, 0 tokens kept out; cache reads "
        r"\d+% of the prompt tokens the provider reported$",
        last,
    ), last
    assert "Traceback" not in log


# --- on a terminal ----------------------------------------------------------------------------


def on_a_terminal(upstream: str, env: dict) -> str:
    """Run the proxy with its stderr on a pseudo-terminal, send one request, stop it with
    Ctrl-C's signal: what the terminal showed."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxfit_cli", "proxy", "--port", "0", "--upstream", upstream],
        stdout=subprocess.PIPE,
        stderr=terminal,
        cwd=ROOT,
        env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "200", **env},
    )
    os.close(terminal)
    shown: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(controller, 65536)
            except OSError:  # the terminal's other end closed
                return
            if not data:
                return
            shown.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        url = process.stdout.readline().decode().strip()
        whole(url, 1)
        assert eventually(lambda: b"POST /v1/messages" in b"".join(shown))
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
        reader.join(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
    return b"".join(shown).decode("utf-8", "replace")


def test_colour_on_a_terminal_unless_no_color(tmp_path):
    with fake_provider(None) as provider:
        coloured = on_a_terminal(provider.url, {})
        plain = on_a_terminal(provider.url, {"NO_COLOR": "1"})
    assert COLOUR.search(coloured) and "stopped after" in coloured, coloured
    assert not COLOUR.search(plain) and "POST /v1/messages" in plain and "stopped after" in plain, plain
    assert "Traceback" not in coloured + plain
