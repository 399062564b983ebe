"""What `fit` and `plan` share: every conversation of their inputs, chosen for (counter,
window, unlogged part), fitted, and reported."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import TYPE_CHECKING

from ..agents import BY_NAME
from ..core.model import Transcript
from ..counters.seed import SEED
from ..errors import BadInput, CannotFit
from .inputs import transcripts
from .lazy import parallel, payload, render
from .options import _Auto

if TYPE_CHECKING:
    from ..core.options import FitOptions
    from ..counters.seed import Counter
    from ..fleet.combine import Combined
    from ..fleet.log_outline import LogOutline
    from ..formats.payload import Fitted
    from ..formats.skipped import Skipped


def _chosen(transcript: Transcript, options: FitOptions, auto: _Auto):
    """The transcript (with its unlogged part counted), its fitting options and the choice."""
    from .counting import apply, choose, fit_options

    choice = choose(transcript, counter=auto.counter, window=auto.window, fixed_tokens=auto.fixed_tokens)
    return apply(transcript, choice), fit_options(options, choice), choice


def _fit_all(
    paths: list[str] | None, format: str | None, options: FitOptions, tell_agent: bool, auto: _Auto, strict_inputs: bool
) -> tuple[list[tuple[Transcript, Fitted, dict]], Combined, list[str]]:
    """Every conversation of every input, fitted, and the inputs read; one bad file among many
    is set aside (cli/many.py) and reported by `many.finish`."""
    from ..errors import NoConversation
    from ..fleet.combine import Combined
    from . import many

    found = many.inputs(paths, defaults=False)
    fitted: list[tuple[Transcript, Fitted, dict]] = []
    problems = Combined(files=len(found.files))
    for source in found.files:
        try:
            fitted.extend(_fit_each(source, format, options, tell_agent, auto))
        except CannotFit:
            raise
        except NoConversation as error:
            if not found.many:
                raise
            problems.skipped.append((source, f"no conversation in it ({error.problem})"))
        except BadInput as error:  # anything else (an invalid request produced, ...) is not the file's
            if strict_inputs or not found.many:
                raise
            problems.errors.append((source, str(error)))
    if not fitted and not problems.errors:
        raise BadInput(found.files[0], None, f"no conversation in any of the {len(found.files)} inputs")
    return fitted, problems, found.files


def _current_conversations(
    source: str, format: str | None, counter: Counter, skipped: Skipped
) -> list[Transcript | parallel.Outline]:
    """The transcripts to fit. A big JSON Lines chat file is read on every core, in outline
    (`fit_outline`). A Claude Code log that was compacted holds one conversation per
    compaction; only the last is still sent, so only it is fitted. `skipped` counts what the
    log holds that its reader does not know."""
    from ..fleet import log_outline

    kept: list[Transcript | parallel.Outline | log_outline.LogOutline] = []
    compacted = 0
    for transcript in transcripts(source, format, skipped):
        if parallel.worth_it(source, transcript.format, counter):
            return [parallel.read_outline(source, transcript.path, transcript.format, transcript.dialect)]
        held: Transcript | log_outline.LogOutline
        if log_outline.worth_it(source, transcript.format):  # a big log: held in outline
            held = log_outline.read_outline(transcript, source, counter if counter is not SEED else None)
        else:
            held = transcript.materialize()  # before the input moves on
        if kept and _compacted(transcript.format):
            for earlier in kept:
                if isinstance(earlier, log_outline.LogOutline):
                    earlier.close()
            kept, compacted = [], compacted + 1
        kept.append(held)
    if compacted:
        first = kept[0].transcript if isinstance(kept[0], log_outline.LogOutline) else kept[0]
        render.stderr_console().print(
            render.Text(
                f"{first.path} was compacted {compacted} time{'s' if compacted > 1 else ''}: using the "
                f"conversation since the last compaction (line {first.line})"
            )
        )
    return kept


def _compacted(format: str) -> bool:
    """Whether a later transcript of a log of `format` is its conversation after a compaction
    (a reader that gives one transcript per compaction: `Agent.streamed`)."""
    agent = BY_NAME.get(format)
    return agent is not None and agent.streamed


def _fit_each(
    source: str, format: str | None, options: FitOptions, tell_agent: bool, auto: _Auto
) -> Iterator[tuple[Transcript, payload.Fitted, dict]]:
    """Each conversation of `source` that is still sent, with its fitted request and what was
    chosen for it (counter, window, unlogged fixed part: `counting.Choice.to_dict`), and what
    the reader skipped in the input (`unread`: counts per kind, `formats.skipped`)."""
    from ..formats.skipped import Skipped

    skipped = Skipped()
    conversations = _current_conversations(source, format, auto.counter or SEED, skipped)
    read = {"unread": skipped.as_dict()}  # (complete: the input was read to its end)
    for conversation in conversations:
        if isinstance(conversation, parallel.Outline):
            chosen = {
                "counter": options.counter.name,
                "counter_reason": "given" if auto.counter else "seed rule: the input names no model",
                "window": options.window,
                "window_source": "given (--window)" if auto.window else "default",
                "unlogged": {"tokens": 0, "source": "none"},
            }
            fitted = payload.fit_outline(conversation, options, tell_agent=tell_agent)
            yield conversation.transcript, fitted, {**chosen, **read}
        elif isinstance(conversation, Transcript):
            conversation, own, choice = _chosen(conversation, options, auto)
            fitted = payload.fit_transcript(conversation, own, tell_agent=tell_agent)
            yield conversation, fitted, {**choice.to_dict(), **read}
        else:
            transcript, fitted, chosen = _fit_outline(source, format, conversation, options, tell_agent, auto)
            yield transcript, fitted, {**chosen, **read}


def _fit_outline(
    source: str, format: str | None, outline: LogOutline, options: FitOptions, tell_agent: bool, auto: _Auto
) -> tuple[Transcript, payload.Fitted, dict]:
    """A big log's conversation fitted from its outline (`fleet.log_outline`); read whole again
    if the counter chosen for it is not the one its outline was estimated with."""
    try:
        transcript, own, choice = _chosen(outline.transcript, options, auto)
        if outline.holds(choice.counter):
            fitted = payload.fit_transcript(transcript, own, tell_agent=tell_agent, complete=outline.complete)
            return transcript, fitted, choice.to_dict()
    finally:
        outline.close()
    from ..fleet.log_outline import read_whole

    transcript, own, choice = _chosen(read_whole(source, outline.transcript, format), options, auto)
    return transcript, payload.fit_transcript(transcript, own, tell_agent=tell_agent), choice.to_dict()


def _fit_report(transcript, fitted, chosen: dict) -> dict:
    from ..core.estimate import by_script

    plan = fitted.plan.to_dict()
    plan["tokens_sent"] = fitted.tokens
    # The two parts of what is sent: what this payload holds, and what the agent adds to it
    # that its log does not show (system prompt, tools, anchored on the recorded size).
    plan["tokens_in_payload"] = fitted.in_payload
    plan["tokens_added_by_agent"] = fitted.tokens - fitted.in_payload
    return {
        "path": transcript.path,
        "format": transcript.format,
        "dialect": transcript.dialect,
        "messages_sent": len(fitted.messages),
        "repairs": list(transcript.repairs),
        # Why the log looks still being written (read up to its last complete record), as `estimate` says.
        "still_being_written": list(transcript.open_end),
        **plan,
        **{k: v for k, v in chosen.items() if k != "window"},
        # The seed rule's per-script view of what is sent, whichever counter fitted it.
        "by_script": by_script(chain(transcript.fixed, fitted.messages)),
    }
