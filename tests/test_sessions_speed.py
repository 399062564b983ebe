"""The shortcuts that make a first `sessions` faster give the very figures of the long way.

- Where the agent's own requests all fit the budget, what ctxfit would send is taken to be each
  of them whole (`session_file._sent_whole`) rather than walked with the fitter: checked on every
  shared real log with a conversation, at budgets on both sides of its peak.
- numpy is imported only once it pays (`char_classes.NUMPY_AFTER_CHARS`), and measures as the
  pure-Python path does.
"""

from __future__ import annotations

import dataclasses

import pytest

from ctxfit_cli.counters import char_classes
from ctxfit_cli.errors import CtxfitError
from ctxfit_cli.fleet import session_file
from ctxfit_cli.fleet.job import Job, choose, fit_options
from ctxfit_cli.fleet.replay_file import held_history
from ctxfit_cli.formats import read_transcripts

from conftest import REALWORLD, needs_realworld

FILES = sorted(p for p in REALWORLD.rglob("*") if p.is_file() and p.suffix != ".md") if REALWORLD.is_dir() else []


def _conversations(path: str):
    """Each conversation of the log as `sessions` holds it, with the options it fits with."""
    job = Job(command="sessions")
    try:
        with open(path, "rb") as stream:
            for transcript in read_transcripts(path, stream):
                held, chosen = choose(held_history(transcript, path, job, None), job, None)
                yield held, fit_options(job, chosen)
    except CtxfitError:
        return  # (a log with no conversation to fit: its usage only, nothing walked)


@needs_realworld
@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_requests_within_the_budget_are_what_the_fitter_sends(path):
    checked = 0
    for transcript, options in _conversations(str(path)):
        peak = session_file._walk("none", transcript, options)["peak"]
        for budget in {max(1, peak - 1), max(1, peak), peak + 1, max(1, peak // 2)}:
            at = dataclasses.replace(options, budget=budget, window=max(options.window, budget))
            agent = session_file._walk("none", transcript, at)
            walked = session_file._walk("ctxfit", transcript, at)
            if agent["peak"] <= budget:
                assert session_file._sent_whole(agent, transcript) == walked, (budget, agent, walked)
                checked += 1
            else:  # (a budget under the peak is walked: the shortcut must not pass for it)
                assert walked["stage"] != "none" or walked["peak"] > budget
    if not checked:
        pytest.skip("no conversation to fit in this log")


def test_a_history_no_provider_would_take_is_reported_as_the_walk_reports_it(monkeypatch):
    """The shortcut makes the walk's check of the history as read: the same `BadInput`."""
    from ctxfit_cli.core.model import Transcript
    from ctxfit_cli.errors import BadInput
    from ctxfit_cli.replay import validity

    def refuse(self, transcript):
        raise BadInput(transcript.path, None, "not a valid anthropic request as read: (refused)")

    monkeypatch.setattr(validity.RequestCheck, "__init__", refuse)
    transcript = Transcript("log.jsonl", "anthropic", "anthropic", ())
    with pytest.raises(BadInput, match="refused"):
        session_file._sent_whole({"peak": 1}, transcript)


def test_numpy_is_imported_once_pure_python_has_cost_about_as_much(monkeypatch):
    monkeypatch.setattr(char_classes, "_np", None)
    monkeypatch.setattr(char_classes, "_numpy_tried", False)
    monkeypatch.setattr(char_classes, "_measured", 0)
    ascii_text, mixed = "x = 1  # ok\n" * 100_000, "long text, мир " * 80_000
    for _ in range(char_classes.NUMPY_AFTER_CHARS // len(ascii_text) - 1):
        char_classes.class_counts(ascii_text)
    assert char_classes._np is None  # 5 M ASCII characters: not yet
    char_classes.class_counts(mixed)  # 1.2 M non-ASCII ones weigh 3.6 M: now
    assert char_classes._np is not None
    assert char_classes.class_counts(mixed) == char_classes._class_counts_python(mixed)
