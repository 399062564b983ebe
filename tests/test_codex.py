"""The Codex reader rebuilds the request the model received (issue #9), on hand-made
rollouts shaped as the real ones are and on the real rollouts."""

from __future__ import annotations

import io

import orjson
import pytest

from ctxfit_cli.core.fitting import FitOptions
from ctxfit_cli.core.model import PartKind, Role
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.payload import fit_transcript
from conftest import REALWORLD, needs_realworld
from test_formats import records

CODEX = sorted((REALWORLD / "codex").glob("*.jsonl"))


def item(payload: dict, kind: str = "response_item") -> dict:
    return {"timestamp": "t", "type": kind, "payload": payload}


def meta(**fields) -> dict:
    return item({"id": "s", "cwd": "/p", **fields}, "session_meta")


def text(role: str, words: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return item({"type": "message", "role": role, "content": [{"type": kind, "text": words}]})


def call(call_id: str) -> dict:
    return item({"type": "function_call", "name": "shell", "arguments": '{"cmd":"ls"}', "call_id": call_id})


def output(call_id: str, value: object = "ok") -> dict:
    return item({"type": "function_call_output", "call_id": call_id, "output": value})


def read_all(*lines: dict):
    return [t.materialize() for t in read_transcripts("rollout.jsonl", io.BytesIO(records(*lines)))]


def test_a_message_between_a_call_and_its_output_moves_after_the_output():
    [transcript] = read_all(
        meta(base_instructions={"text": "You are Codex."}),
        text("user", "List the files."),
        text("assistant", "Listing."),
        call("c1"), call("c2"),
        output("c1"),
        text("developer", "Approval mode changed."),
        output("c2"),
        text("assistant", "Done."),
    )
    assert [p.text for p in transcript.system[0].parts] == ["You are Codex."]
    roles = [m.role for m in transcript.messages]
    assert roles == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.TOOL, Role.SYSTEM, Role.ASSISTANT]
    assert transcript.repairs == []
    payload = orjson.loads(fit_transcript(transcript, FitOptions(budget=10_000)).payload)
    assert validate_request(payload, "openai") == []


def test_a_compaction_starts_a_new_conversation_made_of_its_replacement_history():
    history = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Summary so far."}]}]
    transcripts = read_all(
        meta(instructions="Be careful."),
        text("user", "Old task."), text("assistant", "Old answer."),
        item({"message": "", "replacement_history": history}, "compacted"),
        text("user", "New task."), text("assistant", "New answer."),
    )
    assert [[p.text for m in t.messages for p in m.parts] for t in transcripts] == [
        ["Old task.", "Old answer."], ["Summary so far.", "New task.", "New answer."]]
    assert [t.line for t in transcripts] == [1, 4]
    assert all([p.text for p in t.system[0].parts] == ["Be careful."] for t in transcripts)


def test_null_images_are_left_out_and_list_outputs_become_their_text():
    [transcript] = read_all(
        item({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Look."}, {"type": "input_image", "image_url": None}]}),
        call("c1"),
        output("c1", [{"type": "input_text", "text": "a.txt"}, {"type": "input_text", "text": "b.txt"}]),
    )
    user, _, result = transcript.messages
    assert [p.text for p in user.parts] == ["Look."] and b"None" not in user.raw
    assert result.parts[0].text == "a.txt\nb.txt" and b"input_text" not in result.raw


def test_a_rollout_ending_on_an_open_call_gets_an_aborted_result():
    [transcript] = read_all(text("user", "Run it."), call("c1"))
    assert transcript.messages[-1].role is Role.TOOL
    assert transcript.messages[-1].parts[0].text.startswith("aborted")
    assert len(transcript.repairs) == 1 and "'c1'" in transcript.repairs[0]


@pytest.mark.parametrize("path", CODEX, ids=lambda p: p.name)
def test_real_rollouts_give_valid_requests_at_full_size(path):
    for transcript in read_transcripts(str(path), path.open("rb")):
        transcript = transcript.materialize()
        assert not any(b'"None"' in m.raw for m in transcript.messages)
        payload = orjson.loads(fit_transcript(transcript, FitOptions(budget=2_000_000, window=2_000_000)).payload)
        assert validate_request(payload, "openai") == []


@needs_realworld
def test_the_compacted_real_rollout_is_two_conversations():
    path = next(p for p in CODEX if "T12-54-34" in p.name)
    lines = [t.line for t in read_transcripts(str(path), path.open("rb"))]
    assert lines == [1, 1788]
