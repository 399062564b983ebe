"""DESIGN §7: 8 sub-agents, one instruction each, reading 40 Russian chapters of ~95,000
characters; budget 400,000, window 1,000,000. The old turn trimming is rejected on every one;
ctxfit keeps every request within the budget and valid."""

from __future__ import annotations

import io
import sys

import orjson
import pytest

from ctxfit_cli.core.costs import total_tokens
from ctxfit_cli.core.fitting import FitOptions, Fitter
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.payload import build
from ctxfit_cli.replay.policies import POLICIES
from ctxfit_cli.replay.simulation import replay
from ctxfit_cli.core.validate import validate_request
from conftest import SAMPLES

sys.path.insert(0, str(SAMPLES))
import subagents  # noqa: E402

OPTIONS = FitOptions(budget=400_000, window=1_000_000)


def agent_transcript(agent: int):
    lines = [{"role": "system", "content": subagents.SYSTEM_PROMPT}, *subagents.subagent_messages(agent)]
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    [transcript] = read_transcripts(f"subagent_{agent}", io.BytesIO(data), "anthropic")
    return transcript.materialize()


@pytest.fixture(scope="module")
def agents():
    return [agent_transcript(agent) for agent in range(1, 9)]


def test_each_subagent_has_one_instruction_and_far_more_than_the_window(agents):
    for transcript in agents:
        assert sum(m.is_human_turn for m in transcript.messages) == 1
        assert sum(1 for m in transcript.messages if m.role.value == "assistant") == 41
        total = total_tokens(transcript.messages)
        assert total > 1_500_000


def test_every_fitted_request_at_every_step_is_within_budget_and_valid(agents):
    for transcript in agents:
        plans = []
        fitter = Fitter(OPTIONS, transcript.fixed, dialect="anthropic", on_request=plans.append)
        fitter.extend(transcript.messages)
        plans.append(fitter.plan())
        assert len(plans) == 42
        for plan in plans:
            fitted = build(transcript, plan)
            assert fitted.tokens <= 400_000, (transcript.path, plan.messages, fitted.tokens)
            assert validate_request(orjson.loads(fitted.payload), "anthropic") == []
            assert fitted.payload.startswith(b'{"system":')


def test_old_turn_trimming_is_rejected_on_all_eight_and_ctxfit_on_none(agents):
    for transcript in agents:
        old = replay(transcript, POLICIES["turns"], OPTIONS)
        new = replay(transcript, POLICIES["ctxfit"], OPTIONS)
        assert old.rejected > 0, transcript.path
        assert new.rejected == 0 and new.max_request <= 400_000, transcript.path
