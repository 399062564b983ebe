"""`estimate` of one transcript: its estimate, with what the log recorded of its usage (a log
that records usage is estimated as it streams by, `log_estimate`; a big chat file on every core,
`formats.parallel`)."""

from __future__ import annotations

from itertools import chain

from ..agents import BY_NAME
from ..core import choice
from ..core.estimate import TranscriptEstimate
from ..core.model import Transcript
from ..counters.seed import SEED, Counter
from ..formats import parallel
from .job import Job, choose, open_path, transcript_name
from .log_estimate import STREAMED_FORMATS, estimate_entry, estimate_log


def estimate(transcript: Transcript, path: str, job: Job, given: Counter | None) -> dict:
    name = transcript_name(transcript)
    if transcript.format in STREAMED_FORMATS and not job.compare and path != "-":
        streamed = estimate_log(
            transcript,
            name,
            given=given,
            window=job.window,
            fixed_tokens=job.fixed_tokens,
            top_n=job.top,
            path=path if job.split_big_files else None,
        )
        if streamed is not None:
            return estimate_entry(transcript, streamed.report, None, streamed.usage)
        from .log_outline import read_whole

        # Its last model's counter is another: read again, whole.
        transcript = read_whole(path, transcript, job.format, open_path(path, job))
    agent = BY_NAME.get(transcript.format)
    if agent is not None and agent.names_model:  # read whole: the counter follows the model it names
        transcript = transcript.materialize()
    transcript, chosen = choose(transcript, job, given)
    counter = chosen.counter
    others = _comparison_counters(counter) if job.compare else []
    extra: list[TranscriptEstimate] = []
    if not others and job.split_big_files and parallel.worth_it(path, transcript.format, counter):
        report = parallel.estimate_in_parallel(path, name, transcript.dialect, top_n=job.top)
    else:
        report = TranscriptEstimate(name, transcript.format, counter=counter, top_n=job.top)
        extra = [TranscriptEstimate(name, transcript.format, counter=c, top_n=0) for c in others]
        # chain, not a tuple: the messages of a JSONL file are streamed, never all held.
        for message in chain(transcript.fixed, transcript.messages):
            report.add(message)
            for other in extra:
                other.add(message)
    comparison = {e.counter.name: e.tokens for e in [report, *extra]} if job.compare else None
    return estimate_entry(transcript, report, comparison, usage_entry(transcript, chosen))


def usage_entry(transcript: Transcript, chosen: choice.Choice) -> dict:
    """What a report adds for recorded usage: the counter and window used and why, the
    unlogged fixed part, and what the log recorded (with this estimate of its last prompt)."""
    from ..core.usage import call_estimates, next_request, recorded_summary

    entry = chosen.to_dict()
    recorded = recorded_summary(transcript.calls)
    if recorded is not None and isinstance(transcript.messages, tuple):
        pairs = call_estimates(transcript, chosen.counter, chosen.fixed)
        if pairs:
            recorded["last_prompt_estimate"] = pairs[-1][1]
        recorded["next_request"] = next_request(transcript, chosen.counter).to_dict()
    entry["recorded"] = recorded
    return entry


def _comparison_counters(chosen: Counter) -> list[Counter]:
    """Every built-in profile and every installed tokenizer, except the counter already chosen."""
    from ..counters.profiles import builtin_profiles, load_profile
    from ..counters.tokenizers import available_tokenizers, get_tokenizer

    counters: list[Counter] = [] if chosen is SEED else [SEED]
    counters += [load_profile(name) for name in builtin_profiles() if name != "seed"]
    counters += [get_tokenizer(name) for name, ok in available_tokenizers().items() if ok]
    return [c for c in counters if c.name != chosen.name]
