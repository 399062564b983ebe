"""A replay checks every request it simulates (DESIGN §8) without scanning each one whole
(issue #10): a trimmed request's junctions are scanned once per cut, and still refused when bad."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ctxfit_cli.errors import BadInput, InvalidRequest
from ctxfit_cli.replay import validity
from ctxfit_cli.replay.validity import RequestCheck
from conftest import read


def call(i):
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}]}


def result(i):
    return {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"}


HISTORY = [{"role": "user", "content": "Read them."}, call(1), result(1), call(2), result(2), call(3), result(3),
           {"role": "assistant", "content": "Done."}]


@pytest.fixture
def scans(monkeypatch):
    counted = []
    real = validity.scan
    monkeypatch.setattr(validity, "scan", lambda items, dialect: counted.append(len(items)) or real(items, dialect))
    return counted


def test_a_cut_is_scanned_once_its_junction_has_closed(scans):
    check = RequestCheck(read(HISTORY, "openai").materialize())
    scans.clear()  # the history itself, scanned once
    for end in (5, 7):  # the requests before the next two assistant messages, kept from the round at 3
        check.trimmed(call=end // 2, first=0, anchor=None, start=3, end=end)
    assert scans == [3]  # the noted first message, the call and its result: once
    check.trimmed(call=3, first=0, anchor=None, start=5, end=7)
    assert scans == [3, 3]  # a new cut is scanned


def test_a_junction_still_open_at_the_request_end_is_refused_and_not_taken_as_passed(scans):
    check = RequestCheck(read(HISTORY, "openai").materialize())
    scans.clear()
    for _ in range(2):  # (no real request ends there: it would end with a call left open)
        with pytest.raises(InvalidRequest, match="has no result"):
            check.trimmed(call=1, first=0, anchor=None, start=1, end=2)
    check.trimmed(call=2, first=0, anchor=None, start=1, end=3)
    assert scans == [2, 2, 3]


def test_a_bad_junction_is_refused_every_time(scans):
    check = RequestCheck(read(HISTORY, "openai").materialize())
    for _ in range(2):  # a cut at a result: the result has no call before it
        with pytest.raises(InvalidRequest, match="does not follow its call"):
            check.trimmed(call=2, first=0, anchor=None, start=2, end=3)


def test_a_streamed_history_is_checked_whole_once_it_is_all_read():
    held = read(HISTORY, "openai").materialize()
    broken = replace(held, messages=held.messages + held.messages[2:3])  # a result whose call is long past
    with pytest.raises(BadInput, match="not a valid openai request as read"):
        RequestCheck(broken)
    streamed = RequestCheck(replace(broken, messages=iter(broken.messages)))  # nothing checked yet
    for message in broken.messages:
        streamed.add(message)
    with pytest.raises(BadInput, match="not a valid openai request as read"):
        streamed.finish()
