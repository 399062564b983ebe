"""A new conversation's first request goes on at once when its whole body provably fits
(serve/opening.py), and its worker reads it while the provider answers.

The bound is checked through the worker itself (`Fitting.fit`, in process, as fresh as a new
conversation's worker state is) on generated requests — system prompt, tools and messages — for
every counter the proxy picks by model and in each dialect whose body names its model: whenever
a first request would go on at once, the worker forwards it unchanged, within the bound. Through
the proxy: the agent's exact bytes, then what the worker read (the log line, the stats, the
reply's count anchoring the next request, the passage the next request takes), a refusal's
lesson, and each case that must go to the worker first.
"""

from __future__ import annotations

import hashlib

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from servers import fake_provider, proxy, recorded
from test_proxy_bypass import MODELS, body, conversation, known, request_lines, rounds, said, send, text, value

from ctxfit_cli.serve.bypass import bounded
from ctxfit_cli.serve.channel import Setup
from ctxfit_cli.serve.limits import LimitRule
from ctxfit_cli.serve.opening import Owners
from ctxfit_cli.serve.worker import Fitting

tool = st.fixed_dictionaries({"name": text.filter(str.strip), "description": text,
                              "input_schema": st.dictionaries(text, value, max_size=4)})  # fmt: skip


def as_openai(messages: list[dict]) -> list[dict]:
    """The same conversation as Chat Completions messages (calls and their results)."""
    out: list[dict] = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            out.append({"role": message["role"], "content": content})
            continue
        calls = [b for b in content if b["type"] == "tool_use"]
        texts = "".join(b["text"] for b in content if b["type"] == "text")
        results = [b for b in content if b["type"] == "tool_result"]
        if calls:
            out.append({"role": "assistant", "content": texts or None, "tool_calls": [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": orjson.dumps(c["input"]).decode()}} for c in calls]})  # fmt: skip
        for result in results:
            said_ = result["content"] if isinstance(result["content"], str) else result["content"][0]["text"]
            out.append({"role": "tool", "tool_call_id": result["tool_use_id"], "content": said_})
    return out


def as_responses(messages: list[dict], encrypted: str) -> list[dict]:
    """The same conversation as Responses items (Codex's), a reasoning item before each call."""
    out: list[dict] = []
    for message in as_openai(messages):
        if message["role"] == "tool":
            out.append({"type": "function_call_output", "call_id": message["tool_call_id"], "output": message["content"]})
            continue
        for call in message.get("tool_calls") or []:
            out.append({"type": "reasoning", "summary": [], "encrypted_content": encrypted})
            out.append({"type": "function_call", "call_id": call["id"], "name": call["function"]["name"],
                        "arguments": call["function"]["arguments"]})  # fmt: skip
        if message.get("content"):
            kind = "input_text" if message["role"] == "user" else "output_text"
            out.append({"type": "message", "role": message["role"], "content": [{"type": kind, "text": message["content"]}]})
    return out


@pytest.mark.parametrize("dialect", ["anthropic", "openai", "responses"])
@pytest.mark.parametrize("model", MODELS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_whenever_a_first_request_goes_on_at_once_its_worker_forwards_it_unchanged(dialect, model, data):
    history = [{"role": "user", "content": data.draw(said)}] + data.draw(rounds(0))
    tools = data.draw(st.lists(tool, max_size=3))
    if dialect == "anthropic":
        request = {"model": model, "max_tokens": 1000, "system": data.draw(text), "messages": history, "tools": tools}
    elif dialect == "responses":
        encrypted = data.draw(st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", max_size=400))
        functions = [{"type": "function", "name": t["name"], "description": t["description"],
                      "parameters": t["input_schema"]} for t in tools]  # fmt: skip
        request = {"model": model, "instructions": data.draw(text), "input": as_responses(history, encrypted),
                   "tools": functions, "store": False}  # fmt: skip
    else:
        system = [{"role": "system", "content": data.draw(said)}] if data.draw(st.booleans()) else []
        functions = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                       "parameters": t["input_schema"]}} for t in tools]  # fmt: skip
        request = {"model": model, "messages": system + as_openai(history), "tools": functions}
    first = orjson.dumps({k: v for k, v in request.items() if v or k in ("messages", "input", "store")})
    opening = Owners(LimitRule(budget=10_000_000)).opening(dialect, first, None)
    if opening is None:  # (a budget no request reaches: only what it cannot bound, an image's key say)
        assert not bounded(orjson.loads(first))
        return
    fitted = Fitting(Setup(LimitRule(budget=10_000_000), 64 << 20, None)).fit(1, dialect, first, client="c")
    assert fitted.plan is not None and not fitted.skipped, fitted.skipped
    assert fitted.body is first and not fitted.plan.changed
    assert fitted.plan.tokens_after <= opening.bound, (fitted.plan.tokens_after, opening.bound)
    # and a budget just under the bound: not at once
    assert Owners(LimitRule(budget=opening.bound - 1)).opening(dialect, first, None) is None


def test_what_is_not_bounded_by_its_bytes_or_names_no_model_in_its_body_goes_to_its_worker_first():
    owners = Owners(LimitRule(budget=100_000))
    plain = body(conversation(2), "claude-opus-4-6")
    assert owners.opening("anthropic", plain, None) is not None
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    with_image = body([{"role": "user", "content": [image]}], "claude-opus-4-6")
    empty = body([{"role": "user", "content": [{"type": "text", "text": " "}]}], "claude-opus-4-6")
    for data in (with_image, empty, b"not json", b"[1]"):
        assert owners.opening("anthropic", data, None) is None, data
    assert owners.opening("gemini", plain, None) is None  # (Gemini's path names the model)
    assert Owners(LimitRule(budget=1_000)).opening("anthropic", plain, None) is None  # its bound passes the budget
    # An owner is new once: the first request seen of it.
    who = ("digest", "/v1/messages", None, "anthropic")
    assert owners.saw(who) and not owners.saw(who) and owners.saw((*who[:3], "openai"))


# --- through the proxy ----------------------------------------------------------------------------


def test_a_first_request_at_once_anchors_the_next_and_opens_its_passage(tmp_path):
    """Sent on at once; the worker's read of it, settled once the reply is complete, gives the
    log line its count, anchors the conversation on the reply's count (the provider's, a quarter
    of the bytes here) and opens the passage the next request takes."""
    record = tmp_path / "record.jsonl"
    with fake_provider(record) as provider, proxy(provider.url, "--budget", "30000") as px:
        sent = [body(conversation(n), "") for n in (1, 2, 3)]
        sent.append(body(conversation(3) + conversation(60, 400)[7:], ""))  # a step whose bound passes the budget
        replies = [send(px.url, data) for data in sent]
        stats = httpx.get(f"{px.url}/ctxfit/stats").json()
        log = px.stop()
    assert [r.headers["ctxfit-counted"] for r in replies] == ["bound", "bound", "bound", "anchored"]
    assert [r["sha256"] for r in recorded(record)] == [hashlib.sha256(data).hexdigest() for data in sent]
    lines = request_lines(log)
    assert "sent on at once" in lines[0] and "(none; estimated)" in lines[0], lines[0]
    assert "fast path, unchanged without a worker" in lines[1] and "fast path" in lines[2]
    assert "confirmed" in lines[3] and "fast path" not in lines[3], lines[3]
    assert stats["totals"]["fast_path"] == 3 and stats["totals"]["fitted_in_worker"] == 1
    (only,) = stats["conversations"].values()
    assert only["requests"] == 4 and only["fast_path"] == 3


def test_a_refusal_of_a_first_request_sent_at_once_fits_the_next_attempt_tighter(tmp_path):
    record = tmp_path / "record.jsonl"
    with fake_provider(record, 30, "--window", "2000") as provider, proxy(provider.url, "--budget", "20000") as px:
        first = body(conversation(6, 2000), "", max_tokens=10)  # ~3,300 tokens by the provider's count
        reply = send(px.url, first)
        retry = send(px.url, first)
        log = px.stop()
    assert reply.status_code == 400 and reply.headers["ctxfit-counted"] == "bound"
    lines = request_lines(log)
    assert "sent on at once" in lines[0] and "the conversation's next request is fitted to" in lines[0], lines[0]
    assert retry.headers["ctxfit-counted"] != "bound"
    assert "fast path" not in lines[1] and "since the provider refused one as too long" in lines[1], lines[1]
    assert int(lines[1].rsplit("budget ", 1)[1].replace(",", "")) < 20_000  # a share of the refused one's budget
    assert [r["sha256"] for r in recorded(record)][0] == hashlib.sha256(first).hexdigest()


def test_a_known_owners_new_conversation_goes_to_its_worker_first(tmp_path):
    """An owner the proxy has seen may have state at its worker (a refusal's lesson): its next
    conversation's first request is the worker's to count."""
    with fake_provider(None) as provider, proxy(provider.url, "--budget", "100000") as px:
        known(px.url, "alice")
        alice = send(px.url, body(conversation(1), "", system="Another task."))
        bob = send(px.url, body(conversation(1), "", system="Another task."), key="bob")
        px.stop()
    assert alice.headers["ctxfit-counted"] == "estimated" and bob.headers["ctxfit-counted"] == "bound"


#: A character of each class (`counters.char_classes.CLASSES`), at its fewest UTF-8 bytes where it can be.
EACH_CLASS = "Aaj b1 \n(.\u00a2\u00e0\u0101\u0391\u0416\u0450\u05d0\u0627\u0905\u0e01\u4e2d\u3001\u3042\uac00\u2014\u20ac\U0001f600\u0531"


@pytest.mark.parametrize("model", MODELS)
def test_the_dearest_text_of_every_class_is_within_the_bound(model):
    """Per character class, the text that costs the most a byte: that character alone, and each
    between characters of another kind (so that every one starts a run: words, numbers,
    punctuation, script words); as a user's message and as a tool's result."""
    owners = Owners(LimitRule(budget=10_000_000))
    for char in EACH_CLASS:
        for said_ in (char * 2000, (char + " ") * 1000, (char + "a") * 1000, (char + "1") * 1000, (char + ".") * 1000):
            for messages in ([{"role": "user", "content": said_}], conversation(1)[:2] + [
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_0000", "content": said_}]}]):
                first = body(messages, model)
                opening = owners.opening("anthropic", first, None)
                fitted = Fitting(Setup(LimitRule(budget=10_000_000), 64 << 20, None)).fit(1, "anthropic", first)
                assert opening is not None and fitted.plan is not None
                assert fitted.plan.tokens_after <= opening.bound, (model, char, fitted.plan.tokens_after, opening.bound)
