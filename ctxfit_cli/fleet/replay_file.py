"""`replay` of one transcript: every policy's requests over its history, side by side on every
core for a big file (`policy_runs`), the history held in outline for a big log (`log_outline`)
or chat file (`formats.parallel`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from itertools import chain
from typing import TYPE_CHECKING

from ..core import choice
from ..core.estimate import by_script
from ..core.model import Message, Transcript
from ..counters.models import main_model
from ..counters.seed import SEED, Counter
from ..formats import parallel
from .job import Job, choose, fit_options, transcript_name

if TYPE_CHECKING:
    from ..replay.simulation import PolicyReplay


def replay(transcript: Transcript, path: str, job: Job, given: Counter | None) -> dict:
    from ..replay.policies import DEFAULT_POLICIES, POLICIES  # (the fitter: not for `estimate`)
    from . import policy_runs

    names = job.policies or DEFAULT_POLICIES
    outline = _outline(transcript, path, job, given)
    if outline is None:
        transcript, chosen = choose(held_history(transcript, path, job, given), job, given)
    else:
        transcript, chosen = choose(outline.transcript, job, given)
    options = fit_options(job, chosen)

    done: dict[str, PolicyReplay] = {}
    if outline is not None:
        # A big file: the first policy that walks the history once walks it while later pieces
        # are still being read (on the other cores); the others replay the held history.
        held: list[Message] = []
        streaming = next((name for name in names if POLICIES[name].streams), None)
        if streaming is not None:
            streamed = replace(transcript, messages=_holding(outline.messages(), held))
            done[streaming] = policy_runs.replay_one(streamed, streaming, options, job.prices, job.min_cacheable)
        else:
            held = list(outline.messages())
        transcript = replace(transcript, messages=tuple(held))
    rest = [name for name in names if name not in done]
    # A big file's other policies on every core (files spread over the cores: in this one).
    side_by_side = job.split_big_files and policy_runs.worth_it(path)
    more = policy_runs.replay_policies(
        transcript, rest, options, prices=job.prices, min_cacheable=job.min_cacheable, side_by_side=side_by_side
    )
    results = {name: done[name] if name in done else more[name] for name in names}
    recorded = None
    if transcript.calls:
        from ..core.usage import recorded_by_call

        recorded = recorded_by_call(transcript)
    return {
        "name": transcript_name(transcript),
        "format": transcript.format,
        "results": results,
        "choice": chosen.to_dict(),
        "by_script": by_script(chain(transcript.fixed, transcript.messages)),
        "budget": options.budget,
        "window": options.window,
        "recorded": recorded,
        "model": main_model(c.model for c in transcript.calls),
        "repairs": list(transcript.repairs),
    }


def _outline(transcript: Transcript, path: str, job: Job, given: Counter | None) -> parallel.Outline | None:
    """A big JSON Lines chat file, read on every core in outline (estimates and validator
    checks, no text: all a replay needs), or None: read it in one process."""
    if job.split_big_files and parallel.worth_it(path, transcript.format, given or SEED):
        return parallel.read_outline(path, transcript.path, transcript.format, transcript.dialect, checks=True)
    return None


def held_history(transcript: Transcript, path: str, job: Job, given: Counter | None) -> Transcript:
    """The transcript held whole, or for a big log in outline (`log_outline`: estimates, ids and
    checks, no text: all a replay needs) when its chosen counter is the outline's."""
    from . import log_outline

    if not log_outline.worth_it(path, transcript.format):
        return transcript.materialize()
    outline = log_outline.read_outline(
        transcript, path, given, seed=True, checks=True, workers=job.split_big_files, sends=False
    )
    outline.close()
    if outline.holds(
        choice.choose(outline.transcript, counter=given, window=job.window, fixed_tokens=job.fixed_tokens).counter
    ):
        return outline.transcript
    return log_outline.read_whole(path, transcript, job.format)


def _holding(messages: Iterable[Message], held: list[Message]) -> Iterator[Message]:
    """The messages, each also put in `held` as it passes."""
    for message in messages:
        held.append(message)
        yield message
