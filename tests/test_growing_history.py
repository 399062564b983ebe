"""A growing history worked on step by step (`Session`, the proxy) gives what working on it whole
gives: the repair, lines and all, and the checks of the request."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfit_cli.core.repair import repair
from ctxfit_cli.core.repair_steps import RepairedHistory
from ctxfit_cli.core.validate import check_message, scan
from ctxfit_cli.core.validate_steps import ScanSteps
from ctxfit_cli.formats import to_message
from ctxfit_cli.formats.repair_writers import WRITERS
from conftest import REALWORLD, needs_realworld

IDS = ["a", "b", "c", "d"]


def anthropic_message(kind: str, ids: list[str]) -> dict:
    """One message of an Anthropic history, sound or broken in the ways real logs are."""
    if kind == "ask":
        return {"role": "user", "content": "go on"}
    if kind == "say":
        return {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    if kind == "call":
        return {"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": "ls", "input": {}} for i in ids]}
    if kind == "results":
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": "x"} for i in ids]}
    if kind == "results_after_text":
        return {"role": "user", "content": [{"type": "text", "text": "meanwhile"}]
                + [{"type": "tool_result", "tool_use_id": i, "content": "x"} for i in ids]}
    if kind == "blank":
        return {"role": "assistant", "content": [{"type": "text", "text": "\n\n"}]}
    if kind == "thinking":
        return {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]}
    raise AssertionError(kind)


def openai_message(kind: str, ids: list[str]) -> dict:
    if kind == "ask":
        return {"role": "user", "content": "go on"}
    if kind == "say":
        return {"role": "assistant", "content": "ok"}
    if kind == "call":
        calls = [{"id": i, "type": "function", "function": {"name": "ls", "arguments": "{}"}} for i in ids]
        return {"role": "assistant", "content": None, "tool_calls": calls}
    if kind in ("results", "results_after_text"):
        return {"role": "tool", "tool_call_id": ids[0] if ids else "ghost", "content": "x"}
    if kind == "blank":
        return {"role": "assistant", "content": ""}
    if kind == "thinking":
        return {"role": "system", "content": "be brief"}
    raise AssertionError(kind)


MAKERS = {"anthropic": anthropic_message, "openai": openai_message}
# Mostly sound rounds (the common case, where restart points are), with every kind of break.
KINDS = st.sampled_from(["call", "results"] * 4 + ["ask", "say", "results_after_text", "blank", "thinking"])
STEPS = st.lists(st.tuples(KINDS, st.lists(st.sampled_from(IDS), max_size=3)), min_size=1, max_size=60)


def parsed(dialect: str, values: list[dict]) -> list:
    return [to_message(value, dialect) for value in values]


def shape(messages: list) -> list[tuple]:
    return [(m.role, m.raw, m.line) for m in messages]


def assert_steps_equal_whole(dialect: str, messages: list, ends: list[int]) -> int:
    """Repair `messages[:end]` for each end in turn, step by step and whole; returns how many
    steps restarted past the start."""
    steps = RepairedHistory(WRITERS[dialect], "messages")
    restarted = 0
    for end in ends:
        lines, whole_lines = [], []
        restarted += bool(steps._restart(messages[:end])[0])
        body = steps.repair(messages[:end], lines)
        whole = list(repair(messages[:end], WRITERS[dialect], "messages", whole_lines))
        assert shape(body) == shape(whole), end
        assert lines == whole_lines, end
    return restarted


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS, data=st.data())
def test_broken_histories_repaired_step_by_step_as_whole(dialect, steps, data):
    # A sound start, so that later steps have points to restart from.
    values = [MAKERS[dialect]("ask", [])]
    for round_ in range(8):
        values += [MAKERS[dialect]("call", [f"r{round_}"]), MAKERS[dialect]("results", [f"r{round_}"])]
    values += [MAKERS[dialect](kind, ids) for kind, ids in steps]
    messages = parsed(dialect, values)
    ends, end = [], 1
    while end < len(messages):
        end += data.draw(st.integers(1, 3))
        ends.append(min(end, len(messages)))
    assert_steps_equal_whole(dialect, messages, ends)


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
def test_a_sound_agent_loop_restarts_near_its_end(dialect):
    values = [MAKERS[dialect]("ask", [])]
    for round_ in range(200):
        values += [MAKERS[dialect]("call", [f"r{round_}"]), MAKERS[dialect]("results", [f"r{round_}"])]
    messages = parsed(dialect, values)
    ends = list(range(3, len(messages) + 1, 2))
    assert assert_steps_equal_whole(dialect, messages, ends) >= len(ends) - 10


@needs_realworld
@pytest.mark.parametrize("folder", ["claude-code", "cline", "openhands"])
def test_real_logs_repaired_step_by_step_as_whole(folder):
    from ctxfit_cli.formats import read_transcripts
    from ctxfit_cli.formats.reading import open_input

    checked = 0
    for path in sorted((REALWORLD / folder).rglob("*")):
        if not path.is_file() or path.suffix not in (".jsonl", ".json"):
            continue
        try:
            with open_input(str(path)) as stream:
                transcripts = [t.materialize() for t in read_transcripts(str(path), stream, None)]
        except Exception:
            continue  # (not a transcript: a sidecar file of the folder)
        for transcript in transcripts:
            if transcript.dialect not in MAKERS:
                continue
            values = [orjson.loads(m.raw) for m in transcript.messages if m.role.value != "system"]
            messages = parsed(transcript.dialect, values)
            assert_steps_equal_whole(transcript.dialect, messages, list(range(1, len(messages) + 1)))
            checked += 1
    assert checked


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS, data=st.data())
def test_the_checks_of_a_growing_request_resumed_find_what_a_whole_scan_finds(dialect, steps, data):
    values = [MAKERS[dialect]("ask", [])]
    for round_ in range(40):
        values += [MAKERS[dialect]("call", [f"r{round_}"]), MAKERS[dialect]("results", [f"r{round_}"])]
    values += [MAKERS[dialect](kind, ids) for kind, ids in steps]
    checked = [check_message(value, dialect) for value in values]
    scans = ScanSteps()
    end = data.draw(st.integers(1, 20))
    while end <= len(checked):
        request = checked[:end]
        if data.draw(st.booleans()):  # a result cleared since: that message checked anew
            at = data.draw(st.integers(0, end - 1))
            request[at] = check_message(values[at], dialect)
        assert scans.problems(request, dialect) == scan(request, dialect)
        end += data.draw(st.integers(1, 40))
