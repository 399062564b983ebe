"""The OpenAI Responses API as a dialect: `input` items read, fitted and written back, through
the library (`fit`, `Session`, `count`, dicts and the openai SDK's objects), a request file, and
the validator's rules; and on the items real Codex rollouts hold."""

from __future__ import annotations

import copy
import io
import json

import orjson
import pytest
from openai.types.responses import (ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText,
                                    ResponseReasoningItem)

from ctxfit_cli import CLEARED_RESULT, TRIMMED_HISTORY, Session, count, fit, validate_request
from ctxfit_cli.core.fitting import FitOptions
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.payload import fit_transcript
from ctxfit_cli.sdk import as_request_dict
from conftest import REALWORLD, ascii_text, needs_realworld, run_cli

TOOLS = [{"type": "function", "name": "shell", "parameters": {"type": "object"}},
         {"type": "custom", "name": "apply_patch"}]
INSTRUCTIONS = "You are Codex, a coding agent."


def codex_loop(steps: int, tokens: int = 600) -> list[dict]:
    """What Codex sends after `steps` replies: a developer message, the task, then per step a
    reasoning item (encrypted), a call of one of its kinds, and the call's output."""
    items = [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sandbox: off"}]},
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the bug."}]}]
    for i in range(steps):
        items.append({"type": "reasoning", "id": f"rs_{i}", "summary": [{"type": "summary_text", "text": f"step {i}"}],
                      "content": None, "encrypted_content": f"gAAAA{i:04d}" + "Zm9v" * 40})
        if i % 3 == 0:
            items.append({"type": "function_call", "name": "shell", "arguments": json.dumps({"cmd": ["cat", f"f{i}"]}),
                          "call_id": f"call_{i}"})
            items.append({"type": "function_call_output", "call_id": f"call_{i}", "output": ascii_text(tokens)})
        elif i % 3 == 1:
            items.append({"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch", "call_id": f"call_{i}"})
            items.append({"type": "custom_tool_call_output", "call_id": f"call_{i}",
                          "output": [{"type": "input_text", "text": ascii_text(tokens)}]})
        else:
            items.append({"type": "local_shell_call", "id": f"ls_{i}", "call_id": f"call_{i}", "status": "completed",
                          "action": {"type": "exec", "command": ["ls"], "env": {}}})
            items.append({"type": "function_call_output", "call_id": f"call_{i}", "output": ascii_text(tokens)})
    return items


def assert_reasoning_kept(sent: list, given: list) -> None:
    """Each reasoning item sent is the one given, followed by the item that followed it."""
    given_at = {id(item): i for i, item in enumerate(given)}
    for i, item in enumerate(sent):
        value = as_request_dict(item).value
        if value.get("type") == "reasoning":
            assert id(item) in given_at  # never changed
            assert sent[i + 1] is given[given_at[id(item)] + 1]


# --- fit() on dicts ------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [3_000, 6_000, 12_000, 100_000])
def test_fit_keeps_replies_whole_and_the_input_unchanged(budget):
    items = codex_loop(24)
    before = copy.deepcopy(items)
    sent = fit(items, budget=budget, system=INSTRUCTIONS, tools=TOOLS)
    assert items == before
    assert validate_request({"input": sent, "instructions": INSTRUCTIONS, "tools": TOOLS}, "responses") == []
    assert count(sent, system=INSTRUCTIONS, tools=TOOLS) <= budget
    assert_reasoning_kept(sent, items)
    kept = {id(item) for item in items}
    for out in sent:  # the caller's very object, or a changed copy
        assert (id(out) in kept) == (out in items)
    if budget >= 100_000:
        assert sent == items and all(a is b for a, b in zip(sent, items))


def test_oldest_outputs_are_cleared_first_and_keep_their_kind():
    items = codex_loop(24)
    sent = fit(items, budget=12_000, system=INSTRUCTIONS, tools=TOOLS)
    outputs = [s for s in sent if s.get("type", "").endswith("_output")]
    cleared = [o for o in outputs if o["output"] == CLEARED_RESULT]
    assert cleared and outputs[:len(cleared)] == cleared  # the oldest, in one run
    assert outputs[-1]["output"] != CLEARED_RESULT
    assert {o["type"] for o in cleared} == {"function_call_output", "custom_tool_call_output"}


def test_trimming_notes_the_first_message_as_responses_text():
    items = codex_loop(40, tokens=1500)
    sent = fit(items, budget=2_000, system=INSTRUCTIONS, tools=TOOLS)
    assert len(sent) < len(items) and sent[0] is items[0]
    first = sent[1]
    assert first["content"][-1] == {"type": "input_text", "text": TRIMMED_HISTORY}
    assert validate_request({"input": sent}, "responses") == []


def test_short_messages_and_text_content_are_read():
    items = [{"role": "user", "content": "hi"},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]},
             {"role": "user", "content": "bye"}]
    assert fit(items, budget=1000) == items
    assert count(items) == count([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                                  {"role": "user", "content": "bye"}], dialect="openai")


