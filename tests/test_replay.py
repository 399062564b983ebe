"""Replay: request sizes, rejections and the cache accounting, with exact numbers."""

from __future__ import annotations

import pytest

from ctxfit_cli.core.costs import message_cost
from ctxfit_cli.core.fitting import FitOptions
from ctxfit_cli.replay.policies import POLICIES
from ctxfit_cli.replay.simulation import Prices, replay
from conftest import Chat
from test_fitting import result


def costs(transcript) -> list[int]:
    return [message_cost(m).tokens for m in transcript.messages]


def fixed(transcript) -> int:
    return sum(message_cost(m).tokens for m in transcript.fixed)


def test_a_request_that_only_appends_a_round_reads_the_whole_previous_request_from_cache():
    transcript = Chat().user("Go.").round(result(300)).round(result(300)).round(result(300)).transcript()
    c, f = costs(transcript), fixed(transcript)
    run = replay(transcript, POLICIES["none"], FitOptions(budget=100_000), min_cacheable=0)
    sizes = [f + c[0], f + sum(c[:3]), f + sum(c[:5])]
    assert [s.tokens for s in run.steps] == sizes
    assert [s.cache_read for s in run.steps] == [0, sizes[0], sizes[1]]
    assert [s.cache_write for s in run.steps] == [sizes[0], sizes[1] - sizes[0], sizes[2] - sizes[1]]
    assert run.cache_breaks == 0 and run.rejected == 0
    assert run.total_input == sum(sizes)
    assert run.cost == pytest.approx(0.1 * (sizes[0] + sizes[1]) + 1.25 * sizes[2])


def test_a_clearing_batch_breaks_the_prefix_at_the_first_cleared_result():
    chat = Chat().user("Read them all.")
    for _ in range(10):
        chat.round(result(300))
    transcript = chat.transcript()
    c, f = costs(transcript), fixed(transcript)
    run = replay(transcript, POLICIES["ctxfit-strict"], FitOptions(budget=2_000), min_cacheable=0)
    first_clear = next(s for s in run.steps if s.stage == "clear")
    # Batch 1 clears the results at messages 2, 4, 6, 8: the prefix still shared is the
    # system prompt, the instruction and the first assistant message.
    assert first_clear.cache_read == f + c[0] + c[1]
    assert first_clear.cache_break
    assert first_clear.cache_write == first_clear.tokens - first_clear.cache_read
    # The bound: all of the previous request except the four results it no longer sends as they were.
    previous = run.steps[run.steps.index(first_clear) - 1]
    assert first_clear.cache_bound == previous.tokens - (c[2] + c[4] + c[6] + c[8])
    following = run.steps[run.steps.index(first_clear) + 1]
    assert following.stage == "clear" and not following.cache_break  # the cleared region holds
    assert following.cache_bound == following.cache_read == first_clear.tokens
    assert run.rejected == 0 and run.max_request <= 2_000


def test_min_cacheable_prefix_means_short_prefixes_are_plain_input():
    transcript = Chat().user("Go.").round(result(100)).round(result(100)).transcript()
    run = replay(transcript, POLICIES["none"], FitOptions(budget=100_000), min_cacheable=1024)
    assert all(s.cache_read == 0 and s.cache_write == 0 for s in run.steps)
    assert run.cost == run.total_input


def test_requests_over_the_window_are_rejected_and_counted():
    chat = Chat().user("Read the book.")
    for _ in range(6):
        chat.round(result(3_000))
    transcript = chat.transcript()
    old = replay(transcript, POLICIES["turns"], FitOptions(budget=6_000, window=12_000))
    new = replay(transcript, POLICIES["ctxfit"], FitOptions(budget=6_000, window=12_000))
    assert old.rejected == 2 and old.first_rejected == 5  # nowhere to cut: the history grows
    assert new.rejected == 0 and new.max_request <= 6_000


def test_batched_clearing_keeps_more_of_the_cache_than_clearing_one_at_a_time():
    chat = Chat().user("Read everything.")
    for _ in range(40):
        chat.round(result(500))
    transcript = chat.transcript()
    options = FitOptions(budget=8_000)
    batched = replay(transcript, POLICIES["ctxfit"], options).to_dict(Prices())
    each = replay(transcript, POLICIES["clear-each"], options).to_dict(Prices())
    assert batched["cache_breaks"] < each["cache_breaks"]
    assert batched["cache_read_share"] > each["cache_read_share"]


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_policy_replays_both_dialects(name):
    for dialect in ("anthropic", "openai"):
        chat = Chat(dialect).user("Go.")
        for n in range(12):
            chat.round(result(400), result(200))
            if n % 4 == 3:
                chat.say("Done with this part.").user("Carry on.")
        run = replay(chat.transcript(), POLICIES[name], FitOptions(budget=3_000, window=9_000))
        assert run.calls == 15
        if name.startswith("ctxfit"):
            assert run.max_request <= 3_000


def test_the_cache_bound_is_never_below_the_read_and_totals_divide_after_adding():
    chat = Chat().user("Read everything.")
    for n in range(30):
        chat.round(result(500))
        if n % 7 == 6:
            chat.say("Part done.").user("Carry on.")
    transcript = chat.transcript()
    for name in POLICIES:
        run = replay(transcript, POLICIES[name], FitOptions(budget=6_000, window=20_000), min_cacheable=0)
        assert all(s.cache_read <= s.cache_bound <= s.tokens for s in run.steps if not s.rejected)
        numbers = run.to_dict(Prices())
        assert numbers["cache_bound"] == sum(s.cache_bound for s in run.steps)
        assert numbers["share_of_bound"] == round(run.cache_read / run.cache_bound, 4)
    none = replay(transcript, POLICIES["none"], FitOptions(budget=6_000, window=200_000)).to_dict(Prices())
    assert none["share_of_bound"] == 1.0  # it only appends: it reads all it could
