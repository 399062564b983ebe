"""A big JSON Lines file estimated on several cores gives exactly what one process gives."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pytest

from ctxfit_cli.formats import parallel
from ctxfit_cli.errors import BadInput
from ctxfit_cli.core.estimate import TranscriptEstimate
from ctxfit_cli.core.fitting import FitOptions
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.core.notes import TRIMMED_HISTORY
from ctxfit_cli.formats.payload import fit_outline, fit_transcript
from conftest import ROOT, Chat, run_cli
from test_fit_properties import SCRIPTS


def sequential(path, top_n=5) -> dict:
    with open(path, "rb") as stream:
        [transcript] = read_transcripts(str(path), stream)
        report = TranscriptEstimate(str(path), transcript.format, top_n=top_n)
        for message in transcript.messages:
            report.add(message)
    return report.to_dict()


def transcript_file(tmp_path, dialect: str, rounds: int = 300, bom: bool = False) -> tuple:
    chat = Chat(dialect).user("Read them all.")
    for n in range(rounds):
        texts = [SCRIPTS[k] * (1 + (n * 7 + i) % 40) for i, k in enumerate(sorted(SCRIPTS))][: 1 + n % 3]
        chat.round(*texts, tool=f"tool_{n % 5}")
        if n % 50 == 49:
            chat.say("Part done.").user("Go on.")
    path = tmp_path / f"big.{dialect}.jsonl"
    data = chat.jsonl().replace(b"\n", b"\r\n") if dialect == "openai" else chat.jsonl()
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    return path, dialect


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
@pytest.mark.parametrize("workers", [2, 3, 7])
def test_pieces_merge_into_exactly_the_sequential_estimate(tmp_path, dialect, workers):
    path, dialect = transcript_file(tmp_path, dialect, bom=workers == 3)
    merged = parallel.estimate_in_parallel(str(path), str(path), dialect, top_n=5, workers=workers)
    assert merged.to_dict() == sequential(path)


def test_a_bad_line_in_a_later_piece_is_reported_with_its_line_in_the_file(tmp_path):
    path, dialect = transcript_file(tmp_path, "anthropic")
    lines = path.read_bytes().splitlines(keepends=True)
    bad_line = len(lines) - 5
    lines[bad_line - 1] = b'{"role": "user", "content": 42}\n'
    path.write_bytes(b"".join(lines))
    with pytest.raises(BadInput) as sequential_error:
        sequential(path)
    with pytest.raises(BadInput) as parallel_error:
        parallel.estimate_in_parallel(str(path), str(path), dialect, top_n=5, workers=3)
    assert str(parallel_error.value) == str(sequential_error.value)
    assert f":{bad_line}: " in str(parallel_error.value)


def test_the_cli_uses_several_processes_for_big_files_and_prints_the_same(tmp_path, monkeypatch):
    path, _ = transcript_file(tmp_path, "anthropic")
    one = run_cli("estimate", "--json", str(path))
    monkeypatch.setattr(parallel, "MIN_BYTES", 1)
    from typer.testing import CliRunner
    from ctxfit_cli.cli import app
    calls = []
    real = parallel.estimate_in_parallel
    monkeypatch.setattr(parallel, "estimate_in_parallel", lambda *a, **k: calls.append(1) or real(*a, **k))
    many = CliRunner().invoke(app, ["estimate", "--json", "--no-cache", str(path)])  # (read again)
    assert calls and many.exit_code == 0
    assert orjson.loads(many.stdout) == orjson.loads(one.stdout)


# --- fitting a big file in outline ------------------------------------------------------------------


def fit_sequentially(path, budget: int, tell_agent: bool = False):
    with open(path, "rb") as stream:
        [transcript] = read_transcripts(str(path), stream)
        return fit_transcript(transcript.materialize(), FitOptions(budget=budget, window=10**7),
                              tell_agent=tell_agent)


def fit_in_outline(path, budget: int, tell_agent: bool = False, workers: int = 2):
    outline = parallel.read_outline(str(path), str(path), *_format(path), workers=workers)
    return fit_outline(outline, FitOptions(budget=budget, window=10**7), tell_agent=tell_agent)


def _format(path) -> tuple[str, str]:
    dialect = "anthropic" if ".anthropic." in path.name else "openai"
    return dialect, dialect


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
@pytest.mark.parametrize("budget", [10**7, 60_000, 20_000, 3_000])  # stages none, clear, turns, rounds
def test_a_big_file_fitted_in_outline_gives_the_same_request(tmp_path, dialect, budget):
    path, _ = transcript_file(tmp_path, dialect, bom=budget == 20_000)
    one, outline = fit_sequentially(path, budget), fit_in_outline(path, budget, workers=3)
    assert outline.payload == one.payload
    assert outline.plan.to_dict() == one.plan.to_dict() and outline.tokens == one.tokens


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
def test_outline_with_the_agent_note_and_without_a_system_line(tmp_path, dialect):
    chat = Chat(dialect, system=None).user("Read them all.")
    for n in range(120):
        chat.round(SCRIPTS[sorted(SCRIPTS)[n % len(SCRIPTS)]] * 30)
    path = tmp_path / f"bare.{dialect}.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + chat.jsonl())  # the first message is read again past a BOM
    for tell_agent in (False, True):
        one, outline = fit_sequentially(path, 8_000, tell_agent), fit_in_outline(path, 8_000, tell_agent)
        assert outline.payload == one.payload and outline.plan.to_dict() == one.plan.to_dict()


def test_refitting_a_fitted_history_in_outline_keeps_the_note_once(tmp_path):
    path, _ = transcript_file(tmp_path, "anthropic")
    fitted = orjson.loads(fit_sequentially(path, 20_000).payload)
    refit = tmp_path / "refit.anthropic.jsonl"  # the fitted history, its first message noted
    refit.write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in fitted["messages"]))
    one, outline = fit_sequentially(refit, 6_000), fit_in_outline(refit, 6_000)
    assert outline.payload == one.payload and outline.plan.to_dict() == one.plan.to_dict()
    assert outline.payload.count(TRIMMED_HISTORY.encode()) == 1


def test_a_bad_line_is_reported_the_same_when_fitting_in_outline(tmp_path):
    path, _ = transcript_file(tmp_path, "openai")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[-7] = b'{"role": "tool", "content": "no call id"}\n'
    path.write_bytes(b"".join(lines))
    with pytest.raises(BadInput) as one:
        fit_sequentially(path, 20_000)
    with pytest.raises(BadInput) as outline:
        fit_in_outline(path, 20_000, workers=3)
    assert str(outline.value) == str(one.value) and f":{len(lines) - 6}: " in str(one.value)


def test_only_a_system_prompt_is_no_messages_in_outline_too(tmp_path):
    path = tmp_path / "system.anthropic.jsonl"
    path.write_bytes(b'{"role": "system", "content": "You are an agent."}\n' * 3)
    with pytest.raises(BadInput, match="has no messages"):
        parallel.read_outline(str(path), str(path), "anthropic", "anthropic")


def test_the_cli_fits_big_files_in_outline_and_writes_the_same(tmp_path, monkeypatch):
    path, _ = transcript_file(tmp_path, "anthropic")
    one = run_cli("fit", str(path), "--budget", "20000", "--tell-agent")
    monkeypatch.setattr(parallel, "MIN_BYTES", 1)
    from typer.testing import CliRunner
    from ctxfit_cli.cli import app
    calls = []
    real = parallel.read_outline
    monkeypatch.setattr(parallel, "read_outline", lambda *a, **k: calls.append(1) or real(*a, **k))
    many = CliRunner().invoke(app, ["fit", str(path), "--budget", "20000", "--tell-agent"])
    assert calls and many.exit_code == 0 and one.returncode == 0
    assert many.stdout_bytes == one.stdout
    one_plan = run_cli("plan", str(path), "--budget", "3000", "--json")
    many_plan = CliRunner().invoke(app, ["plan", str(path), "--budget", "3000", "--json"])
    assert len(calls) == 2 and orjson.loads(many_plan.stdout) == orjson.loads(one_plan.stdout)


# --- broken big files are repaired in outline as in one process --------------------------------


def broken_file(tmp_path, dialect: str):
    """A big file that needs every kind of repair: an assistant first message (Anthropic), a
    result with no call, results after text (Anthropic: rebuilt, so read in full), a call
    answered twice, and a call left open at the end (a live log); and a blank line."""
    path, _ = transcript_file(tmp_path, dialect, rounds=120)
    lines = path.read_bytes().splitlines(keepends=True)
    head, body = lines[:1], lines[1:]
    if dialect == "anthropic":
        body.insert(0, b'{"role":"assistant","content":"Starting."}\n')
        body.insert(40, b'{"role":"assistant","content":[{"type":"tool_use","id":"x1","name":"r","input":{}}]}\n')
        body.insert(41, b'{"role":"user","content":[{"type":"text","text":"look"},'
                        b'{"type":"tool_result","tool_use_id":"x1","content":"late"},'
                        b'{"type":"tool_result","tool_use_id":"x1","content":"again"}]}\n')
        tail = b'{"role":"assistant","content":[{"type":"tool_use","id":"open","name":"r","input":{}}]}\n'
    else:
        body.insert(30, b'{"role":"tool","tool_call_id":"nobody","content":"orphan"}\n')
        tail = (b'{"role":"assistant","content":null,"tool_calls":[{"id":"open","type":"function",'
                b'"function":{"name":"r","arguments":"{}"}}]}\n')
    body.insert(60, b"\n")  # a blank line: the outline's offsets skip it
    path.write_bytes(b"".join(head + body) + tail)
    return path


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
@pytest.mark.parametrize("budget", [10**7, 20_000, 3_000])
def test_a_big_file_that_needs_repairs_is_repaired_the_same_in_outline(tmp_path, dialect, budget):
    path = broken_file(tmp_path, dialect)
    with open(path, "rb") as stream:
        [transcript] = read_transcripts(str(path), stream)
        transcript = transcript.materialize()
    one = fit_transcript(transcript, FitOptions(budget=budget, window=10**7))
    outline = parallel.read_outline(str(path), str(path), dialect, dialect, workers=3)
    fitted = fit_outline(outline, FitOptions(budget=budget, window=10**7))
    assert fitted.payload == one.payload and fitted.plan.to_dict() == one.plan.to_dict()
    assert outline.transcript.repairs == transcript.repairs and len(transcript.repairs) >= 2


def _cli_in_outline(*args: str) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess as `run_cli` runs it, with every file big enough to be read
    on several cores, and two of them (so the parallel path is taken on a one-core runner too)."""
    code = ("import ctxfit_cli.formats.parallel as p; p.MIN_BYTES = 1; p.cores = lambda: 2; "
            "from ctxfit_cli.cli import main; main()")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "COLUMNS": "120", "PYTHONIOENCODING": "utf-8"})


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
def test_replay_reads_big_files_in_outline_and_reports_the_same(tmp_path, dialect):
    path = broken_file(tmp_path, dialect)
    args = ("replay", str(path), "--json", "--steps", "--budget", "6000", "--window", "12000")
    one, many = run_cli(*args), _cli_in_outline(*args)
    assert one.returncode == many.returncode == 0, many.stderr
    assert many.stdout == one.stdout and many.stderr == one.stderr
    report = orjson.loads(one.stdout)["files"][0]
    assert report["repairs"] and len(report["policies"]) > 1


