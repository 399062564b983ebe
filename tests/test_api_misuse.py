"""Issue #20's library reproductions (R10, R18): a Session shared by threads answers each
thread for its own history, and data problems reach callers as `BadInput`, option slips as
clear `TypeError`s, never as a stray TypeError or AttributeError from deep inside."""

from __future__ import annotations

import sys
import threading

import pytest

from ctxfit_cli import BadInput, Session, count, fit
from ctxfit_cli.counters.profiles import load_profile


def _history(name: str, rounds: int) -> list[dict]:
    history = [{"role": "user", "content": f"task of {name}"}]
    for i in range(rounds):
        history.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"{name}-{i}", "name": "read", "input": {"who": name}}]})
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"{name}-{i}", "content": f"{name} result {i} " * 200}]})
    return history


def test_one_session_shared_by_threads_answers_each_for_its_own_history():
    session = Session(budget=4_000, system="You are a careful agent.")
    names = [f"agent{k}" for k in range(4)]
    histories = {name: _history(name, 12) for name in names}
    expected = {name: [fit(h[:n], budget=4_000, system="You are a careful agent.")
                       for n in range(1, len(h) + 1, 2)] for name, h in histories.items()}
    problems: list[str] = []
    start = threading.Barrier(len(names))

    def loop(name: str) -> None:
        start.wait()
        history = histories[name]
        try:
            for step, n in enumerate(range(1, len(history) + 1, 2)):
                sent = session.fit(history[:n])
                if sent != expected[name][step]:
                    problems.append(f"{name} step {step}: got another history's messages")
        except Exception as error:  # IndexError, a false BadInput: what the issue saw
            problems.append(f"{name}: {type(error).__name__}: {error}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show at once
    try:
        for _ in range(3):
            threads = [threading.Thread(target=loop, args=(name,)) for name in names]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
            assert not any(t.is_alive() for t in threads)
    finally:
        sys.setswitchinterval(interval)
    assert problems == []


DEEP: dict = {}
_level = DEEP
for _ in range(300):
    _level["a"] = {}
    _level = _level["a"]


@pytest.mark.parametrize(("messages", "where", "problem"), [
    ([{"role": "user", "content": "bad \ud83d"}], "messages[0]", "lone UTF-16 surrogate"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x", "n": 2**70}],
     "messages[1]", "integer beyond 64 bits"),
    ([{"role": "user", "content": "go"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": DEEP}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}],
     "messages[1]", "nested more than 254 levels"),
], ids=["surrogate", "int-past-64-bits", "tool-input-300-deep"])
def test_data_no_json_reader_takes_is_bad_input(messages, where, problem):
    for call in (lambda: fit(messages, budget=1000), lambda: count(messages), lambda: Session(1000).fit(messages)):
        with pytest.raises(BadInput) as raised:
            call()
        assert str(raised.value).startswith(f"{where}: ") and problem in str(raised.value)


@pytest.mark.parametrize("option", ["system", "tools"])
def test_a_surrogate_in_the_system_prompt_or_tools_is_bad_input(option):
    value = "x \ud83d" if option == "system" else [{"name": "ok", "input_schema": {}}, {"name": "x\ud83d", "input_schema": {}}]
    with pytest.raises(BadInput, match=r"^(system|tools\[1\]): holds a lone UTF-16 surrogate"):
        fit([{"role": "user", "content": "hi"}], budget=1000, **{option: value})


def test_a_profile_named_by_fit_is_the_one_count_uses():
    history = _history("a", 6)
    budget = count(history, counter="safe") - 1  # over the budget by the safe profile only
    sent = fit(history, budget=budget, counter="safe", lowwater=None)
    assert sent != history
    assert fit(history, budget=budget, counter=load_profile("safe"), lowwater=None) == sent
    session = Session(budget=budget, counter="safe")
    assert session.options.counter.name == load_profile("safe").name


@pytest.mark.parametrize("budget", [float("nan"), float("inf"), True, 100.5, "100"])
def test_a_budget_that_is_no_whole_number_of_tokens_is_refused(budget):
    with pytest.raises(TypeError, match="budget must be a whole number of tokens"):
        fit([{"role": "user", "content": "hi"}], budget=budget)
    with pytest.raises(TypeError, match="budget must be a whole number of tokens"):
        Session(budget=budget)


def test_a_window_that_is_no_whole_number_of_tokens_is_refused():
    with pytest.raises(TypeError, match="window must be a whole number of tokens"):
        fit([{"role": "user", "content": "hi"}], budget=100, window=float("nan"))
    with pytest.raises(ValueError, match="budget must be positive"):
        fit([{"role": "user", "content": "hi"}], budget=0)


def test_numpy_integers_are_whole_numbers():
    numpy = pytest.importorskip("numpy")
    history = [{"role": "user", "content": "hi"}]
    assert fit(history, budget=numpy.int64(1000)) == history
