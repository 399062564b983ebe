"""`ctxfit proxy` as a real process in front of a fake provider (both on loopback), driven by the
real `anthropic` and `openai` SDKs, streaming and not."""

from __future__ import annotations

import asyncio
import base64
import json
import re

import anthropic
import httpx
import openai
import orjson
import pytest

from ctxfit_cli import CLEARED_RESULT, count, validate_request
from servers import ROOT, eventually, fake_provider, proxy, Recorded, recorded

BUDGET = 20_000
KEY = "sk-test-do-not-log-4242"
TOOLS = [{"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}]
OPENAI_TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


class Stack(Recorded):
    def __init__(self, tmp) -> None:
        self.record = tmp / "upstream.jsonl"
        self.provider = fake_provider(self.record, steps=24)
        self.proxy = proxy(self.provider.url, "--budget", str(BUDGET))
        self.url = self.proxy.url

    def anthropic(self, **options) -> anthropic.Anthropic:
        return anthropic.Anthropic(base_url=self.url, api_key=KEY, max_retries=0, **options)

    def openai(self, **options) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=KEY, max_retries=0, **options)

    def stats(self) -> dict:
        return httpx.get(f"{self.url}/ctxfit/stats").json()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("proxy"))
    yield stack
    log = stack.proxy.stop()
    stack.provider.stop()
    assert KEY not in log  # keys are forwarded, never logged
    assert "Traceback" not in log, log[-3000:]



def assert_fitted(records: list[dict], dialect: str) -> None:
    """Every body the provider received is a valid request within the budget."""
    assert records
    for record in records:
        body = record["body"]
        assert validate_request(body, dialect) == []
        tokens = count(body["messages"], system=body.get("system"), tools=body.get("tools"), dialect=dialect)
        # Over the budget only as DESIGN §4 allows: the smallest request (first message, newest round).
        assert tokens <= BUDGET or len(body["messages"]) <= 3
        assert record["headers"].get("x-api-key", record["headers"].get("authorization", "")).endswith(KEY)


def cleared_ids(body: dict) -> set[str]:
    return {b["tool_use_id"] for m in body["messages"] if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result" and b.get("content") == CLEARED_RESULT}


# --- Anthropic ------------------------------------------------------------------------------


def test_anthropic_agent_loop_through_the_proxy(stack):
    client, mark = stack.anthropic(), stack.mark()
    history = [{"role": "user", "content": "Read the files, please (anthropic loop)."}]
    for step in range(24):
        options = dict(model="claude-test", max_tokens=512, system="Be brief.", tools=TOOLS, messages=history)
        if step % 2:
            with client.messages.stream(**options) as stream:  # SSE, parsed by the SDK
                reply = stream.get_final_message()
        else:
            raw = client.messages.with_raw_response.create(**options)
            assert raw.http_response.content == stack.reply_of(raw.headers)  # byte for byte
            reply = raw.parse()
        history.append({"role": "assistant", "content": reply.content})
        tool = next(b for b in reply.content if b.type == "tool_use")
        text = (ROOT / tool.input["path"]).read_text(encoding="utf-8")
        history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": text}]})
    records = stack.since(mark)
    assert_fitted(records, "anthropic")
    assert all(r["body"]["system"] == "Be brief." and r["body"]["tools"] == TOOLS for r in records)
    # The ratchet holds across requests: each request's cleared results contain the previous one's.
    cleared = [cleared_ids(r["body"]) for r in records]
    assert cleared[-1] and all(a <= b for a, b in zip(cleared, cleared[1:]))
    # The conversation's own history was sent whole as long as it fitted (nothing else changed).
    assert records[0]["body"]["messages"] == [{"role": "user", "content": "Read the files, please (anthropic loop)."}]
    conversation = next(c for c in stack.stats()["conversations"].values() if c["requests"] == 24)
    assert conversation["stage"] == "clear" and conversation["results_cleared"] >= len(cleared[-1])
    assert conversation["tokens_before"] > BUDGET >= conversation["tokens_after"]
    assert 0 < conversation["cache_read_share"] < 1


def test_anthropic_stream_arrives_byte_for_byte(stack):
    client = stack.anthropic()
    with client.messages.with_streaming_response.create(
            model="claude-test", max_tokens=64, stream=True,
            messages=[{"role": "user", "content": "stream this"}]) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        received = b"".join(response.iter_bytes())
    assert received == stack.reply_of(response.headers)
    assert received.count(b"event: content_block_delta") == 2


# --- OpenAI ---------------------------------------------------------------------------------


def test_openai_agent_loop_through_the_proxy(stack):
    client, mark = stack.openai(), stack.mark()
    history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Read the files (openai loop)."}]
    for step in range(24):
        options = dict(model="gpt-test", tools=OPENAI_TOOLS, messages=history)
        if step % 2:
            stream = client.chat.completions.create(stream=True, **options)
            chunks = list(stream)
            call = {"id": None, "arguments": ""}
            for chunk in chunks:
                for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                    call["id"] = delta.id or call["id"]
                    call["arguments"] += delta.function.arguments or ""
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": call["id"], "type": "function", "function": {"name": "read_file", "arguments": call["arguments"]}}]}
        else:
            raw = client.chat.completions.with_raw_response.create(**options)
            assert raw.http_response.content == stack.reply_of(raw.headers)
            message = raw.parse().choices[0].message
        history.append(message)
        call_id = message["tool_calls"][0]["id"] if isinstance(message, dict) else message.tool_calls[0].id
        arguments = (message["tool_calls"][0]["function"]["arguments"] if isinstance(message, dict)
                     else message.tool_calls[0].function.arguments)
        text = (ROOT / json.loads(arguments)["path"]).read_text(encoding="utf-8")
        history.append({"role": "tool", "tool_call_id": call_id, "content": text})
    records = stack.since(mark)
    assert_fitted(records, "openai")
    assert any(m.get("content") == CLEARED_RESULT for m in records[-1]["body"]["messages"])


def test_openai_stream_arrives_byte_for_byte(stack):
    client = stack.openai()
    with client.chat.completions.with_streaming_response.create(
            model="gpt-test", stream=True, messages=[{"role": "user", "content": "stream this"}]) as response:
        received = b"".join(response.iter_bytes())
    assert received == stack.reply_of(response.headers)
    assert received.endswith(b"data: [DONE]\n\n")


# --- many clients ---------------------------------------------------------------------------


def test_fifty_concurrent_clients(stack):
    mark = stack.mark()

    async def agent(client: anthropic.AsyncAnthropic, n: int) -> int:
        history = [{"role": "user", "content": f"Agent {n}: read the files."}]
        for _ in range(4):
            reply = await client.messages.create(model="claude-test", max_tokens=256, tools=TOOLS, messages=history)
            tool = next(b for b in reply.content if b.type == "tool_use")
            history.append({"role": "assistant", "content": reply.content})
            text = "y" * 30_000  # a fixed size: the repository's files grow
            history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool.id,
                                                         "content": text}]})
        return len(history)

    async def main() -> list[int]:
        async with anthropic.AsyncAnthropic(base_url=stack.url, api_key=KEY, max_retries=0) as client:
            return await asyncio.gather(*(agent(client, n) for n in range(50)))

    assert asyncio.run(main()) == [9] * 50
    records = stack.since(mark)
    assert len(records) == 200
    assert_fitted(records, "anthropic")
    agents = [c for c in stack.stats()["conversations"].values() if c["requests"] == 4]
    assert len(agents) >= 50


