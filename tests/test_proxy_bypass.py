"""The proxy's fast path (serve/bypass.py): a request that provably needs no fitting goes on as
the agent's own bytes without a worker; one that might need fitting never does.

The bound is checked through the worker itself (`Fitting.fit`, in process) on generated
conversations and appended messages, for every counter the proxy picks by model: whenever the
fast path would take a request, the worker forwards it unchanged, within the bound. The
proxy's side is checked end to end against the fake provider (exact bytes, one log line each,
stats), and each case that must go to the worker: a step past the budget, a changed fixed part,
another client's key, a refusal, a conversation whose results were cleared.
"""

from __future__ import annotations

import hashlib
import re
import lzma
from pathlib import Path

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from servers import fake_provider, proxy, recorded

from ctxfit_cli.core.anchor import RATIO_BOUNDS
from ctxfit_cli.core.choice import counter_for_model
from ctxfit_cli.core.reported import Reported
from ctxfit_cli.serve.bypass import (
    FLOAT_CHARS,
    Bypass,
    Mark,
    Passage,
    appended_elements,
    bounded,
    opened,
    per_byte,
    same_rest,
)
from ctxfit_cli.serve.channel import Setup
from ctxfit_cli.serve.limits import LimitRule, Limits
from ctxfit_cli.serve.worker import Fitting

#: A model of each counter the proxy picks (`counter_for_model`): the seed rule (none named),
#: the claude, o200k, safe and qwen profiles.
MODELS = ("", "claude-opus-4-6", "gpt-4o", "deepseek-chat", "qwen3-coder")

text = st.text(st.characters(codec="utf-8"), max_size=300)
said = text.filter(str.strip)  # (an empty text block: refused by the provider, and by the worker)
scalar = st.one_of(text, st.integers(-(2**40), 2**40), st.booleans(), st.none())
value = st.recursive(scalar, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
                     max_leaves=12)  # fmt: skip


@st.composite
def rounds(draw, first: int) -> list[dict]:
    """Tool rounds (a call, its result), a text reply and the user's next words."""
    out = []
    for i in range(draw(st.integers(1, 3))):
        call = f"toolu_{first + i:04d}"
        blocks = [{"type": "text", "text": draw(said)}] if draw(st.booleans()) else []
        blocks.append({"type": "tool_use", "id": call, "name": draw(st.sampled_from(["read", "Bash", "ß"])),
                       "input": draw(st.dictionaries(text, value, max_size=4))})  # fmt: skip
        out.append({"role": "assistant", "content": blocks})
        result = draw(text) if draw(st.booleans()) else [{"type": "text", "text": draw(said)}]
        out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": result}]})
    if draw(st.booleans()):
        out += [{"role": "assistant", "content": draw(said)}, {"role": "user", "content": draw(said)}]
    return out


def body(messages: list, model: str, **fixed) -> bytes:
    return orjson.dumps({"model": model, "max_tokens": 1000, "system": "You help.", "messages": messages, **fixed})


