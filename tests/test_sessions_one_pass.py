"""`sessions` reads a log once where its agent describes it as it is read (`meta.Reading`), and
gives the very rows it gives reading the log again for its description: checked on every shared
real log of every agent and on the sample transcripts, a folder at a time, as JSON."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ctxfit_cli.cli.app import app
from ctxfit_cli.fleet import meta

from conftest import REALWORLD, ROOT, needs_realworld

runner = CliRunner()
FOLDERS = sorted(p for p in REALWORLD.iterdir() if p.is_dir()) if REALWORLD.is_dir() else []


def _json(*inputs: str) -> str:
    result = runner.invoke(app, ["sessions", "--json", "-q", "--no-cache", "--jobs", "1", *inputs])
    assert result.exit_code in (0, 5), result.output  # (5: a log of the folder the reader refuses)
    return result.stdout


def _both(monkeypatch, *inputs: str) -> tuple[str, str]:
    """The JSON read once, and read again for the description (the path before `meta.Reading`)."""
    once = _json(*inputs)
    with monkeypatch.context() as patched:
        patched.setattr(meta.Reading, "sessions", lambda self: None)
        again = _json(*inputs)
    return once, again


@needs_realworld
@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_a_real_folder_read_once_gives_the_rows_read_twice_does(folder, monkeypatch):
    """Every file of the folder named (some agents' logs are not named as a folder walk finds them)."""
    once, again = _both(monkeypatch, *sorted(str(p) for p in folder.rglob("*") if p.is_file()))
    assert '"sessions"' in once and once == again


def test_the_sample_transcripts_read_once_give_the_rows_read_twice_do(monkeypatch):
    once, again = _both(monkeypatch, "--budget", "20000", str(ROOT / "sample_transcripts"))
    assert '"sessions"' in once and once == again


@needs_realworld
def test_a_claude_code_log_is_described_as_it_is_read(monkeypatch):
    """The one pass is taken (the log is not opened again for its description)."""
    from ctxfit_cli.fleet import work

    def again(*args):
        raise AssertionError("read again for its description")

    monkeypatch.setattr(work, "_read_again", again)
    assert '"Claude Code"' in _json(str(REALWORLD / "claude-code"))

