"""Repairs of broken logs: each makes a valid request and is reported (DESIGN §8, issue #9)."""

from __future__ import annotations

import orjson
import pytest

from ctxfit_cli.core.notes import ABORTED_CALL, OPENING_USER
from ctxfit_cli.core.validate import validate_request
from conftest import read, run_cli


def call(call_id: str) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}


def test_openai_orphan_and_duplicate_results_are_dropped():
    transcript = read([{"role": "user", "content": "go"}, {"role": "tool", "tool_call_id": "ghost", "content": "x"},
                       call("c1"), {"role": "tool", "tool_call_id": "c1", "content": "a"},
                       {"role": "tool", "tool_call_id": "c1", "content": "b"}])
    assert [m.role.value for m in transcript.messages] == ["user", "assistant", "tool"]
    assert len(transcript.repairs) == 2
    assert "test.jsonl:2: dropped a result with no call" in transcript.repairs[0]
    assert "test.jsonl:5: dropped a second result" in transcript.repairs[1]


def test_anthropic_results_are_put_first_in_call_order_and_missing_ones_answered():
    transcript = read([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "ls", "input": {}},
                                          {"type": "tool_use", "id": "b", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "typed meanwhile"},
                                     {"type": "tool_result", "tool_use_id": "b", "content": "B"},
                                     {"type": "tool_result", "tool_use_id": "zzz", "content": "orphan"}]},
    ], format="anthropic")
    content = orjson.loads(transcript.messages[2].raw)["content"]
    assert [(b["type"], b.get("tool_use_id")) for b in content] == [
        ("tool_result", "a"), ("tool_result", "b"), ("text", None)]
    assert content[0]["content"] == ABORTED_CALL and content[0]["is_error"] is True
    assert len(transcript.repairs) == 2  # the orphan dropped, call a answered


