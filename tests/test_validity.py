"""Valid requests out (issue #9): what the validator rejects, where stages 2 and 3 may cut, and
the gate that stops an invalid request before it leaves."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from ctxfit_cli.cli import app
from ctxfit_cli.core.fitting import FitOptions
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.formats import payload
from ctxfit_cli.formats.payload import fit_transcript
from conftest import ROOT, ascii_text, read, run_cli

runner = CliRunner()
REALWORLD = ROOT.parent / "shared" / "realworld"


def user(text="Do it."):
    return {"role": "user", "content": text}


def assistant_calls(*ids, text=None):
    blocks = [{"type": "text", "text": text}] if text else []
    return {"role": "assistant", "content": blocks + [
        {"type": "tool_use", "id": i, "name": "read", "input": {}} for i in ids]}


def results(*ids, text=None, body="ok"):
    blocks = [{"type": "tool_result", "tool_use_id": i, "content": body} for i in ids]
    return {"role": "user", "content": blocks + ([{"type": "text", "text": text}] if text else [])}


def anthropic(*messages, **fields):
    return validate_request({"messages": list(messages), **fields}, "anthropic")


# --- the validator ----------------------------------------------------------------------------


ANTHROPIC_TOOL = {"name": "read", "description": "reads", "input_schema": {"type": "object"}}
OPENAI_TOOL = {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}


def test_each_dialect_refuses_the_other_dialects_tool_shape():
    hi = [user("hi")]
    assert validate_request({"messages": hi, "tools": [ANTHROPIC_TOOL]}, "anthropic") == []
    assert validate_request({"messages": hi, "tools": [OPENAI_TOOL]}, "openai") == []
    server_tool = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    assert validate_request({"messages": hi, "tools": [server_tool]}, "anthropic") == []
    toolset = {"type": "mcp_toolset", "mcp_server_name": "docs"}  # (the MCP connector's: no name)
    assert validate_request({"messages": hi, "tools": [toolset]}, "anthropic") == []
    assert validate_request({"messages": hi, "tools": [OPENAI_TOOL]}, "anthropic") == [
        'tools[0]: an Anthropic tool needs a "name" (this is an OpenAI function tool)']
    assert validate_request({"messages": hi, "tools": [{"name": "x"}]}, "anthropic") == [
        'tools[0]: a custom Anthropic tool needs an "input_schema" object']
    assert validate_request({"messages": hi, "tools": [ANTHROPIC_TOOL]}, "openai") == [
        'tools[0]: an OpenAI tool needs "type" ("function") and a "function" object with its "name"']
    assert validate_request({"messages": hi, "tools": {"read": {}}}, "openai") == ['"tools" must be a list']


def test_a_request_with_the_other_dialects_tools_is_bad_input_not_a_silent_reshape(tmp_path):
    """Fuzz case 1775: OpenAI messages with Anthropic tools was fitted into a payload that read
    back as Anthropic, so refitting it changed its bytes. Neither provider takes such a request."""
    request = {"messages": [user("go"), {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 4000}, user("again")],
        "tools": [ANTHROPIC_TOOL]}
    path = tmp_path / "mixed.json"
    path.write_bytes(orjson.dumps(request))
    done = run_cli("fit", str(path), "--budget", "50")
    assert done.returncode == 3 and done.stdout == b""
    assert "not a valid openai request as read" in done.stderr.decode() and "tools[0]" in done.stderr.decode()


def test_a_valid_anthropic_round_has_no_problems():
    assert anthropic(user(), assistant_calls("t1", "t2"), results("t1", "t2"), {"role": "assistant", "content": "Done."}) == []


@pytest.mark.parametrize("messages, expected", [
    ([{"role": "assistant", "content": "hi"}], "the first message must be from the user"),
    ([user(), user()], "two user messages in a row"),
    ([user(""), {"role": "assistant", "content": "x"}], "content must not be empty"),
    ([{"role": "user", "content": []}], "content must not be empty"),
    ([{"role": "user", "content": [{"type": "text", "text": ""}]}], "text blocks must be non-empty"),
    ([{"role": "user", "content": [{"type": "text", "text": "\n\n"}]}], "non-whitespace text"),
    ([{"role": "user", "content": " "}], "non-whitespace text"),
    ([user(), assistant_calls("t1")], "call 't1' has no result"),
    ([user(), assistant_calls("t1"), results("t2")], "result for call 't2' does not follow its call"),
    ([user(), assistant_calls("t1"), results("t1", "t1")], "a second result for call 't1'"),
    ([user(), assistant_calls("t1"), results(text="x")], "call 't1' has no result in messages[2]"),
    ([user(), assistant_calls("t1"), {"role": "user", "content": [
        {"type": "text", "text": "wait"}, {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}],
     "tool_result blocks must come before any other content"),
    ([user(), assistant_calls("t1"), results("t1"), assistant_calls("t1"), results("t1")],
     "tool_use id 't1' is used twice"),
    ([{"role": "user", "content": [{"type": "thinking", "thinking": "x", "signature": "s"}, {"type": "text", "text": "a"}]}],
     "thinking blocks belong in assistant messages"),
    ([{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]}],
     "tool_use blocks belong in assistant messages"),
    ([user(), assistant_calls("t1"), {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                                  "content": [{"type": "text", "text": ""}]}]}],
     "text blocks must be non-empty"),
])
def test_anthropic_rejections(messages, expected):
    problems = anthropic(*messages)
    assert any(expected in p for p in problems), problems


#: Requests the providers refused, each with the error they answered (as documented or reported
#: in the issue trackers named) and what ctxfit's validator says of it.
KNOWN_BAD = [
    # anthropics/claude-code#23440: Claude Code 2.1's "\n\n" block before a reply's other blocks.
    ("anthropic", [user(), assistant_calls("t1", text="\n\n"), results("t1")],
     "messages: text content blocks must contain non-whitespace text", "must contain non-whitespace text"),
    ("anthropic", [user(), {"role": "assistant", "content": [{"type": "text", "text": " \n"}]}, user()],
     "messages: text content blocks must contain non-whitespace text", "must contain non-whitespace text"),
    ("anthropic", [{"role": "user", "content": [{"type": "text", "text": ""}, {"type": "text", "text": "hi"}]}],
     "messages: text content blocks must be non-empty", "text blocks must be non-empty"),
    ("anthropic", [user(), {"role": "assistant", "content": []}, user()],
     "messages.1: all messages must have non-empty content except for the optional final assistant message",
     "content must not be empty"),
    # Cline's task history keeps `ts` (and `metrics`, `modelInfo`) in every message.
    ("anthropic", [{"role": "user", "content": "hi", "ts": 1745000000000}],
     "messages.0.ts: Extra inputs are not permitted", "'ts': Extra inputs are not permitted"),
    ("anthropic", [user(), {"role": "assistant", "content": "ok", "id": "msg_1", "model": "claude"}],
     "messages.1.id: Extra inputs are not permitted", "'id': Extra inputs are not permitted"),
    ("anthropic", [user(), user()],
     "(accepted: consecutive turns are combined; ctxfit still sends them as one)", "two user messages in a row"),
    # transitive-bullshit/agentic#531, microsoft/autogen#1174: a client's own fields sent along.
    ("openai", [{"role": "user", "content": "hi", "id": "x"}],
     "Additional properties are not allowed ('id' was unexpected) - 'messages.0'", "'id' was unexpected"),
    ("openai", [user(), {"role": "assistant", "content": "x", "tool_responses": []}],
     "Additional properties are not allowed ('tool_responses' was unexpected) - 'messages.1'",
     "'tool_responses' was unexpected"),
    ("openai", [{"role": "user", "content": []}],
     "Invalid 'messages[0].content': empty array. Expected an array with minimum length 1",
     "content must not be empty"),
    ("openai", [user(), {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}, user()],
     "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
     "'tool_call_id'", "call 'c1' has no result"),
]


@pytest.mark.parametrize("dialect, messages, provider_error, expected", KNOWN_BAD)
def test_what_the_providers_refused_the_validator_refuses(dialect, messages, provider_error, expected):
    problems = validate_request({"messages": messages}, dialect)
    assert any(expected in p for p in problems), (provider_error, problems)


def test_keys_each_role_may_carry_are_accepted():
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    assert validate_request({"messages": [
        {"role": "system", "content": "Be brief.", "name": "rules"},
        {"role": "user", "content": "hi", "name": "ann"},
        {"role": "assistant", "content": None, "tool_calls": [call], "refusal": None},
        {"role": "tool", "tool_call_id": "c1", "content": "ok", "name": "read"}]}, "openai") == []
    assert validate_request({"messages": [user(), {"role": "tool", "tool_call_id": "c1", "content": "x",
                                                   "refusal": None}]}, "openai") != []


def test_a_final_assistant_message_may_be_empty_but_no_other():
    assert anthropic(user(), {"role": "assistant", "content": ""}) == []
    assert anthropic(user(), {"role": "assistant", "content": []}, user()) != []


def test_at_most_four_cache_control_breakpoints_counting_system_tools_and_messages():
    mark = {"type": "ephemeral"}
    system = [{"type": "text", "text": "Be brief.", "cache_control": mark}]
    tools = [{"name": "read", "input_schema": {}, "cache_control": mark}]
    marked = {"role": "user", "content": [{"type": "text", "text": "a", "cache_control": mark},
                                          {"type": "text", "text": "b", "cache_control": mark}]}
    assert anthropic(marked, system=system, tools=tools) == []
    third = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
        {"type": "text", "text": "r", "cache_control": mark}]}]}
    problems = anthropic(marked, assistant_calls("t1"), third, system=system, tools=tools)
    assert problems == ["5 cache_control breakpoints; at most 4 are allowed"]
    assert any("text blocks must be non-empty" in p for p in anthropic(user(), system=[{"type": "text", "text": ""}]))


@pytest.mark.parametrize("messages, expected", [
    ([user(), {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}, user()],
     "call 'c1' has no result before messages[2]"),
    ([user(), {"role": "tool", "tool_call_id": "c1", "content": "x"}], "does not follow its call"),
    ([user(), {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
      {"role": "tool", "tool_call_id": "c1", "content": "x"},
      {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}, {"id": "c1"}]},
      {"role": "tool", "tool_call_id": "c1", "content": "x"}], "a tool call id is used twice in one message"),
    ([user(), {"role": "assistant", "content": None}], "needs content or tool_calls"),
    ([{"role": "user", "content": []}], "content must not be empty"),
    ([user(), {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
      {"role": "developer", "content": "note"}, {"role": "tool", "tool_call_id": "c1", "content": "x"}],
     "call 'c1' has no result before messages[2]"),
])
def test_openai_rejections(messages, expected):
    problems = validate_request({"messages": messages}, "openai")
    assert any(expected in p for p in problems), problems


# --- turn boundaries: a place where no call is open -------------------------------------------

INTERRUPTED = [
    user("Please look at the file and tell me what is in it."),
    assistant_calls("t1", text="I will read it now."),
    results("t1", text="[Request interrupted by user]", body=ascii_text(400)),
    {"role": "assistant", "content": [{"type": "text", "text": "OK, stopping here."}]},
]


@pytest.mark.parametrize("budget", [500, 300, 100, 60])
def test_a_user_message_with_results_and_text_is_no_turn_start(budget):
    transcript = read(INTERRUPTED, "anthropic")
    fitted = fit_transcript(transcript, FitOptions(budget=budget, window=10_000))
    sent = orjson.loads(fitted.payload)
    assert validate_request(sent, "anthropic") == []
    assert fitted.plan.start != 2  # never a cut at the results


def test_the_minimal_case_of_the_issue_through_the_cli(tmp_path):
    path = tmp_path / "interrupted.jsonl"
    path.write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in INTERRUPTED))
    for budget in ("500", "300"):
        outcome = run_cli("fit", str(path), "--budget", budget)
        assert outcome.returncode == 0, outcome.stderr
        assert validate_request(orjson.loads(outcome.stdout), "anthropic") == []


@pytest.mark.skipif(not (REALWORLD / "claude-code" / "spotter_short.jsonl").exists(), reason="needs ../shared/realworld")
def test_spotter_short_at_213_never_starts_at_results():
    outcome = run_cli("fit", str(REALWORLD / "claude-code" / "spotter_short.jsonl"), "--budget", "213")
    assert outcome.returncode == 0, outcome.stderr
    assert validate_request(orjson.loads(outcome.stdout), "anthropic") == []
    assert b"dropped 1 empty or whitespace-only text block" in outcome.stderr


# --- the gate ---------------------------------------------------------------------------------


def _write(tmp_path: Path, messages: list[dict]) -> str:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in messages))
    return str(path)


def test_an_invalid_request_produced_by_ctxfit_stops_with_exit_1_and_writes_nothing(tmp_path, monkeypatch):
    path = _write(tmp_path, [user(), assistant_calls("t1"), results("t1"), {"role": "assistant", "content": "Done."}])
    real = payload.sent_messages
    monkeypatch.setattr(payload, "sent_messages", lambda t, p: real(t, p)[:2])  # a result lost: a bug
    outcome = runner.invoke(app, ["fit", path, "--budget", "1000"])
    assert outcome.exit_code == 1
    assert outcome.stdout == ""
    [line] = outcome.stderr.strip().splitlines()
    assert path in line and "invalid anthropic request" in line and "'t1' has no result" in line
    assert runner.invoke(app, ["plan", path, "--budget", "1000"]).exit_code == 1


def test_an_input_that_is_invalid_as_read_is_bad_input_naming_its_line(tmp_path):
    mark = {"type": "ephemeral"}
    marked = {"role": "user", "content": [{"type": "text", "text": t, "cache_control": mark} for t in "abcde"]}
    path = _write(tmp_path, [user(), {"role": "assistant", "content": "Yes."}, marked])
    outcome = run_cli("fit", path, "--budget", "1000", "--format", "anthropic")
    assert outcome.returncode == 3
    assert outcome.stdout == b""
    assert outcome.stderr.decode().endswith(
        f"{path}: not a valid anthropic request as read: 5 cache_control breakpoints; at most 4 are allowed\n")


def _cut_anywhere(monkeypatch):
    """The old rule: any user message with text starts a turn (the bug of issue #9)."""
    from ctxfit_cli.core import fitting
    monkeypatch.setattr(fitting.OpenCalls, "add", lambda self, message: True)


#: As INTERRUPTED, with a call message long enough that leaving it out makes the request smaller
#: (a cut that would not is never made, so the gate would have nothing to catch).
INTERRUPTED_LONG_CALL = [INTERRUPTED[0], assistant_calls("t1", text=ascii_text(200)), *INTERRUPTED[2:]]


def test_the_gate_catches_a_cut_inside_a_round_in_fit(tmp_path, monkeypatch):
    path = _write(tmp_path, INTERRUPTED_LONG_CALL)
    assert runner.invoke(app, ["fit", path, "--budget", "300"]).exit_code == 0
    _cut_anywhere(monkeypatch)
    outcome = runner.invoke(app, ["fit", path, "--budget", "300"])
    assert outcome.exit_code == 1 and outcome.stdout == ""
    assert "invalid anthropic request" in outcome.stderr and "tool_result" in outcome.stderr


@pytest.mark.parametrize("policy", ["ctxfit", "turns"])
def test_the_gate_catches_a_cut_inside_a_round_in_replay(tmp_path, monkeypatch, policy):
    lines = [*INTERRUPTED_LONG_CALL, user("Go on, read it again."), assistant_calls("t2"),
             results("t2", text="[Request interrupted by user]", body=ascii_text(400)),
             {"role": "assistant", "content": "Stopped again."}]
    path = _write(tmp_path, lines)
    args = ["replay", path, "--budget", "300", "--json", "-p", policy]
    assert runner.invoke(app, args).exit_code == 0
    _cut_anywhere(monkeypatch)
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 1, outcome.stdout
    assert "replayed call" in outcome.stderr and "tool_result" in outcome.stderr