@pytest.mark.parametrize("model", MODELS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_whenever_the_fast_path_takes_a_request_the_worker_forwards_it_unchanged(model, data):
    fitting = Fitting(Setup(LimitRule(budget=10_000_000), 64 << 20, None))
    history = [{"role": "user", "content": data.draw(said)}]
    ticket, steps = 0, data.draw(st.integers(1, 3))
    for _ in range(steps):  # a few steps, the earlier ones anchored as a provider's replies would
        history += data.draw(rounds(ticket * 10))
        ticket += 1
        fitted = fitting.fit(ticket, "anthropic", body(history, model), client="c")
        assert fitted.key is not None and fitted.plan is not None
        if ticket < steps and data.draw(st.booleans()):
            share = data.draw(st.floats(0.5, 3.0))
            fitting.anchor(fitted.key, ticket, Reported(max(1, round(share * fitted.plan.estimate))))
    assert fitted.mark is not None  # (nothing cleared at this budget)
    mark = Mark(*fitted.mark)
    assert mark.per_byte >= per_byte(counter_for_model(model)[0])
    last = body(history, model)
    passage = opened(fitted.mark, ("c",), last, Limits(mark.budget), fitted.key, 0, ticket)
    if data.draw(st.booleans()):  # its reply's count, as the proxy passes it on (to both)
        share = data.draw(st.floats(0.5, 3.0))
        reported = max(1, round(share * fitted.plan.estimate))
        fitting.anchor(fitted.key, ticket, Reported(reported))
        passage = Bypass(1 << 30).anchored(passage, reported)
    added = data.draw(rounds(ticket * 10))
    grown = body(history + added, model)
    bypass = Bypass(1 << 30)
    bypass.passed(1, passage)
    taken = bypass.judge(1, ("c",), grown)
    if taken is None:  # (a budget no step reaches: only what it cannot bound, an image's key say)
        assert not bounded(added)
        return
    after = fitting.fit(ticket + 1, "anthropic", grown, client="c")
    assert after.plan is not None and not after.plan.changed
    assert after.plan.tokens_after <= taken.bound(), (after.plan.tokens_after, taken.bound())
    # and so a budget just under the bound's gives a request the fast path never takes
    tight = passage._replace(limits=Limits(taken.bound() - 1))
    bypass.passed(1, tight)
    assert bypass.judge(1, ("c",), grown) is None


def test_the_growth_weight_covers_any_one_reply():
    """`per_byte` times the weight: the weight is the most the learned ratio's high end can be
    after one reply, whatever it reports (`GrowthRatio.next_high`), never under 1."""
    from ctxfit_cli.core.anchor import GrowthRatio

    for value in (0.8, 1.0, 1.3, 1.5):
        for miss in (0.0, 0.05, 0.3, 0.63):
            ratio = GrowthRatio()
            ratio.value, ratio.miss = value, miss
            bound = ratio.next_high()
            for sample in [RATIO_BOUNDS[0] + i * (RATIO_BOUNDS[1] - RATIO_BOUNDS[0]) / 20 for i in range(21)]:
                after = GrowthRatio()
                after.value, after.miss = value, miss
                after.learn(reported=round(sample * 100_000), estimated=100_000)
                assert after.high <= bound + 1e-12


def test_what_is_appended_must_be_whole_elements_whose_bytes_bound_their_count():
    assert appended_elements(memoryview(b'{"role":"user","content":"hi"}')) == ([{"role": "user", "content": "hi"}], 0)
    floats = b'{"role":"assistant","content":[{"type":"tool_use","input":{"n":1e5,"m":[0.5,2.0]}}]}'
    assert appended_elements(memoryview(floats))[1] == 3 * FLOAT_CHARS  # (each may be counted longer than it came)
    for data in (
        b'{"role":"user","content":"hi"}],"system":"other","x":[1',  # leaves the array: the fixed part changed
        b'{"role":"user","content":[{"type":"image","source":{}}]}',
        b'{"role":"user","content":[{"type":"\\u0069mage","source":{}}]}',  # an escaped name is read as JSON reads it
        b'{"role":"user","parts":[{"inlineData":{"data":"AAAA"}}]}',
        b'{"role":"user","content":[{"type":"tool_result","content":[{"type":"document"}]}]}',
        b'"a string"',
    ):
        assert appended_elements(memoryview(data)) is None, data


@pytest.mark.parametrize("model", MODELS)
def test_floats_written_short_are_within_the_bound_the_worker_counts_them_by(model):
    """`1e5` is 3 bytes and counted as `100000.0`: the bound allows each float its longest repr."""
    fitting = Fitting(Setup(LimitRule(budget=10_000_000), 64 << 20, None))
    history = [{"role": "user", "content": "Read it."}]
    fitted = fitting.fit(1, "anthropic", body(history, model), client="c")
    passage = opened(fitted.mark, ("c",), body(history, model), Limits(10_000_000), fitted.key, 0, 1)
    added = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"n": [100000.0] * 3000}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]  # fmt: skip
    grown = body(history + added, model).replace(b"100000.0", b"1e5")  # (written short, sent as it is)
    bypass = Bypass(1 << 30)
    bypass.passed(1, passage)
    taken = bypass.judge(1, ("c",), grown)
    assert taken is not None
    after = fitting.fit(2, "anthropic", grown, client="c")
    assert after.plan is not None and after.plan.tokens_after <= taken.bound()
    assert taken.grown >= len(grown) - len(passage.body) + 3000 * FLOAT_CHARS


