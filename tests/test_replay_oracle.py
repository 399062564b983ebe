"""The replay's cache accounting is computed from prefix sums; here it is checked against the
slow, obvious way: build every request's messages and compare them one by one."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfit_cli.core.costs import message_cost
from ctxfit_cli.core.fitting import FitOptions, Fitter
from ctxfit_cli.formats.payload import sent_messages
from ctxfit_cli.replay.policies import POLICIES, OldTurns
from conftest import read
from test_fit_properties import budgets, conversations


def brute_shared(fixed: int, earlier: tuple, current: tuple) -> int:
    """Messages count as shared when they are the same message of the history (or the same
    changed copy of it); two different messages that happen to have equal text do not."""
    shared = fixed
    for old, new in zip(earlier, current):
        if old is not new:
            break
        shared += message_cost(new).tokens
    return shared


def walk(transcript, options):
    """Every request of the walk: (plan's sent messages, shape)."""
    plans, shapes = [], []
    fitter = Fitter(options, transcript.fixed, dialect=transcript.dialect,
                    on_request=plans.append, on_shape=shapes.append)
    fitter.extend(transcript.messages)
    return fitter, [(sent_messages(transcript, p), s) for p, s in zip(plans, shapes)]


SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(conversations(), budgets, st.sampled_from(["ctxfit", "ctxfit-strict", "clear-each", "keep-6", "clear-at-least"]))
def test_shared_prefix_from_prefix_sums_equals_comparing_the_messages(conversation, budget, name):
    dialect, lines = conversation
    transcript = read(lines, dialect)
    options = POLICIES[name].adjust(FitOptions(budget=budget, window=budget * 3))
    fitter, requests = walk(transcript, options)
    fixed = sum(message_cost(m).tokens for m in transcript.fixed)
    for (sent, shape) in requests:
        assert shape.tokens == fixed + sum(message_cost(m).tokens for m in sent)
    for i in range(1, len(requests)):
        for j in range(max(0, i - 3), i):  # the previous request, and a few older ones
            (old_sent, old_shape), (new_sent, new_shape) = requests[j], requests[i]
            assert fitter.shared_tokens(old_shape, new_shape) == brute_shared(fixed, old_sent, new_sent)


@SETTINGS
@given(conversations(), budgets)
def test_old_turns_policy_shares_what_its_messages_share(conversation, budget):
    dialect, lines = conversation
    transcript = read(lines, dialect)
    options = FitOptions(budget=budget, window=budget * 3)
    requests = list(OldTurns().requests(transcript, options))
    fixed = sum(message_cost(m).tokens for m in transcript.fixed)

    def sent(request):
        start, end = request.shape
        if not start:
            return tuple(transcript.messages[:end])
        return plan_messages(transcript, start, end)

    for request in requests:
        assert request.tokens == fixed + sum(message_cost(m).tokens for m in sent(request))
    for earlier, current in zip(requests, requests[1:]):
        assert current.shared_with(earlier) == brute_shared(fixed, sent(earlier), sent(current))


def transcript_first(transcript) -> int:
    return next(i for i, m in enumerate(transcript.messages) if m.role.value == "user")


def plan_messages(transcript, start, end):
    from ctxfit_cli.core.plan import Plan
    first = transcript_first(transcript)
    plan = Plan(stage="turns", budget=1, window=1, tokens_before=0, tokens_after=0, fixed_tokens=0,
                batches=(), protected=(), too_small=(), first=first, start=start, anchor=None,
                dropped=((first + 1, start),), messages=end, overrun=False, cannot_fit=False)
    return sent_messages(transcript, plan)


def brute_still_sent(fixed: int, earlier: tuple, current: tuple) -> int:
    """The cache bound the slow way: every message of `current` that `earlier` sent too."""
    sent_before = {id(m) for m in earlier}
    return fixed + sum(message_cost(m).tokens for m in current if id(m) in sent_before)


@SETTINGS
@given(conversations(), budgets, st.sampled_from(["ctxfit", "ctxfit-strict", "clear-each", "keep-6", "clear-at-least"]))
def test_cache_bound_from_prefix_sums_equals_comparing_the_messages(conversation, budget, name):
    dialect, lines = conversation
    transcript = read(lines, dialect)
    options = POLICIES[name].adjust(FitOptions(budget=budget, window=budget * 3))
    fitter, requests = walk(transcript, options)
    fixed = sum(message_cost(m).tokens for m in transcript.fixed)
    for i in range(1, len(requests)):
        for j in range(max(0, i - 3), i):
            (old_sent, old_shape), (new_sent, new_shape) = requests[j], requests[i]
            bound = fitter.still_sent_tokens(old_shape, new_shape)
            assert bound == brute_still_sent(fixed, old_sent, new_sent)
            assert fitter.shared_tokens(old_shape, new_shape) <= bound <= min(old_shape.tokens, new_shape.tokens)


@SETTINGS
@given(conversations(), budgets)
def test_old_turns_cache_bound_equals_comparing_the_messages(conversation, budget):
    dialect, lines = conversation
    transcript = read(lines, dialect)
    requests = list(OldTurns().requests(transcript, FitOptions(budget=budget, window=budget * 3)))
    fixed = sum(message_cost(m).tokens for m in transcript.fixed)

    def sent(request):
        start, end = request.shape
        return tuple(transcript.messages[:end]) if not start else plan_messages(transcript, start, end)

    for earlier, current in zip(requests, requests[1:]):
        bound = current.still_sent(earlier)
        assert bound == brute_still_sent(fixed, sent(earlier), sent(current))
        assert current.shared_with(earlier) <= bound
