"""The library anchored on what the provider reported (DESIGN §11): `Session.record(response)`,
`fit(..., usage=)` and `count(..., usage=)`, with the SDKs' own response objects."""

from __future__ import annotations

import copy

import pytest
from anthropic.types import Message as AnthropicMessage
from anthropic.types import RawMessageStartEvent, TextBlock, ToolUseBlock
from anthropic.types import Usage as AnthropicUsage
from langchain_core.messages import AIMessage
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from openai.types.completion_usage import PromptTokensDetails
from openai.types.responses import Response, ResponseUsage
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from ctxfit_cli import validate_request
from ctxfit_cli.api import Session, fit
from ctxfit_cli.counting import count
from ctxfit_cli.core.reported import Reported, reported_prompt
from ctxfit_cli.sdk import plain_json


def anthropic_reply(prompt: int, *, cached: int = 0, step: int = 0) -> AnthropicMessage:
    """A reply as the Anthropic SDK returns it, for a request of `prompt` tokens of which
    `cached` were read from the cache (input_tokens leaves those out)."""
    return AnthropicMessage(
        id=f"msg_{step}", type="message", role="assistant", model="claude-sonnet-4-5",
        content=[TextBlock(type="text", text="Reading."),
                 ToolUseBlock(type="tool_use", id=f"toolu_{step}", name="read", input={"path": f"f{step}.py"})],
        stop_reason="tool_use", stop_sequence=None,
        usage=AnthropicUsage(input_tokens=prompt - cached, output_tokens=40, cache_read_input_tokens=cached,
                             cache_creation_input_tokens=0))


def openai_reply(prompt: int, *, cached: int = 0) -> ChatCompletion:
    return ChatCompletion(
        id="chatcmpl-1", object="chat.completion", created=1_700_000_000, model="gpt-4.1",
        choices=[Choice(index=0, finish_reason="stop", message=ChatCompletionMessage(role="assistant", content="ok"))],
        usage=CompletionUsage(prompt_tokens=prompt, completion_tokens=9, total_tokens=prompt + 9,
                              prompt_tokens_details=PromptTokensDetails(cached_tokens=cached)))


def test_every_sdks_reply_says_its_prompt_size():
    responses_usage = ResponseUsage(
        input_tokens=5_000, input_tokens_details=InputTokensDetails(cached_tokens=4_096, cache_write_tokens=0),
        output_tokens=300, output_tokens_details=OutputTokensDetails(reasoning_tokens=200), total_tokens=5_300)
    response = Response(id="resp_1", created_at=1.0, model="gpt-5", object="response", output=[],
                        parallel_tool_calls=True, tool_choice="auto", tools=[], usage=responses_usage)
    start = RawMessageStartEvent(type="message_start", message=anthropic_reply(31_000, cached=30_000))
    chunk = ChatCompletionChunk(id="c", object="chat.completion.chunk", created=1, model="gpt-4.1", choices=[],
                                usage=openai_reply(2_048, cached=1_024).usage)
    langchain = AIMessage(content="ok", usage_metadata={"input_tokens": 1_030, "output_tokens": 5, "total_tokens": 1_035,
                                                        "input_token_details": {"cache_read": 1_000}})
    seen = [reported_prompt(plain_json(r)) for r in (
        anthropic_reply(31_000, cached=30_000), start, openai_reply(2_048, cached=1_024), chunk, response,
        response.usage, langchain)]
    assert seen == [Reported(31_000, 30_000), Reported(31_000, 30_000), Reported(2_048, 1_024),
                    Reported(2_048, 1_024), Reported(5_000, 4_096), Reported(5_000, 4_096), Reported(1_030, 1_000)]
    assert reported_prompt({"usageMetadata": {"promptTokenCount": 812, "candidatesTokenCount": 4}}) == Reported(812)
    for nothing in ({"type": "message_delta", "usage": {"output_tokens": 7}}, {"usage": None}, [], "text",
                    {"usage": {"prompt_tokens": -1}}, {"usage": {"input_tokens": True}}):
        assert reported_prompt(nothing) is None


