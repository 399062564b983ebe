"""The three fitting stages of DESIGN §4 on conversations whose sizes are known exactly."""

from __future__ import annotations

import io

import orjson
import pytest

from ctxfit_cli.counters.seed import SEED
from ctxfit_cli.core.costs import message_cost
from ctxfit_cli.core.fitting import DEFAULT_LOWWATER, FitOptions, Fitter
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.core.notes import CLEARED_RESULT, TRIMMED_HISTORY
from ctxfit_cli.formats.payload import fit_transcript
from ctxfit_cli.core.validate import validate_request
from conftest import Chat, ascii_text

CALL_ID_CHARS = len("call_0001")


def result(tokens: int) -> str:
    """A tool result the seed rule counts as exactly `tokens` (its call id included)."""
    return "x" * (4 * tokens - CALL_ID_CHARS)


def fit(chat: Chat, budget: int, **options):
    transcript = chat.transcript()
    raws = [m.raw for m in transcript.messages]
    fitted = fit_transcript(transcript, FitOptions(budget=budget, **options))
    assert [m.raw for m in transcript.messages] == raws, "the input must never change"
    payload = orjson.loads(fitted.payload)
    assert validate_request(payload, chat.dialect) == []
    assert fitted.tokens == fitted.plan.tokens_after, "the plan must predict the payload's size"
    return fitted, payload


def subagent(results: list[int], dialect: str = "anthropic") -> Chat:
    chat = Chat(dialect).user("Read every file and summarise them.")
    for tokens in results:
        chat.round(result(tokens))
    return chat


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
def test_a_request_within_budget_is_sent_byte_for_byte(dialect):
    chat = subagent([200, 200], dialect)
    fitted, payload = fit(chat, budget=10_000)
    assert fitted.plan.stage == "none"
    original = [line for line in chat.jsonl().splitlines()]
    sent = fitted.payload
    for line in original[1:]:  # every message line appears verbatim
        assert line in sent


def test_results_sizes_are_exact():
    fitted, _ = fit(subagent([150, 150]), budget=10_000)
    assert [r.tokens for r in fitted.plan.protected] == [150, 150]


def test_newest_results_within_a_quarter_of_the_budget_are_protected():
    # budget 1,000: a quarter is 250. The newest two results (100 + 100) fit, three would not.
    fitted, _ = fit(subagent([200] * 6 + [100, 100]), budget=1_000)
    assert [r.index for r in fitted.plan.protected] == [14, 16]
    assert all(r.index not in (14, 16) for r in fitted.plan.cleared)


def test_a_newest_result_larger_than_the_quarter_is_still_protected():
    fitted, payload = fit(subagent([200] * 6 + [300]), budget=1_000)
    assert [r.tokens for r in fitted.plan.protected] == [300]
    assert result(300) in fitted.payload.decode()


def test_small_results_are_left_whole():
    chat = subagent([20, 20, 20, 20, 300, 300, 300, 300, 300, 300, 50])
    fitted, _ = fit(chat, budget=1_200)
    cleared = {r.tokens for r in fitted.plan.cleared}
    assert 20 not in cleared and fitted.plan.cleared
    assert {r.tokens for r in fitted.plan.too_small} == {20}
    assert fitted.payload.decode().count(f'"{result(20)}"') == 4


def test_results_are_cleared_oldest_first_in_batches_of_four_with_a_shorter_last():
    chat = subagent([300] * 10 + [200])  # 10 candidates: batches of 4, 4 and 2
    fitted, payload = fit(chat, budget=1_000)
    assert [len(b.results) for b in fitted.plan.batches] == [4, 4, 2]
    assert all(b.cleared for b in fitted.plan.batches)
    cleared = [r.index for r in fitted.plan.cleared]
    assert cleared == sorted(cleared) and cleared[0] == 2
    assert fitted.payload.decode().count(CLEARED_RESULT) == 10


def test_strict_clearing_stops_at_the_first_batch_that_fits_exactly_at_the_budget():
    chat = subagent([300] * 10 + [200])
    probe, _ = fit(chat, budget=1_000, lowwater=None)
    after_two = probe.plan.batches[1].tokens_after
    exact, _ = fit(chat, budget=after_two, lowwater=None)
    assert exact.plan.protected == probe.plan.protected or exact.plan.batches[1].tokens_after == after_two
    assert [b.cleared for b in exact.plan.batches][:3] == [True, True, False]
    assert exact.tokens == after_two
    one_less, _ = fit(chat, budget=after_two - 1, lowwater=None)
    assert one_less.plan.batches[2].cleared


def walk_plans(chat: Chat, options: FitOptions) -> list:
    plans = []
    transcript = chat.transcript()
    fitter = Fitter(options, transcript.fixed, dialect=transcript.dialect, on_request=plans.append)
    fitter.extend(transcript.messages)
    return plans