# --- the openai SDK's objects ----------------------------------------------------------------


def sdk_loop(steps: int) -> list:
    """A loop that does `input += response.output` (SDK objects) and appends its outputs as dicts."""
    items: list = [{"role": "user", "content": "Read the files."}]
    for i in range(steps):
        items.append(ResponseReasoningItem(id=f"rs_{i}", type="reasoning", summary=[], encrypted_content="enc" * 30))
        items.append(ResponseOutputMessage(id=f"msg_{i}", type="message", role="assistant", status="completed",
                                           content=[ResponseOutputText(type="output_text", text=f"Reading {i}.",
                                                                       annotations=[])]))
        items.append(ResponseFunctionToolCall(type="function_call", call_id=f"call_{i}", name="shell",
                                              arguments='{"cmd": "cat"}', id=f"fc_{i}", status="completed"))
        items.append({"type": "function_call_output", "call_id": f"call_{i}", "output": ascii_text(800)})
    return items


def test_sdk_objects_come_back_as_themselves():
    items = sdk_loop(12)
    sent = fit(items, budget=5_000, tools=TOOLS)
    assert any(s is items[1] for s in sent) or len(sent) < len(items)
    for out in sent:
        if not isinstance(out, dict):
            assert any(out is item for item in items)  # the model's items are never changed
    assert_reasoning_kept(sent, items)
    values = [as_request_dict(s).value for s in sent]
    assert validate_request({"input": values}, "responses") == []
    assert any(v.get("output") == CLEARED_RESULT for v in values)
    assert count(items) == count([as_request_dict(i).value for i in items])


# --- Session ------------------------------------------------------------------------------


def test_session_steps_equal_a_fresh_fit_even_when_a_reply_arrives_in_pieces():
    items = codex_loop(30)
    session = Session(budget=8_000, system=INSTRUCTIONS, tools=TOOLS)
    history: list = items[:2]
    for start in range(2, len(items), 3):
        reasoning, call, output = items[start:start + 3]
        history.append(reasoning)
        history.append(call)  # the reply, then its output: one request per step
        history.append(output)
        assert session.fit(history) == fit(history, budget=8_000, system=INSTRUCTIONS, tools=TOOLS)
    previous = None
    for end in range(5, len(items), 3):  # the ratchet: the cleared set only grows
        sent = session.fit(items[:end])
        cleared = {s["call_id"] for s in sent if s.get("output") == CLEARED_RESULT}
        assert previous is None or previous <= cleared
        previous = cleared


def test_a_developer_message_first_does_not_decide_chat_completions():
    items = codex_loop(6)
    assert items[0]["role"] == "developer"  # reads as Chat Completions too
    session = Session(budget=2_000)
    sent = session.fit(items)
    assert session.dialect == "responses"
    assert validate_request({"input": sent}, "responses") == []


# --- the validator ---------------------------------------------------------------------------


@pytest.mark.parametrize("items, problem", [
    ([{"role": "user", "content": "x"}, {"type": "reasoning", "id": "r", "summary": []}], "reasoning item must be followed"),
    ([{"role": "user", "content": "x"}, {"type": "reasoning", "id": "r", "summary": []}, {"role": "user", "content": "y"}],
     "reasoning item must be followed"),
    ([{"type": "function_call_output", "call_id": "c", "output": "x"}], "does not follow its call"),
    ([{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}], "has no output"),
    ([{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}},
      {"type": "function_call_output", "call_id": "c", "output": "x"}], "arguments"),
])
def test_the_validator_finds_what_the_api_refuses(items, problem):
    problems = validate_request({"input": items}, "responses")
    assert problems and problem in problems[0]


