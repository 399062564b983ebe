"""`sessions`: one conversation's share of a session row, what the agent sent (everything) and
what ctxfit would have sent, walked over its history. The history is held as `replay` holds it:
a big log in outline (estimates, ids, no text), so memory does not grow with its text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .job import Job, choose, fit_options, transcript_name

if TYPE_CHECKING:  # (the view reads STAGES without loading the library)
    from ..core.model import Transcript
    from ..core.options import FitOptions
    from ..counters.seed import Counter
    from .meta import SessionMeta

#: Stages in the order a fitter tries them.
STAGES = ("none", "clear", "turns", "rounds")


def session_part(transcript: Transcript, path: str, job: Job, given: Counter | None) -> dict:
    """One conversation's share of a session row: its size as recorded and as estimated (the
    unlogged part counted), and what the agent's own behaviour (send everything) and ctxfit
    would have sent, with the counter and window chosen for its model."""
    from .replay_file import held_history  # (a big log in outline, as `replay` holds it: no text)

    transcript, chosen = choose(held_history(transcript, path, job, given), job, given)
    options = fit_options(job, chosen)
    agent = _walk("none", transcript, options)
    fits = agent["peak"] <= options.budget
    ctxfit = _sent_whole(agent, transcript) if fits else _walk("ctxfit", transcript, options)
    recorded = [c.prompt_tokens for c in transcript.calls if c.prompt_tokens is not None]
    assert isinstance(transcript.messages, Sequence)  # (materialized above)
    return {
        "name": transcript_name(transcript),
        "format": transcript.format,
        "messages": len(transcript.messages),
        "models": sorted({c.model for c in transcript.calls if c.model}),
        "recorded_peak": max(recorded) if recorded else None,
        "estimated_peak": agent["peak"],
        "calls": agent["calls"],
        "rejected_agent": agent["rejected"],
        "rejected_ctxfit": ctxfit["rejected"],
        "ctxfit_peak": ctxfit["peak"],
        "stage": ctxfit["stage"],
        "cleared": ctxfit["cleared"],
        "window": options.window,
        "window_source": chosen.window_source,
        "counter": chosen.counter.name,
        "still_being_written": list(transcript.open_end),
    }


def usage_part(meta: SessionMeta, name: str, format: str, job: Job) -> dict:
    """The share of a session row of a log that records usage but no conversation (Cline's
    `ui_messages.json`): its calls and their largest prompt as recorded, against its model's
    window. Nothing is estimated or replayed (there is no conversation): the estimate and what
    ctxfit would send are left empty (None), and no call is said to be rejected by ctxfit."""
    from ..core.options import DEFAULT_WINDOW
    from ..counters.models import window_for

    window, source = (job.window, "given (--window)") if job.window else window_for(meta.models)
    window, source = (window, source) if window else (DEFAULT_WINDOW, "default")
    return {
        "name": name,
        "format": format,
        "messages": 0,
        "models": [],
        "recorded_peak": max(meta.prompts, default=0),
        "estimated_peak": None,
        "calls": len(meta.prompts),
        "rejected_agent": sum(prompt > window for prompt in meta.prompts),
        "rejected_ctxfit": 0,
        "ctxfit_peak": None,
        "stage": "none",
        "cleared": 0,
        "window": window,
        "window_source": source,
        "counter": "none (usage only: no conversation to count)",
        "still_being_written": [],
    }


def _sent_whole(agent: dict, transcript: Transcript) -> dict:
    """What ctxfit sends where every request of the agent's own is within the budget: each of
    them, whole. The fitter changes a request only once its count passes the budget, and it
    counts a request it left whole as `none` counts it (the same estimate, anchored on the same
    recorded usage), so its walk would find these very figures: `tests/test_sessions_speed.py`
    checks it on every real log at budgets on both sides of the peak. Only the walk's check of
    the history as read is made (a history no provider would take is reported as the walk
    reports it); the rest is not walked (~60% of the walk: on real logs, most of which never
    near the budget, the walk was ~15% of a first `sessions`)."""
    from ..replay.validity import RequestCheck

    RequestCheck(transcript)  # (a held history is checked whole as it is made: `BadInput`)
    return {**agent, "stage": "none", "cleared": 0}


def _walk(policy: str, transcript: Transcript, options: FitOptions) -> dict:
    """Every request a policy would send: the largest, how many the window rejects, the furthest
    stage reached and how many results the last request clears."""
    from ..replay.policies import POLICIES

    peak = calls = rejected = 0
    stage, cleared = "none", 0
    for request in POLICIES[policy].requests(transcript, options):
        calls += 1
        peak = max(peak, request.tokens)
        rejected += request.tokens > options.window
        if STAGES.index(request.stage) > STAGES.index(stage):
            stage = request.stage
        cleared = getattr(request.shape, "cleared", cleared)
    return {"peak": peak, "calls": calls, "rejected": rejected, "stage": stage, "cleared": cleared}
