"""A big Claude Code log or Codex rollout (issue #24): `estimate` has its messages estimated on
every core (`formats.measures`), `fit` and `replay` hold it in outline (`fleet.log_outline`).
Every real log, with the thresholds lowered so that the small logs take those paths too, gives
exactly what reading it whole in one process gives: the estimate's figures, the payload and
report of `fit`, and the replay's results."""

from __future__ import annotations

import pytest
from conftest import REALWORLD, SAMPLES, needs_realworld
from typer.testing import CliRunner

from ctxfit_cli.cli.app import app
from ctxfit_cli.fleet import estimate_file, log_outline, policy_runs, work
from ctxfit_cli.formats.workers import Workers
from ctxfit_cli.replay.policies import DEFAULT_POLICIES
from ctxfit_cli.formats import measures

LOGS = sorted([*(REALWORLD / "claude-code").glob("*.jsonl"), *(REALWORLD / "codex").glob("*.jsonl")])


def _small_paths(patch) -> None:
    """Every log takes the big-log paths, cut into many small pieces."""
    patch.setattr(measures, "MIN_BYTES", 0)
    patch.setattr(measures, "PIECE_BYTES", 16 << 10)
    patch.setattr(log_outline, "MIN_BYTES", 0)


def _one_process(patch) -> None:
    """Every log is read whole, in one process, as before the big-log paths."""
    patch.setattr(measures, "MIN_BYTES", 1 << 60)
    patch.setattr(log_outline, "MIN_BYTES", 1 << 60)
    patch.setattr(estimate_file, "STREAMED_FORMATS", ())


def _both(monkeypatch, run) -> tuple:
    with monkeypatch.context() as patch:
        _small_paths(patch)
        big = run()
    with monkeypatch.context() as patch:
        _one_process(patch)
        whole = run()
    return big, whole


def _estimate(path: str, **job) -> list:
    result = work.run_file(path, work.Job("estimate", describe=False, **job))
    assert result.error is None and result.fatal is None, (result.error, result.fatal)
    return [(i["report"].to_dict(), i["usage"], i["repairs"]) for u in result.units for i in u.items]


def _replay(path: str) -> list:
    result = work.run_file(path, work.Job("replay", describe=False, budget=30_000))
    assert result.error is None and result.fatal is None, (result.error, result.fatal)
    return [item for unit in result.units for item in unit.items]


def _fit(tmp_path, path: str, *args: str) -> tuple[int, bytes, bytes, str]:
    out, report = tmp_path / "payload.json", tmp_path / "report.json"
    for made in (out, report):
        made.unlink(missing_ok=True)
    run = CliRunner().invoke(app, ["fit", path, "-o", str(out), "--report", str(report), *args])
    payload = out.read_bytes() if out.exists() else b""
    return run.exit_code, payload, report.read_bytes() if report.exists() else b"", run.output


def _log_ids(path) -> str:
    return path.name[:40]


@needs_realworld
@pytest.mark.parametrize("path", LOGS, ids=_log_ids)
def test_a_real_log_estimated_on_every_core_gives_the_figures_of_one_process(monkeypatch, path):
    missed = []
    exit_ = measures.Window.__exit__

    def counting(self, *exc):
        missed.append((self.missed, len(self.jobs)))
        return exit_(self, *exc)

    monkeypatch.setattr(measures.Window, "__exit__", counting)
    for job in ({}, {"fixed_tokens": 0}):
        big, whole = _both(monkeypatch, lambda: _estimate(str(path), **job))  # noqa: B023
        assert big == whole
    # The workers estimated the messages (the reader only those cut at a piece's edge), where
    # the log names a model (else the seed rule counts it: no workers).
    assert all(m <= 3 * pieces for m, pieces in missed)


@needs_realworld
@pytest.mark.parametrize("path", LOGS, ids=_log_ids)
def test_a_real_log_held_in_outline_fits_to_the_same_payload(monkeypatch, tmp_path, path):
    for args in (["--budget", "20000", "--json"], ["--budget", "60000", "--profile", "seed"]):
        big, whole = _both(monkeypatch, lambda: _fit(tmp_path, str(path), *args))  # noqa: B023
        assert big == whole, args


