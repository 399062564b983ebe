"""Recorded usage: reading it from logs, the unlogged fixed part, growth between calls, and
the model -> counter/window table.

Real excerpts are read from ../shared/realworld at test time (never copied into the repo)."""

from __future__ import annotations

import io
import json
import random
from itertools import islice
from pathlib import Path

import orjson
import pytest

from ctxfit_cli.core.model import Message, Part, PartKind, RecordedCall, Role, Transcript
from ctxfit_cli.core.usage import (
    MIN_GROWTH, call_estimates, growth_estimate, growth_samples, infer_fixed, recorded_summary,
    usable,
)
from ctxfit_cli.counters.models import family, profile_for, window_for
from ctxfit_cli.counters.profiles import ProfileCounter, load_profile
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.usage import claude_code_call
from conftest import REALWORLD, needs_realworld

CODEX_LOG = REALWORLD / "codex" / "localpush_rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"
CLAUDE_LOG = REALWORLD / "claude-code" / "ccviewer_5c0375b4.jsonl"


def excerpt(path: Path, lines: int) -> bytes:
    """The first `lines` lines of a real log, read now (the log itself stays outside the repo)."""
    with open(path, "rb") as f:
        return b"".join(islice(f, lines))


def transcript_of(data: bytes) -> list[Transcript]:
    return [t.materialize() for t in read_transcripts("log.jsonl", io.BytesIO(data))]


# --- Claude Code records ------------------------------------------------------------------------


def test_claude_code_call_sums_the_three_prompt_fields():
    record = {"message": {"id": "msg_1", "model": "claude-sonnet-4-20250514", "usage": {
        "input_tokens": 4, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 15000,
        "output_tokens": 12}}}
    assert claude_code_call(record, 3) == RecordedCall(3, "msg_1", "claude-sonnet-4-20250514", 15304, 12)


@pytest.mark.parametrize("usage, prompt", [
    ({"input_tokens": 7}, 7),                                  # cache fields missing: 0
    ({"input_tokens": 0, "cache_read_input_tokens": 0}, 0),    # zeros: a zero prompt
    ({"output_tokens": 5}, None),                              # no prompt field at all: unknown
    ({"input_tokens": "12", "cache_read_input_tokens": None}, None),  # not counts: unknown
    (None, None),                                              # no usage object
])
def test_claude_code_call_missing_fields(usage, prompt):
    body = {"id": "m", "model": "claude-opus-4-6"}
    if usage is not None:
        body["usage"] = usage
    assert claude_code_call({"message": body}, 0).prompt_tokens == prompt


def test_synthetic_and_zero_calls_are_not_usable():
    calls = [RecordedCall(1, "a", "<synthetic>", 0, 0), RecordedCall(3, "b", "claude-opus-4-6", 0),
             RecordedCall(5, "c", "claude-opus-4-6", None), RecordedCall(7, "d", "claude-opus-4-6", 900)]
    assert [c.id for c in usable(calls)] == ["d"]
    assert recorded_summary(calls) == {"last_prompt": 900, "peak_prompt": 900, "calls": 1,
                                       "model": "claude-opus-4-6", "models": ["claude-opus-4-6"],
                                       "window": None}
    assert recorded_summary(calls[:3]) is None


@needs_realworld
def test_claude_code_call_on_real_records_sidechains_included():
    """Every assistant record of a real log (main and sidechain) gives its call; the records of
    one reply share one id and one prompt size."""
    by_id: dict[str, set] = {}
    sidechain_calls = 0
    for line in CLAUDE_LOG.read_bytes().splitlines():
        value = json.loads(line)
        if value.get("type") != "assistant":
            continue
        call = claude_code_call(value, 0)
        by_id.setdefault(call.id, set()).add(call.prompt_tokens)
        sidechain_calls += bool(value.get("isSidechain"))
        assert call.model == "claude-sonnet-4-20250514" and call.prompt_tokens > 0
    assert sidechain_calls > 0
    assert all(len(sizes) == 1 for sizes in by_id.values())
    assert len(by_id) == 20


