"""The model decides the window in the proxy: each request is fitted to its model's window less
the room it asks for its reply, `--budget` takes tokens or a share of the window, `--window`
overrides the table; the start line and each request's line say which."""

from __future__ import annotations

import anthropic
import pytest

from ctxfit_cli import count, validate_request
from conftest import ascii_text, run_cli
from servers import fake_provider, proxy, recorded
from test_proxy_responses import eventually

KEY = "sk-test-windows-4242"


def big_conversation(rounds: int, tokens: int) -> list[dict]:
    messages = [{"role": "user", "content": "Read every file of the project."}]
    for i in range(rounds):
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{i:04d}", "name": "read_file", "input": {"path": f"f{i}.py"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i:04d}", "content": ascii_text(tokens)}]})
    return messages


def test_a_375k_token_sonnet_request_is_fitted_under_its_200k_window_by_default(tmp_path):
    record = tmp_path / "upstream.jsonl"
    messages = big_conversation(100, 3_750)
    assert count(messages) > 375_000
    with fake_provider(record, steps=1000) as provider, proxy(provider.url) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)
        client.messages.create(model="claude-sonnet-4-5", max_tokens=16_000, messages=messages,
                               tools=[{"name": "read_file", "input_schema": {"type": "object"}}])
        assert eventually(lambda: "POST /v1/messages 200" in server.stderr)
        log = server.stderr
    [sent] = recorded(record)
    body = sent["body"]
    assert validate_request(body, "anthropic") == []
    assert count(body["messages"], tools=body["tools"], dialect="anthropic") <= 200_000 - 16_000
    assert "each request's window from its model" in log.splitlines()[0]
    line = next(l for l in log.splitlines() if "POST /v1/messages" in l)
    assert "claude-sonnet-4-5, window 200,000" in line and "less 16,000 for the reply" in line


def test_a_request_that_opts_into_the_1m_context_is_fitted_to_it(tmp_path):
    """Claude Code's `sonnet[1m]` (and the SDK's `betas=[...]`) opts into Anthropic's 1M-token
    context with the `anthropic-beta` header: that request is fitted to 1,000,000 tokens, the
    same conversation without it to the model's 200,000; `--window` still overrides both."""
    record = tmp_path / "upstream.jsonl"
    # (100,000 seed tokens of "x": ~700,000 by the claude profile the proxy counts a Claude model with)
    messages = big_conversation(100, 1_000)
    tools = [{"name": "read_file", "input_schema": {"type": "object"}}]
    with fake_provider(record, steps=1000) as provider, proxy(provider.url) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)
        client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=16_000, messages=messages, tools=tools,
                                    betas=["context-1m-2025-08-07"])
        client.messages.create(model="claude-sonnet-4-5", max_tokens=16_000, messages=messages, tools=tools)
        assert eventually(lambda: server.stderr.count("POST /v1/messages 200") == 2)
        log = server.stderr
    opted, plain = (r["body"] for r in recorded(record))
    assert opted["messages"] == messages  # 700k tokens: within 1,000,000 less the reply's room
    assert count(plain["messages"], tools=plain["tools"], dialect="anthropic") <= 200_000 - 16_000
    first, second = (l for l in log.splitlines() if "POST /v1/messages" in l)
    assert "window 1,000,000 (anthropic-beta: context-1m) less 16,000 for the reply" in first
    assert "window 200,000 (Claude 4.6 and older window" in second
    with fake_provider(tmp_path / "given.jsonl", steps=1000) as provider, \
            proxy(provider.url, "--window", "300000") as server:
        client = anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)
        client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=16_000, messages=messages, tools=tools,
                                    betas=["context-1m-2025-08-07"])
        assert eventually(lambda: "POST /v1/messages 200" in server.stderr)
        assert "window 300,000 (--window)" in server.stderr.splitlines()[-1]


def test_budget_as_a_share_of_the_window_given(tmp_path):
    record = tmp_path / "upstream.jsonl"
    messages = big_conversation(30, 1_000)
    with fake_provider(record, steps=1000) as provider, \
            proxy(provider.url, "--budget", "50%", "--window", "40000") as server:
        client = anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)
        client.messages.create(model="claude-sonnet-4-5", max_tokens=1_000, messages=messages)
        assert eventually(lambda: "POST /v1/messages 200" in server.stderr)
        log = server.stderr
    body = recorded(record)[0]["body"]
    assert count(body["messages"], dialect="anthropic") <= 20_000 < count(messages)
    assert "window 40,000 (--window), budget 50% of the window" in log.splitlines()[0]
    assert "budget 20,000" in next(l for l in log.splitlines() if "POST /v1/messages" in l)


@pytest.mark.parametrize("budget", ["lots", "0", "120%"])
def test_a_budget_that_is_neither_tokens_nor_a_share_is_a_usage_error(budget):
    result = run_cli("proxy", "--upstream", "http://127.0.0.1:9", "--budget", budget)
    assert result.returncode == 2
    assert b"--budget takes tokens" in result.stderr
