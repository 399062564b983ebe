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
from ctxfit_cli.errors import NoConversation
from ctxfit_cli.formats.payload import fit_transcript
from ctxfit_cli.formats.skipped import Skipped
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


# --- Claude Code 2.1 as it writes its logs now (issue #34) ------------------------------------------

#: Records 2.1 writes before the first message (shapes of the shared 2.1.81 and 2.1.98 logs).
OPENING_2_1 = [
    {"type": "permission-mode", "permissionMode": "default", "sessionId": "s1"},
    {"parentUuid": None, "isSidechain": False, "type": "progress", "sessionId": "s1", "uuid": "p1",
     "data": {"type": "hook_progress", "hookEvent": "SessionStart", "hookName": "SessionStart:startup"},
     "parentToolUseID": "h1", "toolUseID": "h1", "timestamp": "2026-03-21T00:56:00Z"},
    {"parentUuid": None, "isSidechain": False, "type": "attachment", "sessionId": "s1", "uuid": "a0",
     "attachment": {"type": "hook_success", "hookName": "SessionStart:startup", "content": "ok"}},
    {"type": "last-prompt", "lastPrompt": "list the files", "sessionId": "s1"},
    {"type": "mode", "mode": "plan", "sessionId": "s1"},
    {"type": "ai-title", "aiTitle": "Listing files", "sessionId": "s1"},
    {"type": "custom-title", "customTitle": "files", "sessionId": "s1"},
    {"type": "agent-name", "agentName": "files", "sessionId": "s1"},
    {"type": "queue-operation", "operation": "enqueue", "sessionId": "s1", "timestamp": "2026-03-21T00:56:00Z"},
]


def agent_progress(inner: dict, uuid: str) -> dict:
    """A sub-agent's record written inline in the main log (2.1's `agent_progress`)."""
    return {"parentUuid": None, "isSidechain": False, "type": "progress", "sessionId": "s1", "uuid": uuid,
            "data": {"type": "agent_progress", "message": inner, "agentId": "ab12", "prompt": "look"},
            "toolUseID": f"agent_{uuid}", "parentToolUseID": "t1", "timestamp": "2026-03-21T00:57:00Z"}


def session_2_1(*, speed: str | None = None) -> bytes:
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000,
             "output_tokens": 7, **({"speed": speed} if speed else {})}
    sub_usage = {"input_tokens": 50, "output_tokens": 5}
    sub_reply = {"type": "assistant", "requestId": "req_sub", "uuid": "x1", "timestamp": "2026-03-21T00:57:00Z",
                 "message": {"id": "msg_sub", "role": "assistant", "model": "claude-haiku-4-5",
                             "content": [{"type": "text", "text": "found it"}], "usage": sub_usage}}
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    return records(
        *OPENING_2_1,
        cc("user", {"role": "user", "content": "list the files"}, "u1", promptId="p1", entrypoint="cli"),
        reply("m1", tool_use("t1"), "a1", usage),
        agent_progress({"type": "user", "message": {"role": "user", "content": "look"}, "uuid": "x0"}, "g1"),
        agent_progress(sub_reply, "g2"),
        agent_progress(sub_reply, "g3"),  # (written again as it streams: one reply)
        cc("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                 "content": [{"type": "text", "text": "a.png"}, image]}]}, "u2"),
        {"type": "system", "subtype": "microcompact_boundary", "sessionId": "s1", "uuid": "b1",
         "microcompactMetadata": {"trigger": "auto", "preTokens": 9000, "tokensSaved": 10, "compactedToolIds": []}},
        reply("m2", {"type": "text", "text": "one picture"}, "a2", usage),
    )


def test_a_2_1_log_opening_with_bookkeeping_records_is_read_and_nothing_is_unknown():
    data = session_2_1()
    skipped = Skipped()
    [transcript] = read_transcripts("log.jsonl", io.BytesIO(data), None, None, skipped)
    messages = list(transcript.messages)
    assert transcript.format == "claude-code"
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT]
    assert [c.id for c in transcript.calls] == ["m1", "m2"]  # the sub-agent's reply is not this conversation's
    assert skipped.as_dict() == {"records": {}, "keys": {}}
    [result] = messages[2].parts
    assert result.kind is PartKind.TOOL_RESULT and result.text == "a.png"
    assert result.image_tokens > 0  # the image inside the tool result is kept, and counted as one
    assert b"iVBORw0KGgo=" in messages[2].raw


def test_a_microcompact_boundary_does_not_start_a_new_conversation_but_a_compact_boundary_does():
    assert len(read_all(session_2_1())) == 1
    compacted = session_2_1() + records(
        {"type": "system", "subtype": "compact_boundary", "sessionId": "s1", "uuid": "b2",
         "compactMetadata": {"trigger": "auto", "preTokens": 9000}},
        cc("user", {"role": "user", "content": "summary of before"}, "u3", isCompactSummary=True),
        reply("m3", {"type": "text", "text": "go on"}, "a3"))
    assert [len(t.messages) for t in read_all(compacted)] == [4, 2]


def test_a_sub_agent_inline_is_the_sessions_cost_once_and_fast_mode_is_priced_as_such():
    from ctxfit_cli.fleet.meta import describe
    from ctxfit_cli.formats.reading import read_records

    [session] = describe("log.jsonl", "claude-code", read_records("log.jsonl", io.BytesIO(session_2_1())))
    assert session.spend[("claude-haiku-4-5", False)] == [50, 0, 0, 5, 0]  # once, though written twice
    assert session.spend[("claude-opus-4-6", False)] == [6, 200, 2000, 14, 0]
    assert "claude-haiku-4-5" in session.models
    [fast] = describe("log.jsonl", "claude-code", read_records("log.jsonl", io.BytesIO(session_2_1(speed="fast"))))
    assert ("claude-opus-4-6-fast", False) in fast.spend and ("claude-opus-4-6", False) not in fast.spend


def test_an_unknown_record_type_and_key_are_counted_not_fatal():
    data = session_2_1() + records({"type": "brand-new-thing", "sessionId": "s1"},
                                   cc("user", {"role": "user", "content": "more"}, "u9", shinyNewKey=1))
    skipped = Skipped()
    [transcript] = read_transcripts("log.jsonl", io.BytesIO(data), None, None, skipped)
    assert len(list(transcript.messages)) == 5
    assert skipped.as_dict() == {"records": {"brand-new-thing": 1}, "keys": {"shinyNewKey": 1}}


def test_a_log_of_bookkeeping_only_names_claude_code():
    with pytest.raises(NoConversation, match="Claude Code session log"):
        read_all(records(*OPENING_2_1))
