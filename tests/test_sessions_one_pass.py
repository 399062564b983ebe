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


def test_a_time_already_in_utc_form_is_taken_as_datetime_would_make_it():
    """`agents.session.utc` takes a time already in its form as it is (the form Claude Code
    writes, thousands a log) only where parsing it gives the same: a real day, fields in range."""
    import random
    from datetime import UTC, datetime

    from ctxfit_cli.agents.session import utc

    def parsed(text: str) -> str | None:
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"

    rng = random.Random(36)
    fields = ((0, 9999), (0, 13), (0, 32), (0, 25), (0, 61), (0, 61), (0, 999))
    times = ["%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % tuple(rng.randint(*f) for f in fields) for _ in range(3000)]
    times += ["2024-02-29T23:59:59.999Z", "2023-02-29T23:59:59.999Z", "2026-02-12T24:00:00.000Z"]
    assert [utc(t) for t in times] == [parsed(t) for t in times]
    assert sum(utc(t) is not None for t in times) > 300  # (valid ones among them)
