"""What a reader keeps of each message is its bytes, not the spare capacity of the buffer that
serialized them (issue #24 item 2: orjson's output reserved ~10x the length of each message kept
as `Message.raw`, ~270 MB of a 256 MB Claude Code log's peak)."""

from __future__ import annotations

import io
import tracemalloc

import orjson

from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.sdk import as_request_dict


def _claude_code_log(replies: int) -> bytes:
    lines = []
    for i in range(replies):
        lines.append({"type": "assistant", "uuid": f"a{i}", "sessionId": "s", "message": {
            "id": f"msg_{i}", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"path": f"f{i}"}}]}})
        lines.append({"type": "user", "uuid": f"u{i}", "sessionId": "s", "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x" * 300}]}})
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def _kept_per_byte(make) -> float:
    """Memory allocated while `make()` runs and still held by what it returns, per byte of
    the raw JSON it returns."""
    tracemalloc.start()
    try:
        kept = make()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return held / sum(len(raw) for raw in kept)


def test_a_claude_code_log_keeps_its_rebuilt_messages_at_their_size():
    data = _claude_code_log(500)

    def read() -> list[bytes]:
        [transcript] = read_transcripts("log.jsonl", io.BytesIO(data), "claude-code")
        return [message.raw for message in transcript.materialize().messages]

    # The parts' text and the messages themselves cost about as much again; a 4 KB buffer per
    # message (what orjson reserves) would be ~10x.
    assert _kept_per_byte(read) < 4


def test_a_library_history_keeps_each_dict_at_its_size():
    history = [{"role": "user", "content": f"question {i}: " + "y" * 200} for i in range(2000)]
    assert _kept_per_byte(lambda: [as_request_dict(item).raw for item in history]) < 1.5