def test_the_validator_accepts_a_message_between_a_call_and_its_output_and_flat_tools():
    items = [{"role": "user", "content": "x"},
             {"type": "local_shell_call", "call_id": "c", "id": "l", "status": "completed", "action": {}},
             {"role": "developer", "content": "approved"},
             {"type": "function_call_output", "call_id": "c", "output": "ok"}]
    assert validate_request({"input": items, "tools": TOOLS}, "responses") == []
    chat_tool = [{"type": "function", "function": {"name": "shell"}}]
    assert "at the top" in validate_request({"input": items, "tools": chat_tool}, "responses")[0]


# --- a request file (ctxfit fit) ------------------------------------------------------------


def test_a_request_file_is_fitted_with_its_items_byte_for_byte(tmp_path):
    items = codex_loop(20)
    body = {"model": "gpt-5-codex", "instructions": INSTRUCTIONS, "input": items, "tools": TOOLS,
            "reasoning": {"effort": "high"}, "store": False, "stream": True}
    raw = json.dumps(body, indent=1).encode()  # pretty-printed: items are kept as minified bytes
    [transcript] = read_transcripts("body.json", io.BytesIO(raw))
    fitted = fit_transcript(transcript, FitOptions(budget=6_000))
    payload = orjson.loads(fitted.payload)
    assert validate_request(payload, "responses") == []
    assert {k: payload[k] for k in ("model", "instructions", "tools", "reasoning", "store")} == \
        {k: body[k] for k in ("model", "instructions", "tools", "reasoning", "store")}
    for item in payload["input"]:
        if item["type"] == "reasoning":  # passed back byte for byte, encrypted content included
            assert orjson.dumps(item) in fitted.payload and item in items
    # (--profile seed: the model the request names would pick its own counter, not the one above)
    result = run_cli("fit", "--budget", "6000", "--profile", "seed", str(_write(tmp_path, raw)))
    assert result.returncode == 0, result.stderr
    assert result.stdout == fitted.payload + b"\n" or result.stdout == fitted.payload


def _write(tmp_path, raw: bytes):
    path = tmp_path / "body.json"
    path.write_bytes(raw)
    return path


# --- real Codex rollouts ----------------------------------------------------------------------


def rollout_items(path) -> tuple[str, list[dict]]:
    """The instructions and the Responses items of a rollout's last conversation, as Codex
    sends them (its own bookkeeping items left out)."""
    instructions, items = "", []
    for line in path.read_bytes().splitlines():
        record = orjson.loads(line)
        payload = record.get("payload") or {}
        if record.get("type") == "session_meta" and not instructions:
            base = payload.get("base_instructions") or payload.get("instructions") or ""
            instructions = base.get("text", "") if isinstance(base, dict) else base
        elif record.get("type") == "compacted":
            items = list(payload.get("replacement_history") or [])
        elif record.get("type") == "response_item" and payload.get("type") not in ("ghost_snapshot", "agent_message"):
            items.append({k: v for k, v in payload.items() if k not in ("internal_chat_message_metadata_passthrough", "metadata")})
    return instructions, items


@needs_realworld
@pytest.mark.parametrize("name", ["rollout-2025-09-24T20-12-23-01997ea4-a70d-7da3-8c20-c736db82a7c5.jsonl",
                                  "rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl",
                                  "localpush_rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"])
def test_real_codex_items_fit_valid_with_reasoning_whole(name):
    instructions, items = rollout_items(REALWORLD / "codex" / name)
    assert any(i.get("type") == "reasoning" for i in items)
    whole = count(items, system=instructions)
    for share in (0.2, 0.5):
        budget = int(whole * share)
        sent = fit(items, budget=budget, system=instructions)
        assert validate_request({"input": sent, "instructions": instructions}, "responses") == []
        assert len(sent) < len(items) or any(s.get("output") == CLEARED_RESULT for s in sent)
        assert_reasoning_kept(sent, items)
        for out in sent:  # what is not cleared or noted is the very item given
            assert any(out is item for item in items) or out.get("output") == CLEARED_RESULT or \
                out["content"][-1]["text"] == TRIMMED_HISTORY
