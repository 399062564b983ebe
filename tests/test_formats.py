"""Reading each input format into the one transcript model."""

from __future__ import annotations

import io

import orjson
import pytest

from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.counters.images import image_tokens_for_size
from ctxfit_cli.core.model import PartKind, Role
from ctxfit_cli.formats.payload import fit_transcript
from ctxfit_cli.core.fitting import FitOptions
from ctxfit_cli.core.validate import validate_request
from conftest import read


def records(*lines: dict) -> bytes:
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def cc(kind: str, message: dict, uuid: str, **extra) -> dict:
    return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/p",
            "sessionId": "s1", "version": "2.0.61", "type": kind, "message": message, "uuid": uuid,
            "timestamp": "2026-01-01T00:00:00Z", **extra}


def assistant_block(message_id: str, block: dict) -> dict:
    return {"id": message_id, "type": "message", "role": "assistant", "model": "claude", "content": [block],
            "stop_reason": None, "usage": {"input_tokens": 1}}


def result_record(uuid: str, call_id: str, text: str) -> dict:
    return cc("user", {"role": "user", "content": [{"tool_use_id": call_id, "type": "tool_result", "content": text}]},
              uuid, toolUseResult={"stdout": text})


def read_bytes(data: bytes):
    [transcript] = read_transcripts("log.jsonl", io.BytesIO(data))
    return transcript.materialize()


def test_claude_code_merges_sibling_records_and_reorders_parallel_results():
    data = records(
        {"type": "summary", "summary": "A session", "leafUuid": "u9"},
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}, "isSnapshotUpdate": False},
        cc("user", {"role": "user", "content": "Fix the bug."}, "u1"),
        cc("assistant", assistant_block("msg_1", {"type": "thinking", "thinking": "Let me look.", "signature": "sig"}), "u2"),
        cc("assistant", assistant_block("msg_1", {"type": "tool_use", "id": "toolu_A", "name": "Read", "input": {"file_path": "a.py"}}), "u3"),
        cc("assistant", assistant_block("msg_1", {"type": "tool_use", "id": "toolu_B", "name": "Read", "input": {"file_path": "b.py"}}), "u4"),
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "s1"},
        result_record("u5", "toolu_B", "contents of b"),  # written before A's result
        result_record("u6", "toolu_A", "contents of a"),
        cc("assistant", assistant_block("msg_2", {"type": "text", "text": "Fixed."}), "u7"),
    )
    transcript = read_bytes(data)
    assert transcript.format == "claude-code" and transcript.dialect == "anthropic"
    roles = [m.role for m in transcript.messages]
    assert roles == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT]
    assistant = transcript.messages[1]
    assert [p.kind for p in assistant.parts] == [PartKind.THINKING, PartKind.TOOL_CALL, PartKind.TOOL_CALL]
    assert transcript.messages[2].result_ids == ("toolu_A", "toolu_B")
    sent = orjson.loads(fit_transcript(transcript, FitOptions(budget=10_000)).payload)
    assert validate_request(sent, "anthropic") == []
    assert "toolUseResult" not in str(sent) and "usage" not in str(sent)


def test_claude_code_keeps_meta_records_and_merges_them_with_the_prompt():
    data = records(
        cc("user", {"role": "user", "content": "<command-name>/clear</command-name>"}, "u1", isMeta=True),
        cc("user", {"role": "user", "content": "Now write the tests."}, "u2"),
        cc("assistant", assistant_block("m1", {"type": "text", "text": "Done."}), "u3"),
    )
    transcript = read_bytes(data)
    assert len(transcript.messages) == 2
    assert [p.text for p in transcript.messages[0].parts] == ["<command-name>/clear</command-name>", "Now write the tests."]


def test_claude_code_skips_sidechains_of_a_main_log_and_reads_a_subagent_log():
    main = records(
        cc("user", {"role": "user", "content": "main prompt"}, "u1"),
        cc("user", {"role": "user", "content": "sub-agent instruction"}, "s1", isSidechain=True),
        cc("assistant", assistant_block("m1", {"type": "text", "text": "sub-agent reply"}), "s2", isSidechain=True),
        cc("assistant", assistant_block("m2", {"type": "text", "text": "main reply"}), "u2"),
    )
    texts = [p.text for m in read_bytes(main).messages for p in m.parts]
    assert texts == ["main prompt", "main reply"]
    sub = records(
        cc("user", {"role": "user", "content": "sub-agent instruction"}, "s1", isSidechain=True),
        cc("assistant", assistant_block("m1", {"type": "text", "text": "sub-agent reply"}), "s2", isSidechain=True),
    )
    assert [p.text for m in read_bytes(sub).messages for p in m.parts] == ["sub-agent instruction", "sub-agent reply"]


