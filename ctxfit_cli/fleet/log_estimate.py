"""`estimate` of a log that records usage (Claude Code, Codex), in one pass and bounded memory.

The report of such a log needs three things that depend on the whole log: the counter (the
profile of the *last* model the log names), the unlogged fixed part (the first recorded prompt
minus the estimate of what the log holds before it) and the size of the next request (anchored
on the last recorded call). None of them needs the messages once they are counted: each message
is counted as it is read and only its running total is kept (`prefix`, one integer a message),
with the messages that start a human turn; the rest is worked out at the end by the same
functions the materialized path uses (`core.usage.*_from`).

The counter must be known before the first message is counted: it is the profile of the first
model the log names (read ahead to the first reply or, in a Codex rollout, the first usage
recorded: `Transcript.named_models`), holding the few messages before it (at most
`READ_AHEAD`). Almost
every log names one family throughout; one that ends with another model's family is counted
again from the start by the caller (`None`), so the result is the same as reading it whole.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from itertools import chain
from typing import NamedTuple

from ..agents import REGISTRY
from ..core import choice
from ..core.costs import message_cost
from ..core.estimate import TranscriptEstimate
from ..core.model import Message, Role, Transcript
from ..core.usage import (
    anchoring_from,
    call_estimates_from,
    infer_fixed_from,
    next_request_from,
    recorded_summary,
    unlogged_message,
)
from ..counters.seed import Counter
from ..formats import measures

#: Formats whose transcripts are read lazily, message by message, with their calls filled in
#: as they go (`Agent.streamed`): these are estimated here.
STREAMED_FORMATS = tuple(agent.name for agent in REGISTRY if agent.streamed)


class NamedCounter(NamedTuple):
    """Stands in for the counter in a result that crosses a process boundary (a real tokenizer
    need not pickle); reports only read its name."""

    name: str


class LogEstimate(NamedTuple):
    report: TranscriptEstimate
    chosen: choice.Choice
    #: What the report adds for recorded usage (`fleet.estimate_file.usage_entry`'s shape).
    usage: dict


def estimate_log(
    transcript: Transcript,
    name: str,
    *,
    given: Counter | None,
    window: int | None,
    fixed_tokens: int | None,
    top_n: int,
    path: str | None = None,
) -> LogEstimate | None:
    """The estimate of a streamed log, or None when its counter turned out to be another than
    the one guessed (its last model is of another family than its first, or it names one only
    after `READ_AHEAD` messages): count it again, whole, with the right counter.

    `path`: the log's file, whose texts are then measured on every core when it is big
    (`formats.measures`)."""
    messages = iter(transcript.messages)
    ahead, guess = guess_counter(messages, transcript, given)
    with measuring(path, transcript, guess) as pieces:
        counter = pieces.counter if pieces is not None else guess  # (the same name, the same figures)
        report = TranscriptEstimate(name, transcript.format, counter=counter, top_n=top_n)
        prefix, turns, split = _count(measures.measured(chain(ahead, messages), pieces), report, counter)
    return finish(
        transcript, guess, report, prefix, turns, split, given=given, window=window, fixed_tokens=fixed_tokens
    )


def finish(
    transcript: Transcript,
    guess: Counter,
    report: TranscriptEstimate,
    prefix: list[int],
    turns: list[int],
    split: int,
    *,
    given: Counter | None,
    window: int | None,
    fixed_tokens: int | None,
) -> LogEstimate | None:
    """The estimate of a log from its messages' running totals (`_count`'s, or those of a log
    read in pieces, `log_split`), its calls read (`transcript.calls`); None as `estimate_log`."""
    # As `Transcript.materialize` has them: the leading system messages are the fixed part.
    calls = [c._replace(message=c.message - split) for c in transcript.calls] if split else transcript.calls
    chosen = choice.choose(_calls_only(transcript, calls), counter=given, window=window, fixed_tokens=fixed_tokens)
    if chosen.counter.name != guess.name:
        return None
    if fixed_tokens is None and calls:
        chosen = chosen._replace(fixed=infer_fixed_from(calls, prefix))
    unlogged = chosen.fixed.tokens if chosen.fixed.tokens > 0 else 0
    if unlogged:
        report.add(unlogged_message(unlogged))  # (unnumbered: where it is added changes no figure)
    return LogEstimate(report, chosen, _usage(chosen, calls, prefix, turns, unlogged, report.tokens))


def guess_counter(
    messages: Iterator[Message], transcript: Transcript, given: Counter | None
) -> tuple[list[Message], Counter]:
    """The messages read ahead to the first model the log names, and its counter (or `given`)."""
    if given is not None:
        return [], given
    ahead = _to_first_model(messages, transcript)
    return ahead, _guess(transcript)


def measuring(path: str | None, transcript: Transcript, counter: Counter) -> contextlib.AbstractContextManager:
    """Measuring the log's texts on every core (`formats.measures.Window`), or nothing (None)
    for a small log."""
    if path is None or not measures.worth_it(path, transcript.format, counter):
        return contextlib.nullcontext()
    return measures.Window(path, transcript.path, transcript.format, counter, line=transcript.line)


#: How many messages are held while looking for the first model named: a log that names none
#: by then is guessed to name none (and counted again if it does later).
READ_AHEAD = 200


def _to_first_model(messages: Iterator[Message], transcript: Transcript) -> list[Message]:
    """The messages up to the first that brought a call naming its model (at most `READ_AHEAD`)."""
    ahead = []
    for message in messages:
        ahead.append(message)
        if transcript.named_models or any(c.model for c in transcript.calls) or len(ahead) >= READ_AHEAD:
            break
    return ahead


def _guess(transcript: Transcript) -> Counter:
    """The counter of the first model the log names (the seed rule, or a request's model's
    profile, when it names none)."""
    models = [c.model for c in transcript.calls if c.model] or transcript.named_models
    if models:
        from ..counters.models import counter_for_models

        return counter_for_models(models[:1])[0]
    return choice.choose(_calls_only(transcript, transcript.calls), counter=None, window=None, fixed_tokens=0).counter


def _calls_only(transcript: Transcript, calls: list) -> Transcript:
    """The transcript as `choice.choose` reads it here: its calls, its messages not held."""
    return replace(transcript, messages=iter(()), calls=calls)


def _count(
    messages: Iterator[Message], report: TranscriptEstimate, counter: Counter
) -> tuple[list[int], list[int], int]:
    """Count every message into `report`; return the prefix sums (`core.usage.prefix_tokens`),
    the human turn starts (`core.usage.turn_starts`) and how many leading system messages the
    fixed part holds."""
    prefix, turns, split = [0], [], 0
    leading = True
    for message in messages:
        report.add(message)
        tokens = message_cost(message, counter).tokens
        if leading and message.role is Role.SYSTEM:
            prefix[0] += tokens
            split += 1
            continue
        leading = False
        index = len(prefix) - 1
        if index and message.is_human_turn:
            turns.append(index)
        prefix.append(prefix[-1] + tokens)
    return prefix, turns, split


def _usage(
    chosen: choice.Choice, calls: list, prefix: list[int], turns: list[int], unlogged: int, estimate: int
) -> dict:
    """`fleet.estimate_file.usage_entry` from the running totals."""
    entry = chosen.to_dict()
    recorded = recorded_summary(calls)
    if recorded is not None:
        pairs = call_estimates_from(calls, prefix, chosen.fixed)
        if pairs:
            recorded["last_prompt_estimate"] = pairs[-1][1]
        anchoring = anchoring_from(calls, prefix, unlogged, turns)
        recorded["next_request"] = next_request_from(anchoring, prefix, estimate).to_dict()
    entry["recorded"] = recorded
    return entry


def estimate_entry(transcript: Transcript, report: TranscriptEstimate, comparison: dict | None, usage: dict) -> dict:
    """One transcript's item of an `estimate` (`fleet.estimate_file`)."""
    report.counter = NamedCounter(report.counter.name)  # type: ignore[assignment]  # a picklable stand-in
    return {
        "report": report,
        "compare": comparison,
        "usage": usage,
        "repairs": list(transcript.repairs),  # complete: the messages were all read
        "still_being_written": list(transcript.open_end),
    }
