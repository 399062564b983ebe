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
