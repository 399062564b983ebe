"""A Claude Code log read in pieces on several processes gives exactly what one process gives.

Pieces are forced small (many per log) so that cuts land in the middle of replies, between a
call and its result, next to repairs: every figure of the estimate, the repairs with their line
numbers, what the log says about being written, and the spend it records must be the one-process
reading's. A log the pieces cannot give so (compacted, a line cut short) is read in one process.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import REALWORLD, SAMPLES, needs_realworld

from ctxfit_cli.fleet import log_split, work
from ctxfit_cli.fleet.spend import spend_of_file
from ctxfit_cli.fleet.job import Job

PIECES = (2, 3, 7, 50)


def one_process(path: Path) -> tuple:
    result = work.run_file(str(path), Job("estimate", describe=False, split_big_files=False))
    assert result.error is None and result.empty is None
    [item] = result.units[0].items
    spend = spend_of_file(str(path), "claude-code")
    return item["report"].to_dict(), item["usage"], item["repairs"], item["still_being_written"], spend


def in_pieces(path: Path, pieces: int) -> tuple | None:
    split = log_split.estimate_split(
        str(path), str(path), None, None, window=None, fixed_tokens=None, top_n=5, pieces=pieces, workers=2
    )
    if split is None:
        return None
    item = log_split.estimate_entry(split.transcript, split.estimate.report, None, split.estimate.usage)
    return item["report"].to_dict(), item["usage"], item["repairs"], item["still_being_written"], split.spend


def assert_same_in_pieces(path: Path) -> None:
    expected = one_process(path)
    for pieces in PIECES:
        got = in_pieces(path, pieces)
        assert got is not None, f"{path.name} in {pieces} pieces was not read in pieces"
        assert got == expected, f"{path.name} in {pieces} pieces"


def without_compactions(source: Path, target: Path) -> Path:
    target.write_bytes(
        b"".join(line for line in source.read_bytes().splitlines(True) if b"compact_boundary" not in line)
    )
    return target


def test_sample_log_in_pieces():
    assert_same_in_pieces(SAMPLES / "claude_code_session.jsonl")


@needs_realworld
@pytest.mark.parametrize(
    "name",
    [p.name for p in sorted((REALWORLD / "claude-code").glob("*.jsonl"))] if REALWORLD.is_dir() else [],
)
def test_real_logs_in_pieces(name, tmp_path):
    path = REALWORLD / "claude-code" / name
    if b"compact_boundary" in path.read_bytes():
        # A compacted log is several conversations: read in one process, whatever the pieces.
        assert all(in_pieces(path, pieces) is None for pieces in PIECES)
        path = without_compactions(path, tmp_path / name)  # one conversation, repairs and all
    assert_same_in_pieces(path)


@needs_realworld
def test_result_left_out_in_pieces(tmp_path):
    """A result missing mid-log: the reply is combined with the next and its call answered,
    each repair named by a line that moves with the lines of the pieces before it."""
    source = REALWORLD / "claude-code" / "full-session-four.jsonl"
    lines = source.read_bytes().splitlines(True)
    results = [i for i, line in enumerate(lines) if b'"tool_result"' in line]
    assert len(results) > 4
    for drop in (results[1], results[len(results) // 2]):
        path = tmp_path / f"dropped-{drop}.jsonl"
        path.write_bytes(b"".join(line for i, line in enumerate(lines) if i != drop))
        expected = one_process(path)
        assert any("has no result" in repair for repair in expected[2])
        for pieces in PIECES:
            got = in_pieces(path, pieces)
            assert got is None or got == expected, f"{path.name} in {pieces} pieces"


def test_cut_last_line_is_read_in_one_process(tmp_path):
    """A live log's last line cut short: the pieces leave it to the one-process reading."""
    data = (SAMPLES / "claude_code_session.jsonl").read_bytes()
    path = tmp_path / "live.jsonl"
    path.write_bytes(data + data.splitlines(True)[-1][:40])
    assert all(in_pieces(path, pieces) is None for pieces in PIECES)
    one_process(path)  # (read, the cut line named)


def test_estimate_of_a_big_log_reads_it_in_pieces(tmp_path, monkeypatch):
    """`run_file` takes the pieces' reading for a big log, spend included, and gives the
    one-process item."""
    path = SAMPLES / "claude_code_session.jsonl"
    monkeypatch.setattr(log_split, "MIN_BYTES", 0)
    calls = []
    real = log_split.estimate_split
    monkeypatch.setattr(log_split, "estimate_split", lambda *a, **k: calls.append(1) or real(*a, **k))
    result = work.run_file(str(path), Job("estimate", describe=False))
    [item] = result.units[0].items
    assert calls and item["spend"] == spend_of_file(str(path), "claude-code")
    expected = one_process(path)
    assert (item["report"].to_dict(), item["usage"], item["repairs"], item["still_being_written"]) == expected[:4]
    assert orjson.dumps(item["report"].to_dict()) == orjson.dumps(expected[0])


def test_blank_replies_between_pieces(tmp_path):
    """Replies that hold only blank text (dropped, and the messages around them combined) read
    the same in pieces, wherever the cuts fall, or the log is read in one process."""
    lines = (SAMPLES / "claude_code_session.jsonl").read_bytes().splitlines(True)
    out, blank, replies = [], 0, 0
    for line in lines:
        record = orjson.loads(line)
        replies += record.get("type") == "assistant"
        if record.get("type") == "assistant" and replies in (4, 11):
            blank += 1
            message = {**record["message"], "id": f"msg_blank_{blank}", "content": [{"type": "text", "text": "\n\n"}]}
            out.append(orjson.dumps({**record, "message": message}) + b"\n")
        out.append(line)
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"".join(out))
    expected = one_process(path)
    assert any("dropped an empty assistant message" in repair for repair in expected[2])
    used = 0
    for pieces in range(2, 60, 3):
        got = in_pieces(path, pieces)
        assert got is None or got == expected, f"{pieces} pieces"
        used += got is not None
    assert used  # (some cuts fall where the pieces join)


def test_a_piece_that_makes_no_message_is_not_joined():
    """A piece holding only a blank reply makes no message on its own (the reply is left out as
    one being written); read with its neighbours it is dropped as empty: such pieces are not
    joined (the log is read in one process)."""
    piece = log_split.log_pieces.Piece(None, 3, 7, None, [], 0, [], [], [], ["x"], None, None, 0, 0, ({}, []))
    whole = log_split.log_pieces.Piece(
        None, 3, 1, None, [], 0, [], [], [], [], ("user", 1), ("user", 2), 0, 0, ({}, [])
    )
    assert not log_split._joins([whole, piece])
    assert log_split._joins([whole, piece._replace(cut=0, open_end=[])])
