"""Issue #20 R12: a transcript mixing the two APIs' content blocks is bad input, checked per
dialect like the tools (`core/validate.py: foreign_blocks`), never fitted as one dialect and read
back as the other."""

from __future__ import annotations

import orjson
import pytest

from conftest import SAMPLES, run_cli
from test_hardening import one_error_line
from ctxfit_cli import BadInput, fit, validate_request

OPENAI = SAMPLES / "openai_agent.openai.jsonl"
ANTHROPIC_IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
ANTHROPIC_RESULT = {"type": "tool_result", "tool_use_id": "call_1", "content": "r"}


def _openai_with(block: dict) -> bytes:
    """The OpenAI sample (tool_calls from its third line) with `block` in its last user turn."""
    lines = OPENAI.read_bytes().splitlines()
    last_user = max(i for i, line in enumerate(lines) if orjson.loads(line).get("role") == "user")
    message = orjson.loads(lines[last_user])
    text = message["content"] if isinstance(message["content"], str) else "go"
    message["content"] = [{"type": "text", "text": text}, block]
    lines[last_user] = orjson.dumps(message)
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize(("block", "kind"), [(ANTHROPIC_IMAGE, "image"), (ANTHROPIC_RESULT, "tool_result")])
def test_an_openai_transcript_with_anthropic_blocks_is_bad_input(tmp_path, block, kind):
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(_openai_with(block))
    for args in (["fit", "--budget", "20000"], ["plan"]):
        message = one_error_line(run_cli(*args, str(path)), 3)
        assert "not a valid openai request as read" in message
        assert f"a '{kind}' block is Anthropic's; an OpenAI message takes" in message


@pytest.mark.parametrize("block", [ANTHROPIC_IMAGE, ANTHROPIC_RESULT,
                                   {"type": "thinking", "thinking": "hm", "signature": "s"}])
def test_the_validator_refuses_anthropic_blocks_in_an_openai_request(block):
    request = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, block]}]}
    problems = validate_request(request, "openai")
    assert problems and f"a '{block['type']}' block is Anthropic's" in problems[0]


def test_the_validator_refuses_openai_parts_in_an_anthropic_request():
    part = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    request = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, part]}]}
    assert validate_request(request, "anthropic") == [
        "messages[0]: content[1]: a 'image_url' block is OpenAI's; an Anthropic message takes text, image, "
        "document, tool_use, tool_result, thinking: the transcript mixes the two APIs' formats"]
    assert validate_request(request, "openai") == []


def test_the_library_refuses_a_mixed_history():
    history = [{"role": "user", "content": "go"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "call_1", "content": "r"},
               {"role": "user", "content": [{"type": "text", "text": "and this"}, ANTHROPIC_IMAGE]}]
    with pytest.raises(BadInput, match="a 'image' block is Anthropic's"):
        fit(history, budget=10_000)
