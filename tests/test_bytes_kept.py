"""Unchanged messages leave as the bytes they came as, and fitting a payload again gives the same
bytes (DESIGN §4, issue #9 item 7): JSON that is not orjson's compact form (spaces, escapes,
duplicate keys), integers beyond 64 bits, pretty-printed request documents."""

from __future__ import annotations

import orjson
import pytest

from conftest import run_cli

HUGE = b"18446744073709551616"  # 2**64: orjson reads it as a float


def _fit(data: bytes, budget: str = "100000") -> bytes:
    done = run_cli("fit", "-", "--budget", budget, input=data)
    assert done.returncode == 0, done.stderr
    return done.stdout


LINES = {
    "spaces": b'{"role": "user",  "content": "hi"}\n{"role":"assistant","content":"yo"}\n',
    "escapes": b'{"role":"user","content":"caf\\u00e9 \\/ ok"}\n{"role":"assistant","content":"yo"}\n',
    "duplicate keys": b'{"role":"user","content":"a","content":"b"}\n{"role":"assistant","content":"yo"}\n',
    # (in a tool call's input: a message itself takes no key of its own, DESIGN §13)
    "huge integer": b'{"role":"user","content":"hi"}\n{"role":"assistant","content":[{"type":"tool_use","id":"t",'
                    b'"name":"n","input":{"n":' + HUGE + b'}}]}\n{"role":"user","content":[{"type":"tool_result",'
                    b'"tool_use_id":"t","content":"ok"}]}\n',
    "blanks around": b'  {"role":"user","content":"hi"}\t\n{"role":"assistant","content":"yo"}  \n',
}


@pytest.mark.parametrize("name", LINES)
def test_lines_leave_as_written_and_a_refit_changes_nothing(name):
    data = LINES[name]
    payload = _fit(data)
    assert payload == b'{"messages":[' + b",".join(line.strip() for line in data.splitlines()) + b"]}\n"
    assert _fit(payload) == payload
    assert _fit(payload, "10") == _fit(data, "10")


def test_a_request_keeps_its_huge_integers_and_other_fields_as_written():
    request = (b'{"model": "m", "metadata": {"n": ' + HUGE + b'}, "messages": [{"role": "user", "content": "hi"}],'
               b' "temperature": 1.0}')
    payload = _fit(request)
    assert payload == (b'{"model":"m","metadata":{"n": ' + HUGE + b'},"temperature":1.0,'
                       b'"messages":[{"role": "user", "content": "hi"}]}\n')
    assert _fit(payload) == payload


def test_a_pretty_printed_request_becomes_one_line_and_then_stays_the_same():
    request = (b'{\n  "tools": [\n    {"name": "read", "input_schema": {"type": "object"}}\n  ],\n'
               b'  "messages": [\n    {\n      "role": "user",\n      "content": "a  b \\u00e9"\n    }\n  ]\n}\n')
    payload = _fit(request)
    assert payload.count(b"\n") == 1 and b'"a  b \\u00e9"' in payload
    assert orjson.loads(payload) == orjson.loads(request)
    assert _fit(payload) == payload


def test_several_system_lines_are_counted_as_the_one_system_prompt_they_are_sent_as():
    """Anthropic has one `system`: three system lines are sent as its three blocks, and counted
    so (they were counted as three messages: 10 tokens more than the payload held)."""
    lines = b"".join(orjson.dumps(m) + b"\n" for m in [
        {"role": "system", "content": "You are a helper."}, {"role": "system", "content": "Be brief."},
        {"role": "system", "content": [{"type": "text", "text": "Third."}]},
        {"role": "user", "content": "hi there"}, {"role": "assistant", "content": "yo"}])
    given = ("--format", "anthropic")
    estimated = orjson.loads(run_cli("estimate", "--json", *given, "-", input=lines).stdout)["total"]["tokens"]
    fitted = run_cli("fit", "-", "--budget", "1000", "--json", *given, input=lines)
    report = orjson.loads(fitted.stdout)["reports"][0]
    payload = run_cli("fit", "-", "--budget", "1000", *given, input=lines).stdout
    assert orjson.loads(payload)["system"] == [{"type": "text", "text": t} for t in ("You are a helper.", "Be brief.", "Third.")]
    read_back = orjson.loads(run_cli("estimate", "--json", "-", input=payload).stdout)["total"]["tokens"]
    assert estimated == report["tokens_sent"] == read_back


def test_a_cr_between_tokens_never_reaches_the_payload():
    """Fuzz case 17142: a CR is JSON whitespace, but to `str.splitlines` a line end, so the one
    payload of `{"role"\\r:"user",...}` read as two."""
    payload = _fit(b'{"role"\r:"user","content":"a\\rb"}\n{"role":"assistant","content":"yo"}\n')
    assert b"\r" not in payload and payload.splitlines() == [payload.rstrip(b"\n")]
    assert orjson.loads(payload)["messages"][0] == {"role": "user", "content": "a\rb"}
    assert _fit(payload) == payload