def test_an_anthropic_conversation_that_starts_with_the_assistant_is_opened_by_a_constant_user_message():
    transcript = read([{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Hi."}], format="anthropic")
    assert orjson.loads(transcript.messages[0].raw) == {"role": "user", "content": OPENING_USER}
    assert len(transcript.repairs) == 1


def test_an_openai_conversation_may_start_with_the_assistant():
    transcript = read([{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Hi."}], format="openai")
    assert transcript.repairs == [] and len(transcript.messages) == 2


def test_a_valid_transcript_passes_through_byte_for_byte():
    lines = [{"role": "user", "content": "go"}, call("c1"), {"role": "tool", "tool_call_id": "c1", "content": "a"}]
    transcript = read(lines)
    assert transcript.repairs == [] and [orjson.loads(m.raw) for m in transcript.messages] == lines


@pytest.mark.parametrize("command", ["fit", "plan", "estimate", "replay"])
def test_every_command_reports_repairs_on_stderr_and_in_its_json(tmp_path, command):
    path = tmp_path / "live.jsonl"
    path.write_bytes(orjson.dumps({"role": "user", "content": "go"}) + b"\n" + orjson.dumps(call("c1")) + b"\n")
    done = run_cli(command, str(path), "--json")
    assert done.returncode == 0, done.stderr
    [line] = [l for l in done.stderr.decode().splitlines() if l.startswith("repaired ")]
    assert f"{path}:2: call 'c1' has no result" in line
    document = orjson.loads(done.stdout)
    entry = {"fit": lambda d: d["reports"][0], "plan": lambda d: d[0],
             "estimate": lambda d: d["files"][0], "replay": lambda d: d["files"][0]}[command](document)
    assert entry["repairs"] == [line.removeprefix("repaired ")]
    if command == "fit":
        assert validate_request(document["payloads"][0], "openai") == []


# --- repair, never refuse (DESIGN §13, issue #19) ------------------------------------------------


def _jsonl(tmp_path, messages: list[dict]) -> str:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in messages))
    return str(path)


def test_two_user_messages_in_a_row_are_one_turn_in_the_payload(tmp_path):
    """The Messages API combines consecutive turns; ctxfit writes them combined, so every
    consumer (the fitter, a replay, the provider) sees the one turn."""
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]}
    path = _jsonl(tmp_path, [{"role": "user", "content": "Read a.txt."},
                             {"role": "user", "content": [{"type": "text", "text": "And b.txt."}]},
                             use, result, {"role": "assistant", "content": "Done."}])
    done = run_cli("fit", path)
    assert done.returncode == 0, done.stderr
    assert f"repaired {path}:2: two user messages in a row" in done.stderr.decode()
    messages = orjson.loads(done.stdout)["messages"]
    assert messages == [{"role": "user", "content": [{"type": "text", "text": "Read a.txt."},
                                                     {"type": "text", "text": "And b.txt."}]},
                        use, result, {"role": "assistant", "content": "Done."}]
    for command in ("estimate", "sessions", "replay", "plan"):
        assert run_cli(command, path).returncode == 0, command


def test_results_come_first_in_a_combined_user_message():
    transcript = read([{"role": "user", "content": "go"},
                       {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
                       {"role": "user", "content": "typed while it ran"},
                       {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}],
                      format="anthropic")
    content = orjson.loads(transcript.messages[2].raw)["content"]
    assert [b["type"] for b in content] == ["tool_result", "text"] and len(transcript.messages) == 3
    assert validate_request({"messages": [orjson.loads(m.raw) for m in transcript.messages]}, "anthropic") == []


def test_a_message_whose_only_text_block_is_empty_is_dropped_and_its_neighbours_combined(tmp_path):
    path = _jsonl(tmp_path, [{"role": "user", "content": "Hi."},
                             {"role": "assistant", "content": [{"type": "text", "text": ""}]},
                             {"role": "user", "content": "Anyone?"}])
    done = run_cli("fit", path, "--json", "--format", "anthropic")
    assert done.returncode == 0, done.stderr
    document = orjson.loads(done.stdout)
    assert document["payloads"][0]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Hi."}, {"type": "text", "text": "Anyone?"}]}]
    assert [line.split(": ", 1)[1] for line in document["reports"][0]["repairs"]] == [
        "dropped 1 empty or whitespace-only text block", "dropped an empty assistant message",
        "two user messages in a row; combined this one into the one before, as the API combines them"]


@pytest.mark.parametrize("empty", [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}])
def test_an_empty_message_before_a_result_is_dropped_as_anywhere_else(empty):
    """Kept there (a result or system message let it through), it was dropped when the payload
    was read again: read back smaller than promised, refitted to other bytes (fuzz seeds 2387,
    28135 of the session-9 long run)."""
    transcript = read([{"role": "user", "content": "go"},
                       call("c1"), {"role": "tool", "tool_call_id": "c1", "content": "a"},
                       empty, {"role": "tool", "tool_call_id": "ghost", "content": "x"},
                       call("c2"), {"role": "tool", "tool_call_id": "c2", "content": "b"}])
    assert [m.role.value for m in transcript.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert transcript.repairs == [f"test.jsonl:4: dropped an empty {empty['role']} message",
                                  "test.jsonl:5: dropped a result with no call before it (call 'ghost')"]
    payload = [orjson.loads(m.raw) for m in transcript.messages]
    again = read(payload)
    assert again.repairs == [] and [orjson.loads(m.raw) for m in again.messages] == payload


def test_a_reply_left_last_by_a_dropped_result_is_left_out_when_it_is_only_thinking():
    """A result with no call after a thinking-only reply is dropped; the reply is then last and
    not finished: left out as the payload's read-back leaves it out (fuzz seed 13670)."""
    thinking = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "c2ln"}]}
    orphan = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "ghost", "content": "x"}]}
    transcript = read([{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"},
                       {"role": "user", "content": "next"}, thinking, orphan], format="anthropic")
    assert [m.role.value for m in transcript.messages] == ["user", "assistant", "user"]
    assert [r.split(": ", 1)[1] for r in transcript.repairs] == [
        "dropped a result with no call before it (call 'ghost')",
        "the last reply is not finished (only blank text or thinking is written yet): left out, as a request not yet made"]
    payload = [orjson.loads(m.raw) for m in transcript.messages]
    again = read(payload, format="anthropic")
    assert again.repairs == [] and [orjson.loads(m.raw) for m in again.messages] == payload


def test_only_the_refused_part_of_a_message_changes():
    """A whitespace-only block and the keys the API refuses go; every other byte stays, and a
    message with nothing to repair keeps the bytes it came with."""
    reply = {"role": "assistant", "ts": 1, "content": [
        {"type": "text", "text": "\n\n"}, {"type": "thinking", "thinking": "hm", "signature": "c2ln"},
        {"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}}]}
    transcript = read([{"role": "user", "content": "go"}, reply,
                       {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}],
                      format="anthropic")
    assert orjson.loads(transcript.messages[1].raw) == {"role": "assistant", "content": reply["content"][1:]}
    assert transcript.messages[0].raw == b'{"role":"user","content":"go"}'
    assert [r.split(": ", 1)[1] for r in transcript.repairs] == [
        "removed the key the API refuses: 'ts'", "dropped 1 empty or whitespace-only text block"]


def test_openai_keys_the_api_refuses_are_removed_and_blank_parts_dropped():
    transcript = read([{"role": "user", "content": [{"type": "text", "text": " "}, {"type": "text", "text": "go"}],
                        "id": "m1"}, {"role": "assistant", "content": "ok", "name": "bot"}])
    assert [orjson.loads(m.raw) for m in transcript.messages] == [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {"role": "assistant", "content": "ok", "name": "bot"}]
    assert len(transcript.repairs) == 2


def test_the_reply_being_written_is_left_out_and_the_log_said_to_be_still_being_written(tmp_path):
    """Claude Code writes a reply one block at a time: right after its first block ("\\n\\n")
    the request that reply answers was made, and nothing of it is to be sent yet."""
    record = {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "Start."}}
    reply = {"type": "assistant", "uuid": "a1", "sessionId": "s", "message": {
        "id": "msg_1", "role": "assistant", "model": "claude-opus-4-6", "content": [{"type": "text", "text": "\n\n"}]}}
    path = tmp_path / "live.jsonl"
    path.write_bytes(orjson.dumps(record) + b"\n" + orjson.dumps(reply) + b"\n" + orjson.dumps(reply)[:40])
    for command in ("sessions", "estimate"):
        done = run_cli(command, str(path), "--json")
        assert done.returncode == 0, done.stderr
        [item] = orjson.loads(done.stdout)["sessions" if command == "sessions" else "files"]
        assert item["still_being_written"] == ["its last line (3) is cut short", "its last reply is being written"]
        assert "still being written" in run_cli(command, str(path)).stdout.decode()
    done = run_cli("fit", str(path))
    assert done.returncode == 0 and orjson.loads(done.stdout)["messages"] == [{"role": "user", "content": "Start."}]


def test_a_broken_line_before_the_last_is_still_bad_input(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b'{"role":"user","content":"a"}\n{"role":"assi\n{"role":"assistant","content":"b"}\n')
    done = run_cli("estimate", str(path))
    assert done.returncode == 3 and b"broken.jsonl:2" in done.stderr
