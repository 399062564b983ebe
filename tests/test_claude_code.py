"""The Claude Code reader rebuilds the conversation the model received (issue #9), on
hand-made records shaped as the real logs are and on the real logs themselves."""

from __future__ import annotations

import io
import json
from pathlib import Path

import orjson
import pytest

from ctxfit_cli.core.fitting import FitOptions
from ctxfit_cli.core.model import PartKind, Role
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.payload import fit_transcript
from test_formats import assistant_block, cc, records, result_record

REALWORLD = Path(__file__).resolve().parent.parent.parent / "shared" / "realworld"
CLAUDE_CODE = sorted((REALWORLD / "claude-code").glob("*.jsonl"))


def read_all(data: bytes):
    return [t.materialize() for t in read_transcripts("log.jsonl", io.BytesIO(data))]


def reply(message_id: str, block: dict, uuid: str, usage: dict | None = None, model: str = "claude-opus-4-6") -> dict:
    message = assistant_block(message_id, block)
    message["model"] = model
    message["usage"] = usage or {"input_tokens": 3, "cache_creation_input_tokens": 100,
                                 "cache_read_input_tokens": 1000, "output_tokens": 7}
    return cc("assistant", message, uuid)


def tool_use(call_id: str) -> dict:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": call_id}}


def test_a_reply_split_by_the_results_of_its_calls_is_one_message():
    # As in the real sub-agent log: one reply whose calls ran one after another, each result
    # written before the reply's next tool_use record.
    data = records(
        cc("user", {"role": "user", "content": "Explore."}, "u1"),
        reply("msg_1", {"type": "text", "text": "Looking."}, "a1"),
        reply("msg_1", tool_use("t1"), "a2"),
        result_record("r1", "t1", "one"),
        reply("msg_1", tool_use("t2"), "a3"),
        result_record("r2", "t2", "two"),
        reply("msg_1", tool_use("t3"), "a4", usage={"input_tokens": 3, "cache_creation_input_tokens": 100,
                                                   "cache_read_input_tokens": 1000, "output_tokens": 250}),
        result_record("r3", "t3", "three"),
        reply("msg_2", {"type": "text", "text": "Done."}, "a5"),
    )
    [transcript] = read_all(data)
    assert [m.role for m in transcript.messages] == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT]
    assert transcript.messages[1].call_ids == ("t1", "t2", "t3")
    assert transcript.messages[2].result_ids == ("t1", "t2", "t3")
    assert [(c.message, c.id, c.model, c.prompt_tokens, c.output_tokens) for c in transcript.calls] == [
        (1, "msg_1", "claude-opus-4-6", 1103, 250), (3, "msg_2", "claude-opus-4-6", 1103, 7)]
    assert transcript.repairs == []


def test_results_of_parallel_calls_written_between_reply_records_follow_the_whole_reply():
    # spotter_short.jsonl: tool_use A, (progress), tool_use B, result A, result B, then the
    # interrupt as a text record.
    data = records(
        cc("user", {"role": "user", "content": "Start the server."}, "u1"),
        reply("msg_1", {"type": "thinking", "thinking": "Hm.", "signature": "sig"}, "a1"),
        reply("msg_1", tool_use("tA"), "a2"),
        {"type": "progress", "uuid": "p1", "parentUuid": "a2", "sessionId": "s1", "data": {}},
        result_record("rA", "tA", "a"),
        reply("msg_1", tool_use("tB"), "a3"),
        result_record("rB", "tB", "b"),
        cc("user", {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]}, "u2"),
    )
    [transcript] = read_all(data)
    assert [m.role for m in transcript.messages] == [Role.USER, Role.ASSISTANT, Role.USER]
    last = transcript.messages[2]
    assert [p.kind for p in last.parts] == [PartKind.TOOL_RESULT, PartKind.TOOL_RESULT, PartKind.TEXT]
    assert last.result_ids == ("tA", "tB")
    payload = orjson.loads(fit_transcript(transcript, FitOptions(budget=10_000)).payload)
    assert validate_request(payload, "anthropic") == []