def test_the_rest_of_the_body_may_have_its_keys_in_another_order_but_nothing_else():
    """Codex writes its `client_metadata` (a map) in another order at every request."""
    old = b'],"store":false,"client_metadata":{"turn_id":"t","session_id":"s","n":1}}'
    assert same_rest(memoryview(old), memoryview(old))
    assert same_rest(memoryview(old), memoryview(b'],"store":false,"client_metadata":{"n":1,"session_id":"s","turn_id":"t"}}'))
    for other in (
        b'],"store":false,"client_metadata":{"n":1,"session_id":"s","turn_id":"u"}}',  # another value
        b'],"store":false,"client_metadata":{"n":true,"session_id":"s","turn_id":"t"}}',  # 1 is not true
        b'],"store":false,"client_metadata":{"n":1.0,"session_id":"s","turn_id":"t"}}',  # nor 1.0 (and longer)
        b'],"client_metadata":{"n":1,"session_id":"s","turn_id":"t"},"store":false} ',  # another length
        b'],"store":false,"client_metadata":{"turn_id":"t","session_id":"s","n":1}}}',  # not the rest of one
    ):
        assert not same_rest(memoryview(old), memoryview(other)), other


def test_another_client_or_path_never_takes_a_passage_even_on_the_same_route():
    old = body([{"role": "user", "content": "a"}], "")
    end = old.rindex(b"]")
    passage = Passage(("alice", "/v1/messages", None, "anthropic"), old, end, (old.rindex(b"{", 0, end),), 10, 0, 10,
                      Limits(100_000), 4.0, "k", 0, 1)  # fmt: skip
    bypass = Bypass(1 << 30)
    bypass.passed(7, passage)
    grown = body([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], "")
    assert bypass.judge(7, passage.who, grown) is not None
    assert bypass.judge(7, ("bob", "/v1/messages", None, "anthropic"), grown) is None
    assert bypass.judge(7, ("alice", "/v1/chat/completions", None, "anthropic"), grown) is None
    assert bypass.judge(7, ("alice", "/v1/messages", 1_000_000, "anthropic"), grown) is None
    assert bypass.judge(7, passage.who, old) is None  # nothing appended
    assert bypass.judge(7, passage.who, grown.replace(b'"system":"You help."', b'"system":"You help!"')) is None
    assert bypass.judge(7, passage.who, grown.replace(b'"max_tokens":1000', b'"max_tokens":1001')) is None


# --- through the proxy ----------------------------------------------------------------------------


