"""What the proxy answers that the agents of today ask besides their fitted requests: a
WebSocket upgrade (Codex 0.171), `HEAD /` and other paths, a provider it cannot reach or that
refuses a request; and what it tells the agent of each fitted request (its measure, in headers)."""

from __future__ import annotations

import json
import subprocess
import sys

import anthropic
import httpx
import openai
import pytest

from servers import ROOT, eventually, fake_provider, proxy, recorded

KEY = "sk-test-agents"
TOOLS = [{"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    record = tmp_path_factory.mktemp("agents") / "upstream.jsonl"
    with fake_provider(record, 24) as provider, proxy(provider.url, "--budget", "20000") as px:
        yield px, record


def stats(url: str) -> dict:
    return httpx.get(f"{url}/ctxfit/stats").json()


@pytest.mark.parametrize("path", ["/v1/responses", "/responses", "/anything"])
def test_a_websocket_upgrade_is_refused_at_once_with_426(stack, path):
    """426 is the answer on which Codex 0.171 goes on over HTTPS at once (a 200, 404 or 501
    costs it 7 tries and ~6.5 s); it never reaches the provider, and is not counted as a request."""
    px, record = stack
    before, sent = stats(px.url)["totals"], len(recorded(record))
    upgrade = {"connection": "Upgrade", "upgrade": "websocket", "sec-websocket-version": "13",
               "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", "authorization": f"Bearer {KEY}"}
    response = httpx.get(f"{px.url}{path}", headers=upgrade)
    assert response.status_code == 426
    assert "use HTTPS" in response.json()["error"]["message"]
    after = stats(px.url)["totals"]
    assert after["websockets_refused"] == before["websockets_refused"] + 1
    assert after["requests"] == before["requests"] and len(recorded(record)) == sent


def test_head_and_unknown_paths_pass_through(stack):
    px, record = stack
    mark = len(recorded(record))
    head = httpx.head(f"{px.url}/")
    other = httpx.post(f"{px.url}/v1/something/new", json={"x": 1})
    paths = [(r["path"]) for r in recorded(record)[mark:]]
    assert paths == ["/", "/v1/something/new"]  # both reached the provider, as they came
    assert head.status_code == other.status_code  # (the provider's answer: the fake knows neither)


def test_a_fitted_reply_says_what_the_request_measures(stack):
    """`ctxfit-tokens` and `ctxfit-counted`: a bound on a new conversation's first request (sent
    on at once, its worker counting it meanwhile: `opening.py`), anchored on the provider's count
    once a reply reported one (`ctxfit-confirmed`)."""
    px, record = stack
    client = anthropic.Anthropic(base_url=px.url, api_key=KEY, max_retries=0)
    history = [{"role": "user", "content": "Read the files, please (measured)."}]
    seen, before = [], set(stats(px.url)["conversations"])
    for _ in range(3):
        raw = client.messages.with_raw_response.create(model="claude-test", max_tokens=256, tools=TOOLS,
                                                       messages=history)
        reply = raw.parse()
        seen.append(raw.headers)
        if len(seen) == 1:  # what its worker counted, settled once the reply was complete
            (key,) = set(stats(px.url)["conversations"]) - before
            counted = stats(px.url)["conversations"][key]["tokens_after"]
        tool = next(b for b in reply.content if b.type == "tool_use")
        history += [{"role": "assistant", "content": reply.content},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": "x" * 9000}]}]
    assert seen[0]["ctxfit-counted"] == "bound" and "ctxfit-confirmed" not in seen[0]
    assert seen[-1]["ctxfit-counted"] == "anchored" and int(seen[-1]["ctxfit-confirmed"]) > 0
    assert 0 < counted <= int(seen[0]["ctxfit-tokens"])
    # The first body as the provider got it: `ctxfit estimate -` counts it with the counter the
    # proxy picked for its model (as `fit` does), reads the same figure, and says it counts
    # without the provider's anchor.
    body = json.dumps(recorded(record)[-3]["body"])
    done = subprocess.run([sys.executable, "-m", "ctxfit_cli", "estimate", "--json", "-"],
                          input=body.encode(), capture_output=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files"][0]["tokens"] == counted
    assert done.stderr.decode().count("\n") == 1 and "without the provider's anchor" in done.stderr.decode()


def test_a_refusal_is_counted_by_what_the_provider_said(stack):
    px, _ = stack
    client = openai.OpenAI(base_url=f"{px.url}/v1", api_key=KEY, max_retries=0)
    for _ in range(2):
        with pytest.raises(openai.BadRequestError):
            client.responses.create(model="fake-error-400", input="hi")
    assert stats(px.url)["totals"]["refused"]["400 fake N"] >= 2


@pytest.mark.parametrize("upstream, what", [
    ("http://127.0.0.1:9", "connection to 127.0.0.1:9 refused"),  # the discard port: nothing listens
    ("http://no-such-host.invalid", "DNS lookup of no-such-host.invalid failed"),
])
def test_an_unreachable_provider_is_a_502_that_says_what_failed_and_is_not_retried(upstream, what):
    with proxy(upstream) as px:
        answers = {
            "anthropic": httpx.post(f"{px.url}/v1/messages", json={"messages": [{"role": "user", "content": "hi"}]}),
            "openai": httpx.post(f"{px.url}/v1/responses", json={"model": "gpt-5", "input": "hi"}),
            "gemini": httpx.post(f"{px.url}/v1beta/models/gemini-2.5-pro:generateContent",
                                 json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
        }
        # The SDK reads `x-should-retry: false` and does not retry (it would, 2 more times, on a 502).
        client = anthropic.Anthropic(base_url=px.url, api_key=KEY, max_retries=2)
        with pytest.raises(anthropic.InternalServerError, match=what):
            client.messages.create(model="claude-test", max_tokens=9, messages=[{"role": "user", "content": "x"}])
        totals = stats(px.url)["totals"]
        log = px.stop()
    for dialect, response in answers.items():
        assert response.status_code == 502 and response.headers["x-should-retry"] == "false"
        error = response.json()["error"]
        assert f"the provider could not be reached: {what}" in error["message"]
        assert {"anthropic": error.get("type") == "api_error", "openai": error.get("type") == "server_error",
                "gemini": error.get("status") == "UNAVAILABLE"}[dialect]
    assert totals["requests"] == 4 and sum(totals["unreachable"].values()) == 4  # the SDK's one try
    assert list(totals["unreachable"])[0].startswith(what)
    assert eventually(lambda: log.count(what) == 4)