# --- what is not fitted -----------------------------------------------------------------------


def test_other_paths_are_forwarded_untouched(stack):
    mark = stack.mark()
    body = b'{"model": "claude-test",  "messages": [{"role": "user", "content": "count me"}]}'
    response = httpx.post(f"{stack.url}/v1/messages/count_tokens?beta=true", content=body,
                          headers={"x-api-key": KEY, "content-type": "application/json"})
    models = httpx.get(f"{stack.url}/v1/models", headers={"authorization": f"Bearer {KEY}"})
    first, second = stack.since(mark)
    assert response.status_code == 200 and response.content == base64.b64decode(first["reply"])
    assert first["path"] == "/v1/messages/count_tokens" and first["body"] == orjson.loads(body)
    assert models.status_code == 200 and models.content == base64.b64decode(second["reply"])


def test_what_cannot_be_fitted_is_forwarded_unchanged(stack):
    mark = stack.mark()
    body = b"{not json"
    response = httpx.post(f"{stack.url}/v1/messages", content=body, headers={"x-api-key": KEY})
    [record] = stack.since(mark)
    assert base64.b64decode(record["body"]["raw"]) == body
    assert response.status_code in (200, 400)  # whatever the provider answered
    assert eventually(lambda: "forwarded unchanged, not fitted" in stack.proxy.stderr)


def test_a_request_that_needs_no_fitting_is_forwarded_as_the_agent_sent_it(stack):
    """The proxy reads what every command reads (an open call, two turns in a row: DESIGN §13)
    and changes a body only to fit it; one within the budget goes on as its bytes came."""
    mark, skipped = stack.mark(), stack.proxy.stderr.count("forwarded unchanged, not fitted")
    logged = stack.proxy.stderr.count("/v1/messages")
    body = (b'{"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "again"},'
            b' {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]}]}')
    response = httpx.post(f"{stack.url}/v1/messages", content=body, headers={"x-api-key": KEY})
    [record] = stack.since(mark)
    assert record["body"] == orjson.loads(body) and response.status_code in (200, 400)
    assert eventually(lambda: stack.proxy.stderr.count("/v1/messages") > logged)  # its log line came
    assert stack.proxy.stderr.count("forwarded unchanged, not fitted") == skipped