def test_codex_rollouts_become_openai_messages_and_skip_duplicates():
    data = records(
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "x", "cwd": "/p", "instructions": "Be careful."}},
        {"timestamp": "t", "type": "turn_context", "payload": {"model": "gpt-5"}},
        {"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user",
                                                                "content": [{"type": "input_text", "text": "list files"}]}},
        {"timestamp": "t", "type": "event_msg", "payload": {"type": "user_message", "message": "list files"}},
        {"timestamp": "t", "type": "response_item", "payload": {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}},
        {"timestamp": "t", "type": "response_item", "payload": {"type": "function_call", "name": "shell",
                                                                "arguments": "{\"command\":[\"ls\"]}", "call_id": "call_1"}},
        {"timestamp": "t", "type": "response_item", "payload": {"type": "function_call", "name": "shell",
                                                                "arguments": "{\"command\":[\"pwd\"]}", "call_id": "call_2"}},
        {"timestamp": "t", "type": "response_item", "payload": {"type": "function_call_output", "call_id": "call_1", "output": "a.py"}},
        {"timestamp": "t", "type": "response_item", "payload": {"type": "function_call_output", "call_id": "call_2",
                                                                "output": {"content": "/p", "success": True}}},
        {"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "assistant",
                                                                "content": [{"type": "output_text", "text": "One file."}]}},
    )
    transcript = read_bytes(data)
    assert transcript.format == "codex" and transcript.dialect == "openai"
    assert [p.text for p in transcript.system[0].parts] == ["Be careful."]
    assert [m.role for m in transcript.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.TOOL, Role.ASSISTANT]
    assert transcript.messages[1].call_ids == ("call_1", "call_2")
    assert transcript.messages[3].parts[0].text == "/p"
    sent = orjson.loads(fit_transcript(transcript, FitOptions(budget=10_000)).payload)
    assert validate_request(sent, "openai") == []


def test_a_request_object_keeps_its_other_fields_and_its_tools():
    request = {"model": "claude-x", "max_tokens": 100, "system": [{"type": "text", "text": "sys"}],
               "tools": [{"name": "t", "description": "d", "input_schema": {"type": "object"}}],
               "messages": [{"role": "user", "content": "hi"}]}
    transcript = read_bytes(orjson.dumps(request))
    assert transcript.format == "request" and transcript.dialect == "anthropic"
    assert transcript.tools is not None
    payload = fit_transcript(transcript, FitOptions(budget=10_000)).payload
    assert orjson.loads(payload) == request


def test_one_request_per_line_gives_one_transcript_each():
    line = orjson.dumps({"messages": [{"role": "user", "content": "hi"}]})
    transcripts = list(read_transcripts("r.jsonl", io.BytesIO(line + b"\n" + line + b"\n")))
    assert [t.line for t in transcripts] == [1, 2]


def test_the_dialect_is_detected_from_the_first_distinctive_line():
    anthropic = read([{"role": "user", "content": "hi"},
                      {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "n", "input": {}}]}])
    assert anthropic.dialect == "anthropic"
    openai = read([{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": []}])
    assert openai.dialect == "openai"


def test_images_are_estimated_from_their_size_never_as_base64_text():
    from test_fit_properties import IMAGE  # a real 64x48 PNG
    transcript = read([{"role": "user", "content": [{"type": "image", "source": {
        "type": "base64", "media_type": "image/png", "data": IMAGE}}]}], "anthropic")
    part = transcript.messages[0].parts[0]
    assert part.kind is PartKind.IMAGE and part.image_tokens == image_tokens_for_size(64, 48) == 5
    assert part.text == ""


# 3000x2000 is scaled to at most 1.15 megapixels: 1313x875 px, ceil(1,148,875 / 750) = 1532.
@pytest.mark.parametrize(("width", "height", "tokens"), [(1000, 1000, 1334), (3000, 2000, 1532), (200, 200, 54)])
def test_image_rule_scales_large_images_down_first(width, height, tokens):
    assert image_tokens_for_size(width, height) == tokens


def compacted_log() -> bytes:
    return records(
        cc("user", {"role": "user", "content": "Build the parser."}, "u1"),
        cc("assistant", assistant_block("m1", {"type": "text", "text": "Parser built."}), "u2"),
        {"parentUuid": None, "logicalParentUuid": "u2", "isSidechain": False, "type": "system",
         "subtype": "compact_boundary", "content": "Conversation compacted", "uuid": "b1",
         "compactMetadata": {"trigger": "auto", "preTokens": 155000}},
        cc("user", {"role": "user", "content": "This session is being continued. Summary: a parser was built."},
           "u3", isCompactSummary=True),
        cc("assistant", assistant_block("m2", {"type": "text", "text": "Continuing."}), "u4"),
        cc("user", {"role": "user", "content": "Now add tests."}, "u5"),
        cc("assistant", assistant_block("m3", {"type": "text", "text": "Tests added."}), "u6"),
    )


def test_a_compacted_claude_code_log_is_one_conversation_per_compaction():
    streamed = []
    for transcript in read_transcripts("log.jsonl", io.BytesIO(compacted_log())):
        streamed.append([p.text for m in transcript.messages for p in m.parts])
    assert streamed == [["Build the parser.", "Parser built."],
                        ["This session is being continued. Summary: a parser was built.", "Continuing.",
                         "Now add tests.", "Tests added."]]
    collected = list(read_transcripts("log.jsonl", io.BytesIO(compacted_log())))  # read ahead first
    assert [t.line for t in collected] == [1, 4]
    assert [len(t.materialize().messages) for t in collected] == [2, 4]


def test_commands_on_a_compacted_log(tmp_path):
    from conftest import run_cli
    path = tmp_path / "session.jsonl"
    path.write_bytes(compacted_log())
    estimate = orjson.loads(run_cli("estimate", "--json", str(path)).stdout)
    assert [f["path"] for f in estimate["files"]] == [str(path), f"{path}:4"]
    fitted = run_cli("fit", str(path))
    assert fitted.returncode == 0
    payload = orjson.loads(fitted.stdout)
    assert "Build the parser." not in str(payload) and len(payload["messages"]) == 4
    assert "compacted 1 time" in fitted.stderr.decode()
    replayed = orjson.loads(run_cli("replay", "--json", str(path), "-p", "ctxfit").stdout)
    assert [f["path"] for f in replayed["files"]] == [str(path), f"{path}:4"]
    assert replayed["policies"]["ctxfit"]["calls"] == 3
