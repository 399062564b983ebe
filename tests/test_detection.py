"""An Anthropic transcript whose first Anthropic-only block comes late is still read as
Anthropic, from a file (scanned ahead, never held) and from standard input (issue #9)."""

from __future__ import annotations

import io

import orjson
import pytest

from ctxfit_cli.core.model import Role
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.detection import SNIFF_LIMIT
from conftest import run_cli


def late_anthropic(chat_lines: int) -> bytes:
    lines = []
    for i in range(chat_lines // 2):
        lines += [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": f"answer {i}"}]
    lines += [{"role": "user", "content": "list files"},
              {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]}]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


class Unseekable(io.BytesIO):
    def seekable(self) -> bool:
        return False


@pytest.mark.parametrize("stream", [io.BytesIO, Unseekable], ids=["file", "stdin"])
def test_a_late_first_anthropic_block_is_found(stream):
    [transcript] = read_transcripts("late.jsonl", stream(late_anthropic(3 * SNIFF_LIMIT)))
    assert transcript.dialect == "anthropic"
    messages = list(transcript.messages)
    assert len(messages) == 3 * SNIFF_LIMIT + 3 and messages[-1].result_ids == ("t1",)
    assert messages[-2].role is Role.ASSISTANT and messages[-2].call_ids == ("t1",)


def test_a_file_without_a_decisive_line_is_openai():
    data = b"".join(orjson.dumps({"role": "user", "content": f"q{i}"}) + b"\n" for i in range(2 * SNIFF_LIMIT))
    [transcript] = read_transcripts("plain.jsonl", io.BytesIO(data))
    assert transcript.dialect == "openai" and len(list(transcript.messages)) == 2 * SNIFF_LIMIT


def test_the_cli_fits_a_late_anthropic_transcript_from_a_file_and_from_stdin(tmp_path):
    data = late_anthropic(2 * SNIFF_LIMIT)
    path = tmp_path / "late.jsonl"
    path.write_bytes(data)
    for args, given in (([str(path)], None), (["-"], data)):
        done = run_cli("fit", *args, "--budget", "2000", "--json", input=given)
        assert done.returncode == 0, done.stderr
        report = orjson.loads(done.stdout)["reports"][0]
        assert report["dialect"] == "anthropic"


# --- detection reads on to a record it recognises (issue #34) ---------------------------

def codex_rollout_after(unknown: int) -> bytes:
    """A Codex rollout that opens with `unknown` records of a type no reader knows."""
    lines = [{"type": f"new-kind-{i % 3}", "payload": {"x": i}} for i in range(unknown)]
    lines += [{"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "r1"}},
              {"timestamp": "2026-01-01T00:00:01Z", "type": "response_item",
               "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}}]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


@pytest.mark.parametrize("stream", [io.BytesIO, Unseekable])
def test_records_no_format_knows_before_the_first_it_does_are_skipped_and_counted(stream):
    from ctxfit_cli.formats.detection import DETECT_RECORDS
    from ctxfit_cli.formats.skipped import Skipped

    skipped = Skipped()
    [transcript] = read_transcripts("r.jsonl", stream(codex_rollout_after(DETECT_RECORDS - 1)), None, None, skipped)
    assert transcript.format == "codex" and [m.role for m in transcript.messages] == [Role.USER]
    assert skipped.as_dict()["records"] == {"new-kind-0": 21, "new-kind-1": 21, "new-kind-2": 21}


def test_detection_is_bounded_and_its_refusal_says_what_it_saw():
    from ctxfit_cli.errors import BadInput
    from ctxfit_cli.formats.detection import DETECT_RECORDS

    with pytest.raises(BadInput, match=f"none of its first {DETECT_RECORDS} records") as refused:
        list(read_transcripts("r.jsonl", io.BytesIO(codex_rollout_after(DETECT_RECORDS))))
    assert "new-kind-0, new-kind-1, new-kind-2" in str(refused.value)


def test_detection_reads_at_most_a_megabyte_of_unknown_records():
    from ctxfit_cli.errors import BadInput

    big = orjson.dumps({"type": "bulky", "blob": "x" * 600_000}) + b"\n"
    with pytest.raises(BadInput, match="none of its first 2 records"):
        list(read_transcripts("r.jsonl", io.BytesIO(big * 2 + codex_rollout_after(0))))


