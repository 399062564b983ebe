"""Issue #20's data-loss reproductions, through the real CLI in a subprocess: an input or an
output file is never destroyed (`cli/outputs.py`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import orjson
import pytest

from conftest import ROOT, SAMPLES, run_cli
from test_hardening import CTXFIT, ENV, one_error_line, snapshot

OPENAI = SAMPLES / "openai_agent.openai.jsonl"


@pytest.fixture
def transcript(tmp_path) -> Path:
    path = tmp_path / "t.jsonl"
    shutil.copy(OPENAI, path)
    return path


@pytest.mark.parametrize("args", [["-", "-o"], ["-", "--report"], ["-o"]], ids=["dash-o", "dash-report", "implicit-o"])
def test_standard_inputs_file_counts_as_an_input(transcript, args):
    before = snapshot(transcript)
    with transcript.open("rb") as stdin:  # `ctxfit fit - -o t.jsonl < t.jsonl`
        result = subprocess.run([*CTXFIT, "fit", *args, str(transcript), "--budget", "20000"],
                                stdin=stdin, capture_output=True, env=ENV, cwd=ROOT, timeout=120)
    assert "standard input's file" in one_error_line(result, 2)
    assert snapshot(transcript) == before


def test_a_pipe_on_standard_input_is_no_file_and_is_allowed(tmp_path, transcript):
    out = tmp_path / "out.json"
    result = run_cli("fit", "-", "--budget", "20000", "-o", str(out), input=transcript.read_bytes())
    assert result.returncode == 0, result.stderr
    assert orjson.loads(out.read_bytes())["messages"]


def test_output_and_report_on_one_file_not_made_yet_is_refused(tmp_path, transcript):
    out = tmp_path / "y.json"
    result = run_cli("fit", str(transcript), "--budget", "20000", "-o", str(out), "--report",
                     str(tmp_path / "." / "y.json"))
    assert "also named by --output" in one_error_line(result, 2)
    assert not out.exists()


@pytest.fixture
def full_disk_under_dev():
    """A 64 KB tmpfs mounted under /dev/shm: a regular file under /dev/ on a file system the
    kernel really fills (ENOSPC). Needs root; skipped where mount is refused."""
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm")
    mount = Path("/dev/shm") / f"ctxfit-test-{uuid.uuid4().hex[:8]}"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        mount.rmdir()
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)
        mount.rmdir()


def test_a_full_disk_under_dev_leaves_the_old_file_as_it_was(full_disk_under_dev):
    big = SAMPLES / "subagent_reader.anthropic.jsonl"  # its payload is ~1 MB, the disk 64 KB
    old = full_disk_under_dev / "o.json"
    old.write_bytes(b"previous payload")
    result = run_cli("fit", str(big), "-o", str(old))
    assert "left as it was" in one_error_line(result, 6)
    assert old.read_bytes() == b"previous payload"
    assert sorted(p.name for p in full_disk_under_dev.iterdir()) == ["o.json"]


def test_a_regular_file_behind_dev_stdout_gets_the_whole_payload(tmp_path, transcript):
    out = tmp_path / "out.json"
    with out.open("wb") as stdout:  # `ctxfit fit t.jsonl -o /dev/stdout > out.json`
        result = subprocess.run([*CTXFIT, "fit", str(transcript), "--budget", "20000", "-o", "/dev/stdout"],
                                stdout=stdout, stderr=subprocess.PIPE, env=ENV, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert orjson.loads(out.read_bytes())["messages"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "t.jsonl"]


def test_many_empty_files_give_a_few_notes_and_a_count(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(OPENAI, folder / "a.jsonl")
    for i in range(400):
        (folder / f"empty{i:04}.jsonl").write_bytes(b"")
    result = run_cli("estimate", "--json", str(folder))
    assert result.returncode == 0, result.stderr
    notes = result.stderr.decode().splitlines()
    assert notes == ["ctxfit: note: 400 files with no conversation skipped; --verbose lists them"], notes
    assert len(orjson.loads(result.stdout)["skipped"]) == 400  # --json still lists every one


def test_a_file_name_with_a_newline_stays_on_one_line(tmp_path):
    path = tmp_path / "two\nlines.jsonl"
    shutil.copy(OPENAI, path)
    result = run_cli("fit", str(path), "--budget", "20000")
    assert result.returncode == 0, result.stderr
    summary = result.stderr.decode().splitlines()
    assert len(summary) == 1 and summary[0].startswith(f"{tmp_path}/two\\nlines.jsonl: stage 1"), summary