def test_replay_in_outline_repairs_what_the_provider_would_refuse_as_in_one_process(tmp_path):
    path, _ = transcript_file(tmp_path, "openai", rounds=60)
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(20, b'{"role":"user","content":[]}\n')  # an empty message: the provider refuses it
    lines.insert(30, b'{"role":"user","content":[{"type":"text","text":" "},{"type":"text","text":"go"}],"ts":1}\n')
    path.write_bytes(b"".join(lines))
    one, many = run_cli("replay", str(path), "--json"), _cli_in_outline("replay", str(path), "--json")
    assert one.returncode == many.returncode == 0, one.stderr
    assert many.stderr == one.stderr and f"{path}:21: dropped an empty user message".encode() in one.stderr
    assert f"{path}:31: removed the key the API refuses: 'ts'".encode() in one.stderr
    assert many.stdout == one.stdout


@pytest.mark.parametrize("policies", [["turns", "none", "ctxfit"], ["turns"]])
def test_replay_in_outline_streams_the_first_policy_that_can_and_holds_for_the_rest(tmp_path, policies):
    # `turns` looks back over the history: it is replayed on the held history, whichever comes first.
    path = broken_file(tmp_path, "anthropic")
    args = ("replay", str(path), "--json", "--budget", "5000", *[a for p in policies for a in ("-p", p)])
    one, many = run_cli(*args), _cli_in_outline(*args)
    assert one.returncode == many.returncode == 0, many.stderr
    assert many.stdout == one.stdout
    assert list(orjson.loads(one.stdout)["files"][0]["policies"]) == policies


def test_a_bad_line_late_in_a_big_file_stops_its_replay_as_in_one_process(tmp_path):
    path, _ = transcript_file(tmp_path, "openai", rounds=80)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[-4] = b'{"role": "tool", "content": "no call id"}\n'
    path.write_bytes(b"".join(lines))
    one, many = run_cli("replay", str(path), "--json"), _cli_in_outline("replay", str(path), "--json")
    assert one.returncode == many.returncode == 3
    assert many.stderr == one.stderr and f":{len(lines) - 3}: ".encode() in one.stderr
    assert many.stdout == one.stdout == b""