def reads(rounds: int, size: int = 3_000) -> list[dict]:
    """An Anthropic agent's history: a task, then `rounds` file reads."""
    history: list = [{"role": "user", "content": "Find the bug."}]
    for i in range(rounds):
        history.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{i}", "name": "read", "input": {"path": f"f{i}.py"}}]})
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"line {i}\n" * (size // 7)}]})
    return history


def test_record_anchors_the_next_fit_on_the_reported_size():
    """The same history is left alone when the provider counted it small and cleared when it
    counted it large, whatever the estimate says; the plan says which part was confirmed."""
    history = reads(10)
    given = copy.deepcopy(history)
    estimate = count(history[:-2])

    def next_plan(reported: int):
        session = Session(budget=12_000)
        session.fit(history[:-2])
        assert session.record(anthropic_reply(reported, cached=reported - 50)) == reported
        sent = session.fit(history)
        assert validate_request({"messages": sent}, "anthropic") == []
        return session.plan

    assert Session(budget=12_000).fit(history) == history  # the estimate alone: it fits
    small, large = next_plan(estimate // 2), next_plan(estimate + 6_000)
    assert small.stage == "none" and small.confirmed == estimate // 2
    assert large.stage == "clear" and large.confirmed == estimate + 6_000 and large.tokens_after <= 12_000
    assert small.tokens_after == small.confirmed + small.estimated
    assert history == given  # the caller's list is never changed


def test_usage_given_to_fit_is_the_same_as_record():
    history = reads(10)
    reply_to = len(history) - 2  # the request made of history[:reply_to] got history[reply_to]
    recorded = Session(budget=12_000)
    recorded.fit(history[:reply_to])
    recorded.record(anthropic_reply(20_000))
    by_record = recorded.fit(history)
    given = Session(budget=12_000)
    assert given.fit(history, usage=anthropic_reply(20_000).usage) == by_record
    assert given.plan == recorded.plan and given.plan.confirmed == 20_000
    assert fit(history, 12_000, usage={"input_tokens": 20_000}) == by_record


def test_an_edited_prefix_drops_the_anchor_and_an_edit_after_it_keeps_it():
    history = reads(6)
    session = Session(budget=100_000)
    session.fit(history)
    session.record(anthropic_reply(50_000))
    grown = history + [{"role": "assistant", "content": "Found it."}, {"role": "user", "content": "Fix it."}]
    session.fit(grown)
    assert session.plan.confirmed == 50_000
    retried = grown[:-1] + [{"role": "user", "content": "Fix it, and add a test."}]  # after the counted part
    session.fit(retried)
    assert session.plan.confirmed == 50_000
    compacted = [{"role": "user", "content": "Summary of the work so far."}] + retried[1:]
    session.fit(compacted)
    assert session.plan.confirmed == 0  # the agent changed what was counted: the estimate alone


def test_a_count_recorded_before_an_edit_is_not_anchored():
    history = reads(4)
    session = Session(budget=100_000)
    session.fit(history)
    sent = session.sent
    session.fit([{"role": "user", "content": "Start over."}])
    assert session.record(anthropic_reply(9_000), sent=sent) is None
    session.fit([{"role": "user", "content": "Start over."}, {"role": "assistant", "content": "Sure."},
                 {"role": "user", "content": "Go."}])
    assert session.plan.confirmed == 0


def test_openai_usage_anchors_an_openai_session():
    history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi " * 400}]
    session = Session(budget=100_000)
    session.fit(history)
    session.record(openai_reply(1_234, cached=1_024))
    history += [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Bye."}]
    session.fit(history)
    assert session.plan.confirmed == 1_234 and 1_234 < session.plan.tokens_after < 1_234 + 30


def test_count_with_usage_is_the_reported_size_plus_what_came_since():
    history = reads(3)
    reply = len(history) - 2
    estimated_since = count(history) - count(history[:reply])
    assert count(history, usage=anthropic_reply(7_777)) == 7_777 + estimated_since
    with pytest.raises(ValueError, match="no reply"):
        count(history[:1], usage={"input_tokens": 10})


def test_record_says_what_it_needs():
    session = Session(budget=1_000)
    with pytest.raises(ValueError, match="call fit"):
        session.record({"input_tokens": 10})
    session.fit([{"role": "user", "content": "hi"}])
    with pytest.raises(ValueError, match="reports no prompt size"):
        session.record({"type": "message_delta", "usage": {"output_tokens": 3}})
