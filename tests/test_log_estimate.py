"""`estimate` of a Claude Code log or a Codex rollout streams (issue #24 item 1): every figure the
same as reading the log whole, in memory that does not grow with the log."""

from __future__ import annotations

import tracemalloc

import orjson
import pytest
from conftest import REALWORLD, SAMPLES, needs_realworld

from ctxfit_cli.counters import char_classes
from ctxfit_cli.fleet import estimate_file, log_estimate, work

JOBS = [work.Job("estimate", describe=False), work.Job("estimate", describe=False, profile="seed"),
        work.Job("estimate", describe=False, fixed_tokens=0), work.Job("estimate", describe=False, fixed_tokens=5000),
        work.Job("estimate", describe=False, window=100_000, top=3)]


def _figures(path: str, job: work.Job) -> list:
    result = work.run_file(path, job)
    assert result.error is None and result.fatal is None, (result.error, result.fatal)
    return [(item["report"].to_dict(), item["usage"], item["repairs"], item["still_being_written"])
            for unit in result.units for item in unit.items]


def _as_read_whole(monkeypatch, path: str, job: work.Job) -> list:
    with monkeypatch.context() as patch:
        patch.setattr(estimate_file, "STREAMED_FORMATS", ())
        return _figures(path, job)


def _switched_model(tmp_path, compacted: bool) -> str:
    """The Claude Code sample whose last reply names another family's model (so the counter is
    known only at the end), optionally compacted in the middle."""
    records = [orjson.loads(line) for line in (SAMPLES / "claude_code_session.jsonl").read_bytes().splitlines()]
    last = max(i for i, r in enumerate(records) if r.get("type") == "assistant")
    records[last]["message"]["model"] = "gpt-4o"
    if compacted:
        middle = next(i for i in range(len(records) // 2, len(records)) if records[i].get("type") == "user")
        records.insert(middle + 1, {"type": "system", "subtype": "compact_boundary", "uuid": "b", "sessionId": "s"})
    path = tmp_path / "switched.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return str(path)


@pytest.mark.parametrize("job", JOBS, ids=lambda j: f"{j.profile}-{j.fixed_tokens}-{j.window}")
@pytest.mark.parametrize("name", ["claude_code_session.jsonl", "codex_rollout.jsonl"])
def test_a_streamed_sample_gives_the_figures_of_the_log_read_whole(monkeypatch, name, job):
    path = str(SAMPLES / name)
    assert _figures(path, job) == _as_read_whole(monkeypatch, path, job)


@pytest.mark.parametrize("compacted", [False, True])
def test_a_log_that_ends_with_another_family_is_counted_again_with_its_counter(monkeypatch, tmp_path, compacted):
    path = _switched_model(tmp_path, compacted)
    streamed = _figures(path, JOBS[0])
    assert streamed == _as_read_whole(monkeypatch, path, JOBS[0])
    assert streamed[-1][1]["counter"].startswith("profile:o200k")


@needs_realworld
@pytest.mark.parametrize("folder", ["claude-code", "codex"])
def test_every_real_log_streams_to_the_figures_of_the_log_read_whole(monkeypatch, folder):
    logs = sorted((REALWORLD / folder).glob("*.jsonl"))
    assert logs
    for path in logs:
        for job in JOBS[:2]:
            assert _figures(str(path), job) == _as_read_whole(monkeypatch, str(path), job), path.name


def test_a_big_log_is_estimated_in_memory_that_does_not_grow_with_it(tmp_path, monkeypatch):
    """~10 MB of Claude Code log: read whole, its messages alone would hold more than the file.
    What is held grows with its replies (each one's running total, call and spend: ~0.5 KB),
    not with its text: the same log with results half as long takes about as much."""
    _figures(str(SAMPLES / "claude_code_session.jsonl"), JOBS[0])  # what is loaded once is not counted:
    char_classes.class_counts("x" * char_classes.NUMPY_AFTER_CHARS)  # the modules, numpy
    peaks, sizes = [], []
    for repeat in (100, 200):
        lines = []
        for i in range(1500):
            lines.append({"type": "assistant", "uuid": f"a{i}", "sessionId": "s", "message": {
                "id": f"msg_{i}", "role": "assistant", "model": "claude-sonnet-4-5",
                "usage": {"input_tokens": 1000 + i},
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"path": f"f{i}"}}]}})
            lines.append({"type": "user", "uuid": f"u{i}", "sessionId": "s", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"line {i}: Привет, мир " * repeat}]}})
        path = tmp_path / f"big{repeat}.jsonl"
        path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
        del lines
        tracemalloc.start()
        try:
            _figures(str(path), JOBS[0])
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        sizes.append(path.stat().st_size)
    assert peaks[1] < sizes[1] / 3, (peaks, sizes)
    assert peaks[1] - peaks[0] < (sizes[1] - sizes[0]) / 10, (peaks, sizes)
    assert "claude-code" in log_estimate.STREAMED_FORMATS


@pytest.mark.parametrize("name", ["claude_code_session.jsonl", "codex_rollout.jsonl"])
def test_a_log_that_names_its_model_late_is_counted_again_with_its_counter(monkeypatch, name):
    monkeypatch.setattr(log_estimate, "READ_AHEAD", 1)  # its first message names no model: seed guessed
    path = str(SAMPLES / name)
    streamed = _figures(path, JOBS[0])
    assert streamed == _as_read_whole(monkeypatch, path, JOBS[0])
    assert streamed[0][1]["counter"] != "seed"