def test_once_it_must_clear_the_default_clears_whole_batches_down_to_the_low_water_mark():
    chat = subagent([300] * 40)
    budget = 4_000
    default = FitOptions(budget=budget)
    assert default.lowwater == DEFAULT_LOWWATER == 0.55
    plans, strict = walk_plans(chat, default), walk_plans(chat, FitOptions(budget=budget, lowwater=None))
    clears = 0
    for before, plan in zip(plans, plans[1:]):
        cleared = sum(b.cleared for b in plan.batches)
        if cleared > sum(b.cleared for b in before.batches):  # this request had to clear
            clears += 1
            assert plan.tokens_after <= 0.55 * budget or cleared == len(plan.batches)
            assert plan.batches[cleared - 2].tokens_after > 0.55 * budget  # one batch less is not enough
    assert clears >= 2 and all(p.tokens_after <= budget for p in plans)
    # The same results are protected as under the strict rule: only where stage 1 stops differs.
    assert [p.protected for p in plans] == [p.protected for p in strict]
    # The strict rule clears more often, a batch at a time.
    strict_clears = sum(1 for a, b in zip(strict, strict[1:]) if b.cleared != a.cleared)
    assert strict_clears > clears


def test_stage_two_keeps_the_first_message_and_the_newest_whole_turns():
    chat = Chat("anthropic").user("Let us plan the release.")
    for turn in range(8):
        chat.say(f"Answer {turn}: " + ascii_text(300))
        chat.user(f"Question {turn}: " + ascii_text(300))
    fitted, payload = fit(chat, budget=2_000)
    plan = fitted.plan
    assert plan.stage == "turns" and plan.tokens_after <= 2_000
    first = payload["messages"][0]
    assert first["role"] == "user"
    assert first["content"][0] == {"type": "text", "text": "Let us plan the release."}
    assert first["content"][1]["text"] == TRIMMED_HISTORY
    assert "Question 7" in fitted.payload.decode()  # the newest turn is kept
    assert "Question 0" not in fitted.payload.decode()


def test_stage_three_keeps_the_newest_whole_rounds_of_a_one_instruction_subagent():
    chat = Chat("openai").user("Write the ten modules.")
    for n in range(10):
        chat.lines.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{n:04d}", "type": "function",
            "function": {"name": "write_file", "arguments": orjson.dumps({"text": ascii_text(400)}).decode()}}]})
        chat.lines.append({"role": "tool", "tool_call_id": f"call_{n:04d}", "content": "ok"})
    fitted, payload = fit(chat, budget=2_000)
    assert fitted.plan.stage == "rounds" and fitted.plan.tokens_after <= 2_000
    assert payload["messages"][1]["content"][0]["text"] == "Write the ten modules."
    assert payload["messages"][-1]["tool_call_id"] == "call_0009"
    assert fitted.plan.dropped[0][0] == 1


def test_a_fresh_prompt_after_a_long_turn_keeps_the_newest_rounds_of_that_turn():
    """A resumed session's "continue" (a turn with no round yet) after one long turn of tool
    rounds: the request keeps the first message, the long turn's opening and its newest rounds,
    not the prompt alone (issue 33: a Claude Code resume kept none of its 155 messages of work)."""
    chat = Chat("anthropic").user("Summary of an earlier session.").say("Noted.")
    chat.user("Fix the failing tests.")
    for _ in range(12):
        chat.round(result(400))
    chat.say("The tests pass now.").user("continue " + ascii_text(1_000))  # (with the agent's reminders)
    fitted, payload = fit(chat, budget=3_000, min_clear_tokens=10_000)  # (no clearing: the cut alone)
    plan, sent = fitted.plan, fitted.payload.decode()
    assert plan.tokens_after <= 3_000 and plan.stage == "rounds"
    assert payload["messages"][0]["content"][1]["text"] == TRIMMED_HISTORY
    assert "Fix the failing tests." in sent and "The tests pass now." in sent  # its anchor and newest round
    assert "call_0011" in sent and "call_0000" not in sent
    assert payload["messages"][-1]["content"].startswith("continue")


def test_a_fresh_prompt_keeps_the_newest_round_with_its_protected_result_cleared_rather_than_dropped():
    """A first message (an old compaction summary) and one big newest round do not fit with a
    fresh prompt: the round's protected result is cleared, its call and the reply kept, rather
    than the round dropped (issue 33 item 7: the note says the most recent steps are shown)."""
    chat = Chat("anthropic").user("Summary of an earlier session. " + ascii_text(1_500)).say("Noted.")
    chat.user("Read the build log.").round(result(2_000)).say("The build log shows one failing test.")
    chat.user("continue")
    fitted, payload = fit(chat, budget=2_500)
    plan, sent = fitted.plan, fitted.payload.decode()
    assert plan.tokens_before > 2_500 >= plan.tokens_after and plan.stage == "rounds"
    [cleared] = plan.cleared  # the round's only result, protected until the round had to go
    assert plan.protected == ()
    assert TRIMMED_HISTORY in sent and "Read the build log." in sent
    blocks = [b for m in payload["messages"] if isinstance(m["content"], list) for b in m["content"]]
    assert [b["id"] for b in blocks if b["type"] == "tool_use"] == [cleared.call_id]  # the call kept
    assert [b["content"] for b in blocks if b["type"] == "tool_result"] == [CLEARED_RESULT]  # its result cleared
    assert "The build log shows one failing test." in sent
    assert payload["messages"][-1]["content"] == "continue"