# --- Codex token_count events -------------------------------------------------------------------


@needs_realworld
def test_codex_calls_on_a_real_excerpt():
    """The first 76 lines of a real rollout: five model calls, each event written twice (the
    repeat after a turn context is dropped), the model from turn_context, the recorded window."""
    [t] = transcript_of(excerpt(CODEX_LOG, 76))
    assert [c.prompt_tokens for c in t.calls] == [17102, 18084, 19828, 21348, 22429]
    assert {c.model for c in t.calls} == {"gpt-5.3-codex"}
    assert {c.window for c in t.calls} == {258400}
    for call in t.calls:
        assert t.messages[call.message].role is Role.ASSISTANT
    # Each call answers a later message than the one before.
    assert [c.message for c in t.calls] == sorted({c.message for c in t.calls})


def codex(kind: str, payload: dict) -> dict:
    return {"timestamp": "2026-01-01T00:00:00Z", "type": kind, "payload": payload}


def token_count(prompt, total, window=200000) -> dict:
    usage = {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": 5}
    return codex("event_msg", {"type": "token_count", "info": {
        "last_token_usage": usage, "total_token_usage": {"input_tokens": total},
        "model_context_window": window}})


def reply_run(call_id: str) -> list[dict]:
    """The items of one model response: reasoning, then a call."""
    return [codex("response_item", {"type": "reasoning", "summary": []}),
            codex("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": call_id})]


def result(call_id: str) -> dict:
    return codex("response_item", {"type": "function_call_output", "call_id": call_id, "output": "ok"})


def answer(words: str) -> dict:
    return codex("response_item", {"type": "message", "role": "assistant",
                                    "content": [{"type": "output_text", "text": words}]})