def conversation(steps: int, size: int = 200, start: int = 0) -> list[dict]:
    messages = [{"role": "user", "content": "Read the files."}]
    for i in range(steps):
        call = f"toolu_{i:04d}"
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": call, "name": "read_file", "input": {"path": f"f{i}.py"}}],
            }
        )
        chars = size if i >= start else 200
        result = ("lorem ipsum dolor, " * (chars // 19 + 1))[:chars]
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": result}]})
    return messages  # fmt: skip


def send(url: str, data: bytes, key: str = "alice") -> httpx.Response:
    headers = {"x-api-key": key, "content-type": "application/json"}
    return httpx.post(f"{url}/v1/messages", content=data, headers=headers, timeout=60)


def known(url: str, *keys: str) -> None:
    """Each key's owner made known to the proxy (a request its worker reads first: an image is
    not bounded by its bytes), so that its conversations' first requests go to their worker
    too, not on at once (`opening.py`, tests/test_proxy_opening.py)."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    for key in keys:
        reply = send(url, body([{"role": "user", "content": [image]}], ""), key=key)
        assert reply.headers["ctxfit-counted"] != "bound"


def request_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if line.startswith("POST /v1/messages")]


def test_a_fast_pathed_request_is_the_agents_exact_bytes_with_one_log_line_and_its_stats(tmp_path):
    record = tmp_path / "record.jsonl"
    with fake_provider(record) as provider, proxy(provider.url, "--budget", "100000") as px:
        sent = [body(conversation(n), "") for n in range(1, 7)]
        counted = [send(px.url, data).headers["ctxfit-counted"] for data in sent]
        stats = httpx.get(f"{px.url}/ctxfit/stats").json()
        log = px.stop()
    # (the first too: a new conversation whose whole body provably fits goes on at once)
    assert counted == ["bound"] * 6, counted
    assert [r["sha256"] for r in recorded(record)] == [hashlib.sha256(data).hexdigest() for data in sent]
    lines = request_lines(log)
    assert len(lines) == 6 and all("fast path" in line for line in lines)
    assert "sent on at once" in lines[0] and re.search(r"\d -> [\d,]+ tokens", lines[0])  # (its worker's count too)
    assert stats["totals"]["fast_path"] == 6 and stats["totals"]["fitted_in_worker"] == 0
    (only,) = stats["conversations"].values()
    assert only["requests"] == 6 and only["fast_path"] == 6


def test_a_step_past_the_budget_and_a_cleared_conversation_go_to_the_worker(tmp_path):
    record = tmp_path / "record.jsonl"
    with fake_provider(record) as provider, proxy(provider.url, "--budget", "20000") as px:
        known(px.url, "alice")
        sent = [
            body(conversation(1), ""),
            body(conversation(2, 40_000, start=1), ""),  # 10,000 tokens: within, but not provably
            body(conversation(3, 48_000, start=1), ""),  # past the budget: results cleared
        ]
        sent.append(body(conversation(3, 48_000, start=1) + conversation(4)[-2:], ""))  # a short step more
        counted = [send(px.url, data).headers["ctxfit-counted"] for data in sent]
        log = px.stop()
    assert "bound" not in counted, counted
    bodies = recorded(record)
    assert bodies[2]["sha256"] == hashlib.sha256(sent[1]).hexdigest()
    assert bodies[3]["sha256"] != hashlib.sha256(sent[2]).hexdigest()  # cleared
    assert bodies[4]["sha256"] != hashlib.sha256(sent[3]).hexdigest()  # still cleared: rewritten by the worker
    assert not any("fast path" in line for line in request_lines(log))


def test_a_changed_fixed_part_or_another_clients_key_goes_to_the_worker(tmp_path):
    with fake_provider(None) as provider, proxy(provider.url, "--budget", "100000") as px:
        known(px.url, "alice", "bob")
        assert send(px.url, body(conversation(1), "")).headers["ctxfit-counted"] != "bound"
        # the same history grown, by another key: its own conversation, its worker
        assert send(px.url, body(conversation(2), ""), key="bob").headers["ctxfit-counted"] != "bound"
        # another system prompt, and another max_tokens (after the array): the worker
        assert send(px.url, body(conversation(2), "", system="Other.")).headers["ctxfit-counted"] != "bound"
        assert send(px.url, body(conversation(3), "", system="Other.")).headers["ctxfit-counted"] == "bound"
        changed = body(conversation(4), "", system="Other.").replace(b'"max_tokens":1000', b'"max_tokens":900')
        assert send(px.url, changed).headers["ctxfit-counted"] != "bound"
        assert send(px.url, body(conversation(3), ""), key="bob").headers["ctxfit-counted"] == "bound"


def test_a_refusal_as_too_long_sends_the_next_attempt_to_the_worker_fitted_tighter(tmp_path):
    record = tmp_path / "record.jsonl"
    with fake_provider(record, 30, "--window", "2500") as provider, proxy(provider.url, "--budget", "9000") as px:
        first = body(conversation(5, 2000), "", max_tokens=10)  # 2,315 tokens by the provider's count
        assert send(px.url, first).status_code == 200
        refused = body(conversation(6, 2000), "", max_tokens=10)  # 2,774: past the provider's 2,500
        reply = send(px.url, refused)
        assert reply.status_code == 400 and reply.headers["ctxfit-counted"] == "bound"
        retry = send(px.url, refused)
        log = px.stop()
    assert retry.headers["ctxfit-counted"] != "bound"
    lines = request_lines(log)
    assert "fast path" in lines[1] and "the conversation's next request is fitted to" in lines[1], lines[1]
    assert "fast path" not in lines[2] and "since the provider refused one as too long" in lines[2], lines[2]
    budget = int(lines[2].rsplit("budget ", 1)[1].replace(",", ""))
    assert budget < 9000  # fitted to a share of the budget the refused request had
    assert [r["sha256"] for r in recorded(record)][1] == hashlib.sha256(refused).hexdigest()


def test_claude_codes_moved_cache_marker_keeps_the_fast_path_and_a_real_change_does_not():
    """Claude Code moves its `cache_control` marker to the newest message at every step: the
    previous last message changes in nothing the provider counts (the captured requests of
    tests/captured, real Claude Code 2.1 bodies). Each next request takes the fast path, and
    the worker, fitting it all the same, forwards it unchanged within the bound."""
    bodies = lzma.decompress((Path(__file__).parent / "captured" / "claude-1-5.jsonl.xz").read_bytes()).splitlines()
    fitting = Fitting(Setup(LimitRule(budget=900_000), 64 << 20, None))  # (Opus 5.5: a 1M window)
    fitted = fitting.fit(1, "anthropic", bodies[0], client="c")
    assert fitted.mark is not None and fitted.key is not None
    bypass = Bypass(1 << 30)
    bypass.passed(1, opened(fitted.mark, ("c",), bodies[0], Limits(Mark(*fitted.mark).budget), fitted.key, 0, 1))
    for ticket, body in enumerate(bodies[1:], 2):
        assert body[: bypass._passages[1].end] != bypass._passages[1].body[: bypass._passages[1].end]  # (it moved)
        taken = bypass.judge(1, ("c",), body)
        assert taken is not None, ticket
        after = fitting.fit(ticket, "anthropic", body, client="c")
        assert after.plan is not None and not after.plan.changed and after.plan.tokens_after <= taken.bound()
        messages = orjson.loads(body)["messages"]
        assert [body[at:to] for at, to in zip(taken.starts, (*(at - 1 for at in taken.starts[1:]), taken.end))] == [
            orjson.dumps(m) for m in messages[-len(taken.starts) :]]  # fmt: skip
        bypass.passed(1, taken)
    # the last message changed in what the provider counts: the worker's
    request = orjson.loads(bodies[-1])
    block = request["messages"][-1]["content"][-1]
    block["text" if "text" in block else "content"] = "x"
    request["messages"] += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "go on"}]
    assert bypass.judge(1, ("c",), orjson.dumps(request)) is None


def test_markers_moved_on_the_last_two_messages_keep_the_fast_path():
    """OpenCode (the AI SDK) marks the last two messages: both change at every step in what the
    provider does not count. A change the provider counts in either goes to the worker."""
    marker = {"type": "ephemeral"}

    def step(n: int, moved_text: str = "") -> bytes:
        messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "Read the files."}]}]
        for i in range(n):
            messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"p": f"f{i}"}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": f"line {i} " * 50}]}]  # fmt: skip
        for message in messages[-2:]:
            message["content"][-1]["cache_control"] = marker
        if moved_text:
            messages[-3]["content"][-1]["content"] = moved_text
        return body(messages, "claude-opus-4-6")

    fitting = Fitting(Setup(LimitRule(budget=150_000), 64 << 20, None))
    first = step(2)
    fitted = fitting.fit(1, "anthropic", first, client="c")
    bypass = Bypass(1 << 30)
    bypass.passed(1, opened(fitted.mark, ("c",), first, Limits(Mark(*fitted.mark).budget), fitted.key, 0, 1))
    for n in range(3, 8):
        grown = step(n)
        taken = bypass.judge(1, ("c",), grown)
        assert taken is not None, n
        after = fitting.fit(n, "anthropic", grown, client="c")
        assert after.plan is not None and not after.plan.changed and after.plan.tokens_after <= taken.bound()
        bypass.passed(1, taken)
    assert bypass.judge(1, ("c",), step(8, moved_text="changed")) is None  # (counted: its worker's)
    assert bypass.judge(1, ("c",), step(8)) is not None


def openai_body(steps: int) -> bytes:
    messages: list[dict] = [{"role": "system", "content": "You help."}, {"role": "user", "content": "Read."}]
    for i in range(steps):
        call = {"id": f"call_{i}", "type": "function", "function": {"name": "read_file", "arguments": '{"p":"f"}'}}
        messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": f"call_{i}", "content": f"line {i} " * 40}]  # fmt: skip
    return orjson.dumps({"model": "gpt-4o", "messages": messages, "max_tokens": 500})


def gemini_body(steps: int) -> bytes:
    contents: list[dict] = [{"role": "user", "parts": [{"text": "Read."}]}]
    for i in range(steps):
        response = {"name": "read_file", "response": {"content": f"line {i} " * 40}}
        contents += [{"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"p": f"f{i}"}}}]},
                     {"role": "user", "parts": [{"functionResponse": response}]}]  # fmt: skip
    return orjson.dumps({"contents": contents, "systemInstruction": {"parts": [{"text": "You help."}]}})


@pytest.mark.parametrize("dialect", ["openai", "gemini"])
def test_the_fast_path_in_the_other_dialects_and_never_for_another_key(dialect):
    if dialect == "openai":
        path, make = "/v1/chat/completions", openai_body
    else:
        path, make = "/v1beta/models/gemini-2.5-pro:generateContent", gemini_body

    def post(url: str, data: bytes, key: str) -> str:
        headers = {"content-type": "application/json", "authorization": f"Bearer {key}"}
        query = f"?key={key}" if dialect == "gemini" else ""
        reply = httpx.post(f"{url}{path}{query}", content=data, headers=headers, timeout=60)
        assert reply.status_code == 200, reply.text
        return reply.headers["ctxfit-counted"]

    with fake_provider(None) as provider, proxy(provider.url, "--budget", "100000") as px:
        counted = [post(px.url, make(n), "alice") for n in (1, 2, 3)]
        # (a new conversation's first request goes on at once where its body names its model, `opening.py`)
        first = "bound" if dialect == "openai" else "estimated"
        assert counted == [first, "bound", "bound"], counted
        assert post(px.url, make(4), "bob") == first  # another key: its own new conversation, never alice's passage
        assert post(px.url, make(4), "alice") == "bound"
        log = px.stop()
    assert "AIza" not in log and "alice" not in log
    lines = [line for line in log.splitlines() if line.startswith("POST")]
    bob = lines[3]
    assert ("sent on at once" in bob) if dialect == "openai" else ("fast path" not in bob), bob


def test_a_worker_that_did_not_see_some_steps_fits_the_next_as_one_that_saw_them_all():
    """The worker's warm state after requests that took the fast path: it reads the steps it did
    not see as one larger growth, and writes the same body as a worker that fitted every step
    (no reply anchors either: a plan depends only on the history), results cleared as it grows."""
    bodies = [body(conversation(n, 3000), "claude-opus-4-6") for n in range(1, 41)]
    every, some = (Fitting(Setup(LimitRule(budget=20_000), 64 << 20, None)) for _ in range(2))
    cleared = 0
    for ticket, data in enumerate(bodies, 1):
        all_steps = every.fit(ticket, "anthropic", data, client="c")
        if ticket % 7 == 0 or ticket == len(bodies):  # the steps between went by the fast path
            skipped = some.fit(ticket, "anthropic", data, client="c")
            assert skipped.body == all_steps.body and skipped.plan == all_steps.plan, ticket
            cleared += all_steps.plan is not None and all_steps.plan.changed
    assert cleared >= 2  # (the budget was reached: what the two wrote back was compared)
