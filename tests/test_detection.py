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