def test_a_cut_may_fall_inside_an_older_turn_keeping_more_of_its_newest_work():
    """Where a whole older turn does not fit, its newest rounds (and its opening) are kept
    before it is dropped for the turns after it: the fit keeps a superset of what it kept."""
    chat = Chat("anthropic").user("Plan the release.").say("Planned.")
    chat.user("Run the checks.")
    for _ in range(10):
        chat.round(result(300))
    chat.say("Checks done.").user("Thanks. Now write the notes. " + ascii_text(700)).say("Written.")
    fitted, payload = fit(chat, budget=2_500, min_clear_tokens=10_000)
    sent = fitted.payload.decode()
    assert fitted.plan.tokens_after <= 2_500 and fitted.plan.anchor is not None
    assert "Run the checks." in sent and "Checks done." in sent and "call_0009" in sent
    assert "Thanks. Now write the notes." in sent


def test_a_single_huge_newest_result_is_sent_as_the_smallest_request_with_an_overrun():
    fitted, _ = fit(subagent([300, 300, 5_000]), budget=2_000, window=10_000)
    assert fitted.plan.overrun and not fitted.plan.cannot_fit
    assert fitted.tokens > 2_000


def test_past_the_window_the_request_cannot_fit():
    transcript = subagent([300, 30_000]).transcript()
    fitted = fit_transcript(transcript, FitOptions(budget=2_000, window=10_000))
    assert fitted.plan.cannot_fit


def test_the_same_input_gives_the_same_bytes_and_refitting_changes_nothing():
    chat = subagent([300] * 10 + [200])
    first, _ = fit(chat, budget=1_000)
    again, _ = fit(chat, budget=1_000)
    assert first.payload == again.payload
    [refit_input] = read_transcripts("payload.json", io.BytesIO(first.payload))
    refit = fit_transcript(refit_input.materialize(), FitOptions(budget=1_000))
    assert refit.payload == first.payload


class CountingCounter:
    """The seed rule, counting how often it is asked to measure."""

    name = "counting-seed"
    classes = SEED.classes

    def __init__(self) -> None:
        self.calls = 0

    def measure(self, text):
        self.calls += 1
        return SEED.measure(text)

    def tokens(self, vector):
        return SEED.tokens(vector)


def test_an_agent_loop_does_not_re_estimate_old_messages():
    counter = CountingCounter()
    chat = subagent([300] * 30)
    history = list(chat.transcript().messages)
    fitter = Fitter(FitOptions(budget=2_000, counter=counter))
    fitter.update(history[:41])
    after_first = counter.calls
    plan = fitter.update(history[:43])  # one more round
    new_texts = sum(1 for m in history[41:43] for p in m.parts for s in (p.tool, p.text, p.call_id) if s)
    # The new messages, plus a constant few for the notes: never the old history again.
    assert counter.calls - after_first <= new_texts + 4
    assert after_first > 100
    assert plan.tokens_after <= 2_000


def test_incremental_updates_give_the_same_plan_as_a_fresh_fit():
    history = list(subagent([300] * 20).transcript().messages)
    fitter = Fitter(FitOptions(budget=2_000))
    for end in range(2, len(history) + 1, 2):
        incremental = fitter.update(history[:end])
        fresh = Fitter(FitOptions(budget=2_000))
        fresh.extend(history[:end])
        assert incremental == fresh.plan()


def test_the_input_messages_and_their_bytes_are_unchanged_by_fitting():
    transcript = subagent([300] * 10).transcript()
    before = [(m.role, m.parts, m.raw) for m in transcript.messages]
    fit_transcript(transcript, FitOptions(budget=800))
    assert [(m.role, m.parts, m.raw) for m in transcript.messages] == before


def test_estimates_are_cached_on_messages():
    transcript = subagent([300]).transcript()
    message = transcript.messages[0]
    assert message_cost(message) is message_cost(message)


def test_the_agent_loop_api_sends_what_a_one_off_fit_sends():
    from ctxfit_cli import Transcript, build, to_message

    chat = subagent([300] * 12)
    whole = chat.transcript()
    agent = Transcript("agent", "anthropic", "anthropic", (), system=whole.system)
    fitter = Fitter(FitOptions(budget=1_500), agent.fixed, dialect="anthropic")
    history = []
    for line in chat.lines[1:]:
        history.append(to_message(line, "anthropic"))
        plan = fitter.update(history)
    loop = build(agent, plan, messages=history)
    assert loop.payload == fit_transcript(whole, FitOptions(budget=1_500)).payload
    assert loop.tokens <= 1_500
