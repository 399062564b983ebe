"""`ctxfit proxy` on the OpenAI Responses API (what Codex CLI speaks): a real proxy process in
front of the fake provider, driven by the real `openai` SDK's `client.responses.create`,
streaming and not."""

from __future__ import annotations

import json

import openai
import pytest

from ctxfit_cli import CLEARED_RESULT, count, validate_request
from servers import ROOT, eventually, fake_provider, proxy, Recorded

BUDGET = 20_000
KEY = "sk-test-responses-4242"
INSTRUCTIONS = "You are a coding agent. Be brief."
TOOLS = [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}]


class Stack(Recorded):
    def __init__(self, tmp) -> None:
        self.record = tmp / "upstream.jsonl"
        self.provider = fake_provider(self.record, steps=24)
        self.proxy = proxy(self.provider.url, "--budget", str(BUDGET))
        self.client = openai.OpenAI(base_url=f"{self.proxy.url}/v1", api_key=KEY, max_retries=0)


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("responses"))
    yield stack
    log = stack.proxy.stop()
    stack.provider.stop()
    assert KEY not in log
    assert "Traceback" not in log, log[-3000:]



def test_codex_like_loop_is_fitted_valid_with_reasoning_intact(stack):
    mark = stack.mark()
    items: list = [{"role": "user", "content": "Read the files (responses loop)."}]
    produced: dict[str, dict] = {}  # the provider's reasoning items, by id
    for step in range(24):
        options = dict(model="gpt-5-codex", instructions=INSTRUCTIONS, tools=TOOLS, input=items, store=False)
        if step % 2:
            with stack.client.responses.with_streaming_response.create(stream=True, **options) as raw:
                body = b"".join(raw.iter_bytes())
                assert body == stack.reply_of(raw.headers)  # the stream, byte for byte
            completed = [json.loads(line[6:]) for line in body.decode().splitlines()
                         if line.startswith("data: ") and '"response.completed"' in line]
            output = completed[0]["response"]["output"]  # as a loop that reads the stream keeps them
        else:
            raw = stack.client.responses.with_raw_response.create(**options)
            assert raw.http_response.content == stack.reply_of(raw.headers)
            output = raw.parse().output  # the SDK's objects, passed back as they are
        items += output
        values = [o if isinstance(o, dict) else o.model_dump(exclude_none=True) for o in output]
        produced.update({v["id"]: v for v in values if v["type"] == "reasoning"})
        call = next(v for v in values if v["type"] == "function_call")
        text = (ROOT / json.loads(call["arguments"])["path"]).read_text(encoding="utf-8")
        items.append({"type": "function_call_output", "call_id": call["call_id"], "output": text})
    records = stack.since(mark)
    assert len(records) == 24
    for record in records:
        body = record["body"]
        assert validate_request(body, "responses") == []
        assert body["instructions"] == INSTRUCTIONS and body["tools"] == TOOLS
        tokens = count(body["input"], system=INSTRUCTIONS, tools=TOOLS, dialect="responses")
        assert tokens <= BUDGET or len(body["input"]) <= 4  # the smallest request: task, newest reply and output
        for i, item in enumerate(body["input"]):
            if item.get("type") == "reasoning":  # passed back whole, encrypted content included
                assert item == produced[item["id"]]
                assert body["input"][i + 1]["type"] == "function_call"
        assert record["headers"]["authorization"].endswith(KEY)
    last = records[-1]["body"]["input"]
    assert any(item.get("output") == CLEARED_RESULT for item in last)
    assert eventually(lambda: stack.proxy.stderr.count("POST /v1/responses 200") >= 24)
    assert "results cleared" in stack.proxy.stderr


def test_a_request_with_its_history_on_the_server_is_forwarded_and_says_why(stack):
    mark = stack.mark()
    big = [{"role": "user", "content": "x" * 200_000}]
    stack.client.responses.create(model="gpt-5-codex", input=big, previous_response_id="resp_0001")
    [record] = stack.since(mark)
    assert record["body"]["input"] == big and record["body"]["previous_response_id"] == "resp_0001"
    assert eventually(lambda: "previous_response_id" in stack.proxy.stderr)
    line = next(l for l in stack.proxy.stderr.splitlines() if "previous_response_id" in l)
    assert "forwarded unchanged" in line and "holds the history" in line