def test_past_the_window_goes_to_the_provider_whose_own_error_reaches_the_agent(tmp_path):
    """The proxy never refuses what the provider might take (DESIGN §14): the smallest request,
    past the window by ctxfit's count, is forwarded, and the provider's own error -- the one the
    agent's recovery reads -- is what the agent gets."""
    record = tmp_path / "upstream.jsonl"
    with fake_provider(record, 30, "--window", "5000", usage="exact") as provider, \
            proxy(provider.url, "--budget", "1000", "--window", "5000") as px:
        client = anthropic.Anthropic(base_url=px.url, api_key=KEY, max_retries=0)
        with pytest.raises(anthropic.BadRequestError) as caught:
            client.messages.create(model="claude-test", max_tokens=10,
                                   messages=[{"role": "user", "content": "word " * 8_000}])
        small = client.messages.create(model="claude-test", max_tokens=10,
                                       messages=[{"role": "user", "content": "x" * 8_000}])  # over budget, in window
        log = px.stop()
    assert caught.value.status_code == 400 and caught.value.body["error"]["type"] == "invalid_request_error"
    assert re.fullmatch(r"prompt is too long: \d+ tokens > 5000 maximum", caught.value.body["error"]["message"])
    assert [r["body"]["messages"][0]["content"] for r in recorded(record)] == ["word " * 8_000, "x" * 8_000]
    assert small.stop_reason == "tool_use"
    assert "past the window by ctxfit's count: forwarded, for the provider to judge" in log


def test_body_size_limit(tmp_path):
    with fake_provider(tmp_path / "upstream.jsonl") as provider, proxy(provider.url, "--max-body-mb", "1") as px:
        response = httpx.post(f"{px.url}/v1/messages", content=b'{"messages": "' + b"x" * 2_000_000 + b'"}')
    assert response.status_code == 413 and "limit" in response.json()["error"]["message"]


def test_big_requests_are_fitted_off_the_event_loop(stack):
    before = stack.stats()["totals"]["fitted_in_worker"]
    client = stack.anthropic()
    history = [{"role": "user", "content": "Big one."}]
    for i in range(12):
        history.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"big_{i}", "name": "read_file",
                                                          "input": {}}]})
        history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"big_{i}",
                                                     "content": "y" * 40_000}]})
    reply = client.messages.create(model="claude-test", max_tokens=10, messages=history)
    assert reply.content and stack.stats()["totals"]["fitted_in_worker"] == before + 1


# --- upstream trouble, passed back faithfully ---------------------------------------------------


@pytest.mark.parametrize("status, error", [(429, anthropic.RateLimitError), (500, anthropic.InternalServerError)])
def test_provider_errors_reach_the_client_as_sent(stack, status, error):
    with pytest.raises(error) as caught:
        stack.anthropic().messages.create(model=f"fake-error-{status}", max_tokens=10,
                                          messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == status and caught.value.body["error"]["message"] == f"fake {status}"
    assert caught.value.response.headers["retry-after"] == "0"


def test_openai_errors_reach_the_client_as_sent(stack):
    with pytest.raises(openai.RateLimitError) as caught:
        stack.openai().chat.completions.create(model="fake-error-429", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 429 and caught.value.body["message"] == "fake 429"


def test_a_client_timeout_is_the_clients_and_the_proxy_carries_on(stack):
    with pytest.raises(anthropic.APITimeoutError):
        stack.anthropic(timeout=0.5).messages.create(model="fake-slow", max_tokens=10,
                                                     messages=[{"role": "user", "content": "hi"}])
    assert stack.anthropic().messages.create(model="claude-test", max_tokens=10,
                                             messages=[{"role": "user", "content": "still there?"}]).content


def test_a_provider_that_does_not_answer_is_a_504(tmp_path):
    with fake_provider(tmp_path / "upstream.jsonl") as provider, \
            proxy(provider.url, "--upstream-timeout", "1") as px:
        client = anthropic.Anthropic(base_url=px.url, api_key=KEY, max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as caught:
            client.messages.create(model="fake-slow", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 504


def test_a_provider_that_hangs_up_mid_stream_breaks_the_clients_stream(stack):
    client = stack.anthropic()
    with pytest.raises(Exception) as caught:  # the SDK's HTTP library says how the stream broke
        with client.messages.stream(model="fake-disconnect", max_tokens=10,
                                    messages=[{"role": "user", "content": "hi"}]) as stream:
            stream.get_final_message()
    assert "incomplete" in str(caught.value) or isinstance(caught.value, anthropic.APIConnectionError)
    assert eventually(lambda: "broken off by the provider mid-reply" in stack.proxy.stderr)


def test_an_unreachable_provider_is_a_502(tmp_path):
    with proxy("http://127.0.0.1:9") as px:  # the discard port: nothing listens there
        response = httpx.post(f"{px.url}/v1/messages", json={"messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 502 and "could not be reached" in response.json()["error"]["message"]


def test_binds_loopback_by_default(stack):
    assert stack.url.startswith("http://127.0.0.1:")