def test_a_user_record_with_results_and_text_answers_the_reply_before_it():
    data = records(
        cc("user", {"role": "user", "content": "Go."}, "u1"),
        reply("msg_1", {"type": "text", "text": "Running."}, "a1"),
        reply("msg_1", tool_use("t1"), "a2"),
        cc("user", {"role": "user", "content": [
            {"type": "text", "text": "also check the logs"},
            {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}, "u2"),
        reply("msg_2", {"type": "text", "text": "Checked."}, "a3"),
    )
    [transcript] = read_all(data)
    answer = transcript.messages[2]
    assert [p.kind for p in answer.parts] == [PartKind.TOOL_RESULT, PartKind.TEXT]
    for budget in (10_000,):  # smaller budgets: the turn boundary fix of #9 part 2
        payload = orjson.loads(fit_transcript(transcript, FitOptions(budget=budget)).payload)
        assert validate_request(payload, "anthropic") == []


def test_synthetic_replies_are_neither_calls_nor_sent():
    data = records(
        cc("user", {"role": "user", "content": "Hi."}, "u1"),
        reply("msg_x", {"type": "text", "text": "API Error: 529 overloaded"}, "a1", model="<synthetic>"),
        cc("user", {"role": "user", "content": "Try again."}, "u2"),
        reply("msg_1", {"type": "text", "text": "Hello."}, "a2"),
    )
    [transcript] = read_all(data)
    assert [p.text for m in transcript.messages for p in m.parts] == ["Hi.", "Try again.", "Hello."]
    assert [c.id for c in transcript.calls] == ["msg_1"]


def test_a_live_log_ending_on_an_open_call_is_answered_and_reported():
    data = records(
        cc("user", {"role": "user", "content": "Build."}, "u1"),
        reply("msg_1", tool_use("t1"), "a1"),
        reply("msg_1", tool_use("t2"), "a2"),
        result_record("r1", "t1", "built"),
    )
    [transcript] = read_all(data)
    assert transcript.messages[-1].result_ids == ("t1", "t2")
    assert len(transcript.repairs) == 1 and "'t2'" in transcript.repairs[0]
    assert transcript.repairs[0].startswith("log.jsonl:4: ")
    payload = orjson.loads(fit_transcript(transcript, FitOptions(budget=10_000)).payload)
    assert validate_request(payload, "anthropic") == []


def _distinct_reply_ids(path: Path) -> list[set[str]]:
    """The distinct message.ids of the conversation's assistant records, per compaction segment
    (computed here independently of the reader)."""
    segments: list[set[str]] = [set()]
    sidechain = None
    for line in path.read_bytes().splitlines():
        record = json.loads(line)
        if record.get("type") == "system" and record.get("subtype") == "compact_boundary":
            segments.append(set())
        if record.get("type") != "assistant":
            continue
        sidechain = bool(record.get("isSidechain")) if sidechain is None else sidechain
        if bool(record.get("isSidechain")) == sidechain and record["message"].get("model") != "<synthetic>":
            segments[-1].add(record["message"]["id"])
    return [s for s in segments if s]


@pytest.mark.parametrize("path", CLAUDE_CODE, ids=lambda p: p.name)
def test_real_logs_give_one_call_and_one_assistant_message_per_reply_id(path):
    transcripts = [t.materialize() for t in read_transcripts(str(path), path.open("rb"))]
    expected = _distinct_reply_ids(path)
    assert [{c.id for c in t.calls} for t in transcripts] == expected
    for transcript, ids in zip(transcripts, expected):
        assistants = [i for i, m in enumerate(transcript.messages) if m.role is Role.ASSISTANT]
        assert [c.message for c in transcript.calls] == assistants and len(assistants) == len(ids)
        assert all(c.prompt_tokens and c.output_tokens for c in transcript.calls)
        payload = orjson.loads(fit_transcript(transcript, FitOptions(budget=2_000_000, window=2_000_000)).payload)
        assert validate_request(payload, "anthropic") == []


@pytest.mark.parametrize("path", CLAUDE_CODE, ids=lambda p: p.name)
def test_replay_makes_one_call_per_real_api_call(path):
    from conftest import run_cli
    done = run_cli("replay", str(path), "--json", "-p", "ctxfit", "--window", "2000000", "--budget", "2000000")
    assert done.returncode == 0, done.stderr
    calls = [f["policies"]["ctxfit"]["calls"] for f in orjson.loads(done.stdout)["files"]]
    assert calls == [len(ids) for ids in _distinct_reply_ids(path)]
