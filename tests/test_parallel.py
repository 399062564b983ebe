"""A big JSON Lines file estimated on several cores gives exactly what one process gives."""

from __future__ import annotations


import orjson
import pytest

from ctxfit_cli import parallel
from ctxfit_cli.errors import BadInput
from ctxfit_cli.estimate import TranscriptEstimate
from ctxfit_cli.formats import read_transcripts
from conftest import Chat, run_cli
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
    many = CliRunner().invoke(app, ["estimate", "--json", str(path)])
    assert calls and many.exit_code == 0
    assert orjson.loads(many.stdout) == orjson.loads(one.stdout)