USER = codex("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]})
CONTEXT = codex("turn_context", {"model": "gpt-5-codex"})


def test_codex_events_after_their_items_as_later_versions_write_them():
    lines = [
        codex("session_meta", {"id": "s"}),
        codex("event_msg", {"type": "token_count", "info": None}),   # no info: nothing recorded
        USER, CONTEXT, *reply_run("c1"),
        token_count(1000, 1050),
        result("c1"), CONTEXT,
        token_count(1000, 1050),                                      # the repeat after a turn context
        answer("done"), answer("really done"),                        # one response, two messages
        token_count(1200, 2250, window=None),
    ]
    [t] = transcript_of(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    assert [(c.message, c.prompt_tokens, c.model, c.window) for c in t.calls] == [
        (1, 1000, "gpt-5-codex", 200000), (3, 1200, "gpt-5-codex", None)]
    assert [m.role for m in t.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]


def test_codex_events_before_their_items_as_codex_0_40_writes_them():
    """Codex 0.40: turn context, token_count, then the response's items. The first event is
    the first call's, not one left over from before any reply."""
    lines = [
        codex("session_meta", {"id": "s"}), USER,
        CONTEXT, token_count(1000, 1000), *reply_run("c1"), result("c1"),
        CONTEXT, token_count(1300, 2300), *reply_run("c2"), result("c2"),
        CONTEXT, token_count(1500, 3800), answer("done"),
    ]
    [t] = transcript_of(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    assert [(c.message, c.prompt_tokens) for c in t.calls] == [(1, 1000), (3, 1300), (5, 1500)]


@needs_realworld
@pytest.mark.parametrize("path", sorted((REALWORLD / "codex").glob("*rollout*.jsonl")), ids=lambda p: p.name[:30])
def test_every_codex_call_is_one_reply_with_its_own_usage(path):
    """On the real rollouts (0.40 and 0.104), each distinct token_count event is one call on its
    own assistant message; the replay makes one request per call, a compaction's history none."""
    from ctxfit_cli.core.fitting import FitOptions
    from ctxfit_cli.replay.policies import POLICIES
    from ctxfit_cli.replay.simulation import replay
    events, last = 0, None
    for line in path.read_bytes().splitlines():
        record = orjson.loads(line)
        info = record["payload"].get("info") if record["type"] == "event_msg" else None
        if record["payload"].get("type") == "token_count" and isinstance(info, dict) and info["last_token_usage"]["input_tokens"]:
            events += info["total_token_usage"] != last
            last = info["total_token_usage"]
    calls = replayed = 0
    for t in read_transcripts(str(path), path.open("rb")):
        t = t.materialize()
        assert len({c.message for c in t.calls}) == len(t.calls)
        assert all(t.messages[c.message].role is Role.ASSISTANT and c.message >= t.given for c in t.calls)
        calls += len(t.calls)
        for name in ("none", "ctxfit", "turns"):
            run = replay(t, POLICIES[name], FitOptions(budget=400_000))
            assert run.calls == len(t.calls), name
        replayed += run.calls
    assert calls == replayed == events > 0


@needs_realworld
def test_a_codex_compaction_gives_history_not_calls():
    path = next((REALWORLD / "codex").glob("localpush_rollout-2026-02-23T12-54-34-*.jsonl"))
    before, after = [t.materialize() for t in read_transcripts(str(path), path.open("rb"))]
    assert before.given == 0 and after.given == 39  # the replacement history (its encrypted summary is not sent)
    assert sum(m.role is Role.ASSISTANT for m in after.messages[:after.given]) == 15
    assert after.calls[0].message > after.given - 1 and after.calls[0].prompt_tokens == 48297
    assert len(before.calls) + len(after.calls) == 286


# --- The fixed part and growth ------------------------------------------------------------------


def message(role: Role, text: str) -> Message:
    return Message(role, (Part(PartKind.TEXT, text),), b"")


def conversation(calls: list[RecordedCall]) -> Transcript:
    messages = (message(Role.USER, "x" * 400), message(Role.ASSISTANT, "y" * 40),
                message(Role.USER, "z" * 4000), message(Role.ASSISTANT, "w" * 40))
    return Transcript("t", "claude-code", "anthropic", messages, calls=calls)


def test_fixed_part_is_the_first_prompt_minus_what_precedes_it():
    t = conversation([RecordedCall(1, "a", "claude-opus-4-6", 20000), RecordedCall(3, "b", "claude-opus-4-6", 21500)])
    fixed = infer_fixed(t)
    assert fixed.tokens == 20000 - (100 + 4) and fixed.source == "inferred"
    # The last call's prompt: fixed part + every message before its reply.
    [(_, first), (_, last)] = call_estimates(t)
    assert first == 20000 and last == fixed.tokens + 104 + 14 + 1004


def test_fixed_part_never_negative_and_none_without_usage():
    assert infer_fixed(conversation([RecordedCall(1, "a", "m", 10)])).tokens == 0
    assert infer_fixed(conversation([])).source == "none"
    assert infer_fixed(conversation([RecordedCall(1, "a", "<synthetic>", 9000)])).source == "none"


def test_growth_samples_pair_consecutive_calls():
    seed = load_profile("seed")
    t = conversation([RecordedCall(1, "a", "m", 20000), RecordedCall(3, "b", "m", 21500)])
    [sample] = growth_samples(t, seed)
    assert sample.recorded == 1500 and sample.messages == 2
    assert growth_estimate(sample, seed) == 10 + 1000 + 2 * 4  # both texts as one vector
    # A prompt that shrank, or two calls on one message, give no sample.
    assert growth_samples(conversation([RecordedCall(1, "a", "m", 20000), RecordedCall(3, "b", "m", 100)]), seed) == []
    assert growth_samples(conversation([RecordedCall(1, "a", "m", 20000), RecordedCall(1, "b", "m", 21000)]), seed) == []


def tool_round(command: str, output: str, call_id: str) -> tuple[Message, Message]:
    call = Message(Role.ASSISTANT, (Part(PartKind.TOOL_CALL, command, "Bash", call_id),), b"")
    result = Message(Role.USER, (Part(PartKind.TOOL_RESULT, output, call_id=call_id),), b"")
    return call, result


def test_growth_counts_tool_blocks_and_the_counter_frames_them():
    framed = ProfileCounter({"name": "framed-growth", "version": 1, "rates": load_profile("seed").data["rates"],
                             "framing": {"tool_calls": 30, "tool_results": 20}})
    messages = (message(Role.USER, "x" * 400), *tool_round("y" * 36, "z" * 3996, "a1"),
                message(Role.ASSISTANT, "done"))
    t = Transcript("t", "claude-code", "anthropic", messages,
                   calls=[RecordedCall(1, "a", "m", 20000), RecordedCall(3, "b", "m", 21500)])
    [sample] = growth_samples(t, framed)
    assert (sample.tool_calls, sample.tool_results, sample.tool_blocks) == (1, 1, 2)
    text = (4 + 36 + 2 + 3996 + 2) // 4  # "Bash", the arguments, the result, both call ids
    assert growth_estimate(sample, framed) == text + 2 * 4 + 30 + 20
    assert growth_estimate(sample, load_profile("seed")) == text + 2 * 4
    # The prompt estimate frames the same blocks: its growth between the calls is the sample's
    # (up to rounding: a message rounds each kind of content once, a sample its whole vector).
    [(_, first), (_, second)] = call_estimates(t, framed)
    assert 0 <= (second - first) - growth_estimate(sample, framed) <= 2


def test_growth_frames_thinking_blocks_as_the_estimate_does():
    framed = ProfileCounter({"name": "framed-thinking", "version": 1, "rates": load_profile("seed").data["rates"],
                             "framing": {"thinking": 9, "tool_calls": 7}})
    thought = Message(Role.ASSISTANT, (Part(PartKind.THINKING, "t" * 40), Part(PartKind.TEXT, "ok")), b"")
    messages = (message(Role.USER, "x" * 400), *tool_round("y" * 36, "z" * 396, "a1"), thought)
    t = Transcript("t", "claude-code", "anthropic", messages,
                   calls=[RecordedCall(1, "a", "m", 20000), RecordedCall(4, "b", "m", 21500)])
    [sample] = growth_samples(t, framed)
    assert sample.thinking == 1
    unframed = growth_estimate(sample, load_profile("seed"))
    assert growth_estimate(sample, framed) == unframed + 9 + 7
    [(_, first), (_, second)] = call_estimates(t, framed)
    assert 0 <= (second - first) - growth_estimate(sample, framed) <= 2


def test_pairs_across_a_model_switch_are_left_out():
    seed = load_profile("seed")
    calls = [RecordedCall(1, "a", "claude-opus-4-6", 20000), RecordedCall(3, "b", "claude-haiku-4-5", 26000)]
    assert growth_samples(conversation(calls), seed) == []


def test_materialize_keeps_calls_on_their_messages():
    system = Message(Role.SYSTEM, (Part(PartKind.TEXT, "be brief"),), b"")
    t = Transcript("t", "codex", "openai", iter([system, message(Role.USER, "hi"), message(Role.ASSISTANT, "ok")]),
                   calls=[RecordedCall(2, "", "gpt-5", 100)])
    m = t.materialize()
    assert m.messages[m.calls[0].message].role is Role.ASSISTANT


# --- Calibrating from growth ----------------------------------------------------------------------


def test_calibrate_from_growth_recovers_a_known_rate_and_errs_high():
    from ctxfit_cli.counters.calibrate import calibrate_from_growth
    seed = load_profile("seed")
    texts = [("word " * n + "Code_42();\n" * (n // 3)) for n in range(60, 600, 7)]
    vectors = [seed.measure(text) for text in texts]
    truth = [round(len(text) / 3.0) for text in texts]  # a tokenizer of 3 characters per token
    truth[5] += 2000  # hook output: in the prompt, not in the log
    profile = calibrate_from_growth(vectors, truth, ["log"] * len(texts), name="mine",
                                    base=load_profile("safe"))
    fitted = ProfileCounter(profile)
    ratios = [fitted.tokens(v) / y for v, y in zip(vectors, truth)]
    assert sum(r < 0.9 for r in ratios) <= 1  # only the hook pair may stay under
    assert 1.0 <= sum(fitted.tokens(v) for v in vectors) / (sum(truth) - 2000) <= 1.2
    assert profile["fit"]["call_pairs"] == len(texts) and profile["fit"]["base"] == "safe"


def test_calibrate_from_growth_fits_the_framing_of_tool_blocks():
    """Made-up pairs whose true cost is 3 characters a token plus 40 tokens per tool block:
    fitted with a framing weight the estimate stays close; without one, the small pairs with
    many blocks can only be covered by inflating the rates, which over-counts the big ones."""
    from ctxfit_cli.counters.calibrate import calibrate_from_growth
    seed, safe = load_profile("seed"), load_profile("safe")
    rng = random.Random(7)
    texts = ["".join(rng.choice("abcdefgh ") for _ in range(rng.randrange(60, 6000))) for _ in range(120)]
    blocks = [rng.randrange(2, 9, 2) for _ in texts]
    vectors = [seed.measure(text) for text in texts]
    truth = [round(len(text) / 3 + 40 * b) for text, b in zip(texts, blocks)]

    def aggregate(profile):
        counter = ProfileCounter(profile)
        estimates = [counter.tokens(v) + b * counter.framing.get("tool_calls", 0) for v, b in zip(vectors, blocks)]
        assert sum(e / y < 0.9 for e, y in zip(estimates, truth)) <= 0.06 * len(truth)
        return sum(estimates) / sum(truth)

    framed = calibrate_from_growth(vectors, truth, ["log"] * len(texts), name="framed", base=safe, blocks=blocks)
    assert framed["framing"]["tool_calls"] == framed["framing"]["tool_results"]
    assert 25 <= framed["framing"]["tool_calls"] <= 80  # 40, traded a little against the word weight
    plain = calibrate_from_growth(vectors, truth, ["log"] * len(texts), name="plain", base=safe)
    assert "framing" not in plain
    assert 1.0 <= aggregate(framed) <= 1.05 and aggregate(plain) > aggregate(framed) + 0.05


def test_shipped_claude_profile_is_a_valid_profile():
    claude = load_profile("claude")
    assert claude.profile == "claude" and claude.data["fit"]["from"] == "recorded usage"


# --- Models -> counter and window -------------------------------------------------------------------


@pytest.mark.parametrize("model, profile", [
    ("claude-opus-4-6", "claude"), ("claude-sonnet-4-20250514", "claude"),
    ("anthropic/claude-haiku-4-5-20251001", "claude"), ("gpt-4o-2024-08-06", "o200k"),
    ("gpt-4.1-mini", "o200k"), ("gpt-5.3-codex", "o200k"), ("o3-mini", "o200k"), ("o4-mini", "o200k"),
    ("openrouter/openai/gpt-5", "o200k"), ("gpt-4-0613", "cl100k"), ("gpt-3.5-turbo", "cl100k"),
    ("mistral-large-latest", "tekken"), ("qwen2.5-coder-32b", "qwen"),
])
def test_model_families(model, profile):
    assert family(model).profile == profile


def test_counter_rules_for_named_unnamed_and_unknown_models():
    assert profile_for([])[0] == "seed"
    assert profile_for(["<synthetic>"])[0] == "seed"
    assert profile_for(["claude-haiku-4-5", "claude-opus-4-6"])[1].startswith("model claude-opus-4-6")
    assert profile_for(["deepseek-v3"])[0] == "safe"
    assert profile_for(["openrouter/meta-llama/llama-4-maverick"])[0] == "o200k"
    assert window_for(["gpt-5.3-codex"], 258400) == (258400, "recorded by the log")
    assert window_for(["claude-opus-4-6"])[0] == 200_000
    assert window_for([]) == (None, "default")
