"""Cache breaks and reads on the real logs that record usage (Claude Code, Codex).

There every size a fitter policy weighs is anchored on the recorded calls; what a request shares
with the one before must be counted the same way. Sending exactly what `none` sends must then
give exactly `none`'s cache figures, and a break can only come where a request changed something.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from conftest import REALWORLD, needs_realworld
from fuzzing import invoke
from test_formats import cc, records, result_record

from ctxfit_cli.core import choice
from ctxfit_cli.core.fitting import FitOptions
from ctxfit_cli.core.model import Transcript
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.replay.policies import POLICIES, Request
from ctxfit_cli.replay.simulation import Prices, replay

LOGS = sorted([*(REALWORLD / "claude-code").glob("*.jsonl"), *(REALWORLD / "codex").glob("*.jsonl")])
CLEARING = ("ctxfit", "ctxfit-strict", "clear-each", "keep-6", "clear-at-least")
#: Policies that send what `none` sends when nothing needs cutting (`turns` cuts only whole turns).
SAME_WHEN_UNDER = (*CLEARING, "turns")


@needs_realworld
@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_a_policy_that_clears_nothing_has_the_cache_figures_of_sending_everything(path):
    # A budget over any window: it is lowered to the log's window, which the logs stay under.
    args = ["replay", "--json", "--steps", "--no-chart", "--budget", "1000000000", str(path)]
    done = invoke([*args[:-1], *(a for name in ("none", *SAME_WHEN_UNDER) for a in ("-p", name)), args[-1]])
    assert done.exit_code == 0, done.stderr
    files = orjson.loads(done.stdout_bytes)["files"]
    assert files
    for file in files:
        policies = file["policies"]
        none = policies["none"]
        assert none["cache_breaks"] == 0  # it only ever appends
        for name in SAME_WHEN_UNDER:
            run = policies[name]
            assert all(step["stage"] == "none" for step in run["steps"]), (file["path"], name)  # nothing cleared
            assert [s["tokens"] for s in run["steps"]] == [s["tokens"] for s in none["steps"]]
            for figure in ("cache_breaks", "cache_read", "cache_write", "cache_bound", "total_input", "cost"):
                assert run[figure] == none[figure], (file["path"], name, figure)


@dataclass(frozen=True)
class Given:
    """A policy's requests, made beforehand: the replay sees them, the test keeps their shapes."""

    name: str
    made: tuple[Request, ...]
    streams = False

    def describe(self) -> str:
        return self.name

    def requests(self, transcript: Transcript, options: FitOptions) -> Iterator[Request]:
        return iter(self.made)


def conversations(path: Path) -> list[tuple[Transcript, choice.Choice]]:
    """The log's conversations as `replay` reads them: the unlogged part counted, the counter and
    window its model calls for."""
    with path.open("rb") as stream:
        transcripts = [t.materialize() for t in read_transcripts(str(path), stream)]
    chosen = [(t, choice.choose(t, counter=None, window=None, fixed_tokens=None)) for t in transcripts]
    return [(choice.apply(t, c), c) for t, c in chosen]


@needs_realworld
def test_when_a_policy_clears_it_breaks_the_cache_only_where_a_request_changed():
    """At 60% of each conversation's largest request (as `none` sends it) the policies clear and
    trim; a request that kept the cut and the cleared results of the one before only appends to
    it, so it reads all of it and is no break."""
    changed_total = breaks_total = 0
    for path in LOGS:
        for transcript, chosen in conversations(path):
            whole = choice.fit_options(FitOptions(budget=1_000_000_000), chosen)
            largest = replay(transcript, POLICIES["none"], whole).max_request
            if largest < 10_000:
                continue  # (schema fixtures, a log of one short call)
            options = choice.fit_options(FitOptions(budget=largest * 6 // 10), chosen)
            for name in CLEARING:
                made = tuple(POLICIES[name].requests(transcript, options))
                run = replay(transcript, Given(name, made), options, min_cacheable=0)
                previous = None
                for request, step in zip(made, run.steps, strict=True):
                    if step.rejected:
                        continue
                    if previous is not None:
                        changed = request.shape[1:4] != previous.shape[1:4]  # (cleared, start, anchor)
                        changed_total += changed
                        breaks_total += step.cache_break
                        where = (path.name, transcript.line, name, step.call)
                        assert changed or not step.cache_break, where
                        if not changed:
                            assert step.cache_read == min(previous.tokens, request.tokens), where
                        assert step.cache_read <= step.cache_bound <= step.tokens, where
                    previous = request
    assert changed_total and breaks_total  # (the budget did make them clear)


def recorded_log(rounds: int, hidden: int) -> Transcript:
    """A Claude Code log of `rounds` tool rounds reading big files, each reply recording a prompt
    `hidden` tokens (and a growing share) larger than what the log holds: a system prompt and
    injected context the log does not hold, as in the real logs."""
    lines = [cc("user", {"role": "user", "content": "Read every file."}, "u0")]
    for n in range(rounds):
        usage = {"input_tokens": 3, "cache_read_input_tokens": hidden + 2_600 * n, "output_tokens": 20}
        message = {
            "id": f"m{n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"n": n}}],
            "stop_reason": "tool_use",
            "usage": usage,
        }
        lines += [cc("assistant", message, f"a{n}"), result_record(f"r{n}", f"t{n}", f"line {n} " * 1_000)]
    [transcript] = read_transcripts("log.jsonl", io.BytesIO(records(*lines)))
    return transcript.materialize()


def test_anchored_sizes_and_shares_agree_on_a_log_that_records_usage():
    transcript = recorded_log(rounds=24, hidden=9_000)
    chosen = choice.choose(transcript, counter=None, window=None, fixed_tokens=0)  # all of it anchoring
    transcript = choice.apply(transcript, chosen)
    wide = choice.fit_options(FitOptions(budget=1_000_000_000), chosen)
    none = replay(transcript, POLICIES["none"], wide)
    assert any(step.confirmed for step in none.steps)  # (the sizes are anchored)
    for name in CLEARING:  # nothing to clear: the same requests, the same cache
        run = replay(transcript, POLICIES[name], wide)
        assert [s.stage for s in run.steps] == ["none"] * none.calls
        assert run.to_dict(Prices()) == none.to_dict(Prices())
    assert none.cache_breaks == 0
    tight = choice.fit_options(FitOptions(budget=none.max_request * 6 // 10), chosen)
    for name in CLEARING:
        made = tuple(POLICIES[name].requests(transcript, tight))
        run = replay(transcript, Given(name, made), tight, min_cacheable=0)
        changes = [a.shape[1:4] != b.shape[1:4] for a, b in zip(made, made[1:])]
        breaks = [step.cache_break for step in run.steps[1:]]
        assert any(breaks), name
        # (A change need not break: clearing results a trimmed request no longer sends changes nothing.)
        assert all(changed for changed, broke in zip(changes, breaks) if broke), name
        for previous, request, step, changed in zip(made, made[1:], run.steps[1:], changes):
            if not changed:
                assert step.cache_read == min(previous.tokens, request.tokens)