@needs_realworld
@pytest.mark.parametrize("path", LOGS, ids=_log_ids)
def test_a_real_log_held_in_outline_replays_the_same(monkeypatch, path):
    """Held in outline or whole, a big log's policies are replayed side by side, each in a forked
    worker (`fleet/policy_runs.py`): the same results either way."""
    sent: list[str] = []
    real_map = Workers.map

    def counted(self, function, jobs, *, name):
        jobs = list(jobs)
        sent.extend(job for job in jobs if function is policy_runs._replay_held)
        return real_map(self, function, jobs, name=name)

    monkeypatch.setattr(Workers, "map", counted)
    monkeypatch.setattr(policy_runs, "cores", lambda: 2)
    monkeypatch.setattr(policy_runs, "MIN_BYTES", 0)  # (in the one-process run too: the same)
    big, whole = _both(monkeypatch, lambda: _replay(str(path)))
    assert big == whole
    # In both runs every policy of every conversation went to a worker.
    assert len(sent) == 2 * len(big) * len(DEFAULT_POLICIES)


@pytest.mark.parametrize("name", ["claude_code_session.jsonl", "codex_rollout.jsonl"])
def test_a_sample_log_takes_the_big_log_paths_to_the_same_results(monkeypatch, tmp_path, name):
    path = str(SAMPLES / name)
    big, whole = _both(monkeypatch, lambda: _estimate(path))
    assert big == whole
    big, whole = _both(monkeypatch, lambda: _fit(tmp_path, path, "--budget", "8000"))
    assert big == whole and big[0] == 0 and big[1]
    big, whole = _both(monkeypatch, lambda: _replay(path))
    assert big == whole


def test_an_outline_holds_no_text_and_reads_back_what_a_plan_sends(monkeypatch):
    monkeypatch.setattr(log_outline, "MIN_BYTES", 0)
    from ctxfit_cli.formats import read_transcripts

    path = str(SAMPLES / "claude_code_session.jsonl")
    with open(path, "rb") as stream:
        [transcript] = read_transcripts(path, stream)
        outline = log_outline.read_outline(transcript, path, None)
    with open(path, "rb") as stream:
        [whole] = [t.materialize() for t in read_transcripts(path, stream)]
    try:
        held = outline.transcript.messages
        assert len(held) == len(whole.messages) and all(not m.raw for m in held)
        assert not any(p.text for m in held for p in m.parts)
        for kept, full in zip(held, whole.messages):
            back = outline.full(kept)
            assert (back.raw, back.parts, back.role, back.line) == (full.raw, full.parts, full.role, full.line)
    finally:
        outline.close()


@pytest.mark.parametrize("compacted", [False, True])
def test_a_log_compacted_or_ending_with_another_family_takes_the_big_log_paths_to_the_same_results(
    monkeypatch, tmp_path, compacted
):
    # Its last reply names another family's model: the workers, started with the first model's
    # counter, are stopped, and the log is read again whole with the right one.
    from test_log_estimate import _switched_model

    path = _switched_model(tmp_path, compacted)
    big, whole = _both(monkeypatch, lambda: _estimate(path))
    assert big == whole and big[-1][1]["counter"].startswith("profile:o200k")
    big, whole = _both(monkeypatch, lambda: _fit(tmp_path, path, "--budget", "8000", "--json"))
    assert big == whole and big[0] == 0
    big, whole = _both(monkeypatch, lambda: _replay(path))
    assert big == whole


def test_a_compacted_log_is_estimated_on_every_core_from_where_each_conversation_starts(monkeypatch, tmp_path):
    import orjson

    records = [orjson.loads(line) for line in (SAMPLES / "claude_code_session.jsonl").read_bytes().splitlines()]
    middle = next(i for i in range(len(records) // 2, len(records)) if records[i].get("type") == "user")
    records.insert(middle + 1, {"type": "system", "subtype": "compact_boundary", "uuid": "b", "sessionId": "s"})
    path = tmp_path / "compacted.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    starts = []
    init = measures.Window.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        starts.append((kwargs.get("line"), self.jobs[0][-2]))

    monkeypatch.setattr(measures.Window, "__init__", recording)
    big, whole = _both(monkeypatch, lambda: _estimate(str(path)))
    assert big == whole and len(big) == 2
    # The second conversation's pieces start at its own first line, not at the file's start.
    (first, at_zero), (second, offset) = starts[:2]
    assert first == 1 and at_zero == 0
    assert offset == len(b"".join(orjson.dumps(r) + b"\n" for r in records[: second - 1]))
