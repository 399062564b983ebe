"""GitHub Copilot CLI, Pi and Cursor (issue #34 item 4), on the shared real logs of each:
recognised, read into the conversation their agent sends (its dialect, calls paired with
results), the calls the log records, their sessions (model, dates, cost), valid fits, replay,
and their default folders in a new user's HOME."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from conftest import REALWORLD, ROOT, needs_realworld
from ctxfit_cli.agents.spend import Spend
from ctxfit_cli.core.model import Role
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.errors import NoConversation
from ctxfit_cli.fleet.discovery import default_folders
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.skipped import Skipped
from fuzzing import invoke
from test_realworld import test_fit_at_every_share_is_valid_reads_back_and_refits_the_same as fit_at_every_share
from test_tolerant_reading import test_unknown_records_and_keys_change_nothing_but_the_count as tolerated

COPILOT = REALWORLD / "copilot-cli" / "entire-bmad_5c5a43fc3476-0_full.jsonl"
PI = REALWORLD / "pi" / "test-repo_de5a2f809927-0_raw_transcript"
CURSOR = REALWORLD / "cursor" / "test-repo_b8b6fbd5f55f-0_raw_transcript"
LOGS = {"copilot-cli": COPILOT, "pi": PI, "cursor": CURSOR}
#: `ccusage pi session --json --offline` (ccusage 20.0.24) on the shared Pi log, as Pi keeps it.
CCUSAGE_PI_COST = 0.04428425


def records(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def read(data: bytes, name: str = "log.jsonl", skipped: Skipped | None = None):
    [transcript] = read_transcripts(name, io.BytesIO(data), skipped=skipped)
    return transcript.materialize()


def lines(values: list[dict]) -> bytes:
    return b"".join(orjson.dumps(v) + b"\n" for v in values)


def row_of(path: Path) -> dict:
    done = invoke(["sessions", str(path), "--json"])
    assert done.exit_code == 0, done.stderr
    [row] = orjson.loads(done.stdout_bytes)["sessions"]
    return row


def replay_calls(path: Path) -> int:
    done = invoke(["replay", str(path), "--json"])
    assert done.exit_code == 0, done.stderr
    return orjson.loads(done.stdout_bytes)["policies"]["ctxfit"]["calls"]


def tool_ids(messages, kind: str) -> list[str]:
    return [
        b["id" if kind == "tool_use" else "tool_use_id"]
        for m in messages
        for b in orjson.loads(m.raw)["content"]
        if isinstance(b, dict) and b.get("type") == kind
    ]


# --- every log: read, fitted valid at every share, replayed, listed -------------------------------


@needs_realworld
@pytest.mark.parametrize("format", LOGS)
def test_each_log_is_recognised_from_any_of_its_first_records(format):
    data = LOGS[format].read_bytes()
    assert read(data).format == format
    unknown = lines([{"type": "from-next-week", "n": n} for n in range(3)])
    skipped = Skipped()
    again = read(unknown + data, skipped=skipped)
    assert again.format == format and [m.raw for m in again.messages] == [m.raw for m in read(data).messages]
    assert skipped.as_dict()["records"] == {"from-next-week": 3}


@needs_realworld
@pytest.mark.parametrize("format", LOGS)
def test_fit_of_each_log_is_valid_at_every_share(format):
    fit_at_every_share(LOGS[format])
    done = invoke(["fit", "--budget", "3000", "--json", str(LOGS[format])])
    document = orjson.loads(done.stdout_bytes)
    for report, payload in zip(document["reports"], document["payloads"]):
        assert validate_request(payload, report["dialect"]) == []


@needs_realworld
@pytest.mark.parametrize("format", LOGS)
def test_unknown_records_and_keys_in_each_log_change_nothing_but_the_count(format, tmp_path):
    tolerated(LOGS[format], tmp_path)


@needs_realworld
@pytest.mark.parametrize("command", [["estimate"], ["plan", "--budget", "3000"], ["replay"], ["sessions"]])
def test_every_command_reads_each_log(command):
    for path in LOGS.values():
        done = invoke([command[0], str(path), *command[1:]])
        assert done.exit_code == 0 and "Traceback" not in done.stderr, (path, done.stderr)


@pytest.mark.parametrize(
    "header, agent",
    [
        ({"type": "session.start", "data": {"sessionId": "s"}, "id": "e", "timestamp": "t"}, "GitHub Copilot CLI"),
        ({"type": "session", "version": 3, "id": "x", "cwd": "/w"}, "Pi coding agent"),
    ],
)
def test_a_log_with_no_conversation_yet_is_refused_naming_its_agent(header, agent):
    with pytest.raises(NoConversation, match=f"this looks like a {agent} session .*has no messages"):
        read(lines([header]))


# --- GitHub Copilot CLI ----------------------------------------------------------------------------


@needs_realworld
def test_copilot_cli_reads_the_conversation_its_claude_model_is_sent():
    events = records(COPILOT)
    transcript = read(COPILOT.read_bytes())
    assert transcript.dialect == "anthropic"  # claude-sonnet-4.6
    messages = transcript.messages
    assert messages[0].role == Role.USER and "<current_datetime>" in orjson.loads(messages[0].raw)["content"][0]["text"]
    replies = [e for e in events if e["type"] == "assistant.message"]
    assert sum(m.role == Role.ASSISTANT for m in messages) == len(replies) == 14
    called = [r["toolCallId"] for e in replies for r in e["data"]["toolRequests"]]
    assert tool_ids(messages, "tool_use") == called and len(called) == 15
    assert sorted(tool_ids(messages, "tool_result")) == sorted(called)


@needs_realworld
def test_copilot_cli_records_one_call_per_reply_with_its_output():
    replies = [e["data"] for e in records(COPILOT) if e["type"] == "assistant.message"]
    transcript = read(COPILOT.read_bytes())
    assert [c.output_tokens for c in transcript.calls] == [r["outputTokens"] for r in replies]
    assert {c.model for c in transcript.calls} == {"claude-sonnet-4-6"}
    assert all(c.prompt_tokens is None for c in transcript.calls)  # Copilot records no prompt size
    assert all(transcript.messages[c.message].role == Role.ASSISTANT for c in transcript.calls)
    assert replay_calls(COPILOT) == len(replies)


@needs_realworld
def test_copilot_cli_session_row_counts_the_output_it_records():
    row = row_of(COPILOT)
    output = sum(e["data"]["outputTokens"] for e in records(COPILOT) if e["type"] == "assistant.message")
    assert row["agent"] == "GitHub Copilot CLI" and row["id"] == "17e5f2a1-661d-43f1-a85f-d5899a9e99b3"
    assert row["project"] == "/Users/dmytroshamsiiev/Projects/metrics" and row["models"] == ["claude-sonnet-4-6"]
    assert row["started"] == "2026-04-17T13:56:55.337Z" and row["last_activity"] == "2026-04-17T14:01:58.047Z"
    assert row["cost"]["output"] == output and row["cost"]["input"] == 0
    assert row["cost"]["usd"] == pytest.approx(output * 15 / 1e6, abs=1e-6)  # Sonnet's output price


def test_copilot_cli_cost_is_the_shutdown_s_model_metrics_where_a_run_has_shut_down():
    from ctxfit_cli.agents.copilot_cli import describe
    from ctxfit_cli.formats.reading import Record

    usage = {"inputTokens": 10_000, "cacheReadTokens": 8_000, "cacheWriteTokens": 1_500, "outputTokens": 700}
    events = [
        {"type": "session.model_change", "data": {"newModel": "claude-sonnet-4.5"}},
        {"type": "assistant.message", "data": {"outputTokens": 300}},
        {"type": "assistant.message", "data": {"outputTokens": 400}},
        {"type": "session.shutdown", "data": {"modelMetrics": {"claude-sonnet-4.5": {"usage": usage}}}},
        {"type": "assistant.message", "data": {"outputTokens": 50}},  # a resumed run, not shut down yet
    ]
    [session] = describe("events.jsonl", [Record(n, e, b"") for n, e in enumerate(events, 1)])
    expected = Spend()
    expected.call("claude-sonnet-4-5", 500, 1_500, 8_000, 700)
    expected.call("claude-sonnet-4-5", output=50)
    assert session.spend == expected.totals() and session.models == ["claude-sonnet-4-5"]


def _usage(call_id: str, whole: int, read: int, output: int) -> dict:
    """A `session.usage_record` as Copilot CLI 1.0.102 writes it before each reply (its fields
    as recorded when the real Copilot ran through wrap: tests/test_real_agents.py)."""
    usage = {"model": "claude-sonnet-4.5", "inputTokens": whole, "outputTokens": output, "cacheReadTokens": read,
             "cacheWriteTokens": 0, "cost": 0.0, "apiCallId": call_id, "initiator": "agent", "isByok": True}
    return {"type": "session.usage_record", "data": {"usage": usage}}


COPILOT_1_0_102 = [
    {"type": "session.start", "data": {"sessionId": "s1", "context": {"cwd": "/work"}}},
    {"type": "session.model_change", "data": {"newModel": "claude-sonnet-4.5"}},
    {"type": "user.message", "data": {"content": "read f1"}},
    {"type": "system.message", "data": {"role": "system", "content": "You are the GitHub Copilot CLI."}},
    _usage("msg_1", 10_494, 7_870, 20),
    {"type": "assistant.message", "data": {"apiCallId": "msg_1", "content": "", "toolRequests": [
        {"toolCallId": "c1", "name": "view", "arguments": {"path": "/work/f1"}}]}},
    {"type": "tool.execution_complete", "data": {"toolCallId": "c1", "success": True, "result": {"content": "x"}}},
    _usage("msg_2", 10_591, 7_943, 30),
    {"type": "assistant.message", "data": {"apiCallId": "msg_2", "content": "done", "toolRequests": []}},
    {"type": "session.shutdown", "data": {"modelMetrics": {"claude-sonnet-4.5": {"usage": {
        "inputTokens": 21_085, "cacheReadTokens": 15_813, "cacheWriteTokens": 0, "outputTokens": 50}}}}},
]


def test_copilot_cli_1_0_102_records_each_calls_prompt_and_its_system_prompt():
    from ctxfit_cli.agents.copilot_cli import describe
    from ctxfit_cli.formats.reading import Record

    skipped = Skipped()
    transcript = read(lines(COPILOT_1_0_102), skipped=skipped)
    assert not skipped, skipped.as_dict()  # every record of 1.0.102 is read or known
    assert [(c.id, c.prompt_tokens, c.output_tokens, c.model) for c in transcript.calls] == [
        ("msg_1", 10_494, 20, "claude-sonnet-4-5"), ("msg_2", 10_591, 30, "claude-sonnet-4-5")]
    assert [orjson.loads(m.raw)["content"] for m in transcript.system] == ["You are the GitHub Copilot CLI."]
    [session] = describe("events.jsonl", [Record(n, e, b"") for n, e in enumerate(COPILOT_1_0_102, 1)])
    expected = Spend()  # each call once, by its own record: not again by the shutdown's totals
    expected.call("claude-sonnet-4-5", 10_494 - 7_870, 0, 7_870, 20)
    expected.call("claude-sonnet-4-5", 10_591 - 7_943, 0, 7_943, 30)
    assert session.spend == expected.totals()


def test_copilot_cli_a_failed_call_is_answered_with_its_error():
    events = [
        {"type": "session.model_change", "data": {"newModel": "gpt-5.2"}},
        {"type": "user.message", "data": {"content": "run it"}},
        {"type": "assistant.message", "data": {"content": "", "outputTokens": 9, "toolRequests": [
            {"toolCallId": "c1", "name": "bash", "arguments": {"command": "make"}}]}},
        {"type": "tool.execution_complete", "data": {"toolCallId": "c1", "success": False,
                                                     "error": {"message": "denied"}}},
    ]
    transcript = read(lines(events))
    assert transcript.dialect == "openai"  # a GPT model
    assert [orjson.loads(m.raw) for m in transcript.messages][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command":"make"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "denied"},
    ]


# --- Pi ------------------------------------------------------------------------------------------


@needs_realworld
def test_pi_reads_the_path_to_the_last_leaf_with_its_calls_and_their_usage():
    transcript = read(PI.read_bytes())
    assert transcript.dialect == "anthropic"
    assert [m.role.value for m in transcript.messages] == ["user", "assistant"] * 4
    calls = tool_ids(transcript.messages, "tool_use")
    assert len(calls) == 4 and sorted(tool_ids(transcript.messages, "tool_result")) == sorted(calls)
    replies = [r["message"] for r in records(PI) if r["type"] == "message" and r["message"]["role"] == "assistant"]
    usage = [r["usage"] for r in replies]
    assert [c.prompt_tokens for c in transcript.calls] == [u["input"] + u["cacheRead"] + u["cacheWrite"] for u in usage]
    assert [c.prompt_tokens for c in transcript.calls] == [2_553, 3_688, 3_776, 4_087]
    assert [c.output_tokens for c in transcript.calls] == [113, 72, 205, 56]
    assert [c.id for c in transcript.calls] == [r["responseId"] for r in replies]
    assert replay_calls(PI) == 4


@needs_realworld
def test_pi_session_row_has_its_recorded_peak_and_ccusage_s_cost():
    row = row_of(PI)
    assert row["agent"] == "Pi" and row["id"] == "019dc132-b9ea-736e-aa6f-e20ee7d84b11"
    assert row["project"] == "/Users/ninawork/entire/test-repos/test-repo" and row["models"] == ["claude-opus-4-7"]
    assert row["started"] == "2026-04-24T20:33:40.331Z" and row["last_activity"] == "2026-04-24T20:34:16.148Z"
    assert row["peak"] == 4_087 and row["peak_source"] == "recorded" and row["calls"] == 4
    assert row["cost"]["usd"] == pytest.approx(CCUSAGE_PI_COST, rel=0.01)
    cost = sum(r["message"]["usage"]["cost"]["total"] for r in records(PI) if r["type"] == "message"
               and r["message"]["role"] == "assistant")
    assert row["cost"]["usd"] == pytest.approx(cost, rel=0.01)  # what Pi itself says it cost


def _pi_entry(id: str, parent: str | None, role: str, text: str, **more) -> dict:
    message = {"role": role, "content": [{"type": "text", "text": text}], **more}
    return {"type": "message", "id": id, "parentId": parent, "timestamp": "2026-04-24T20:34:05.190Z",
            "message": message}


def test_pi_a_branch_left_behind_is_not_sent_but_its_call_is_billed():
    usage = {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0}
    reply = {"model": "gpt-5.2", "provider": "openai", "usage": usage, "stopReason": "stop"}
    entries = [
        {"type": "session", "version": 3, "id": "s1", "cwd": "/w", "timestamp": "2026-04-24T20:33:40.331Z"},
        _pi_entry("a", None, "user", "first question"),
        _pi_entry("b", "a", "assistant", "an answer the user went back from", **reply),
        _pi_entry("c", "a", "user", "the question asked again"),
        _pi_entry("d", "c", "assistant", "the answer kept", **reply),
    ]
    transcript = read(lines(entries))
    assert [orjson.loads(m.raw)["content"] for m in transcript.messages] == [
        "first question", "the question asked again", "the answer kept"]
    assert len(transcript.calls) == 1 and transcript.calls[0].message == 2
    from ctxfit_cli.agents.pi import describe
    from ctxfit_cli.formats.reading import Record

    [session] = describe("s.jsonl", [Record(n, e, b"") for n, e in enumerate(entries, 1)])
    assert session.spend == {("gpt-5.2", False): [200, 0, 0, 20, 0]}


def test_pi_a_compaction_starts_the_conversation_anew_with_its_summary_and_what_it_kept():
    reply = {"model": "claude-opus-4-7", "provider": "anthropic", "usage": {"input": 5, "output": 1},
             "stopReason": "stop"}
    entries = [
        {"type": "session", "version": 3, "id": "s1", "cwd": "/w", "timestamp": "2026-04-24T20:33:40.331Z"},
        _pi_entry("a", None, "user", "old question"),
        _pi_entry("b", "a", "assistant", "old answer", **reply),
        _pi_entry("c", "b", "user", "recent question"),
        _pi_entry("d", "c", "assistant", "recent answer", **reply),
        {"type": "compaction", "id": "e", "parentId": "d", "timestamp": "2026-04-24T20:35:00.000Z",
         "summary": "We talked.", "firstKeptEntryId": "c", "tokensBefore": 50_000},
        _pi_entry("f", "e", "user", "next question"),
        _pi_entry("g", "f", "assistant", "next answer", **reply),
    ]
    before, after = [t.materialize() for t in read_transcripts("s.jsonl", io.BytesIO(lines(entries)))]
    assert len(before.messages) == 4 and len(before.calls) == 2
    texts = [block["text"] for m in after.messages for block in orjson.loads(m.raw)["content"]]
    assert texts[0].endswith("<summary>\nWe talked.\n</summary>") and texts[0].startswith("The conversation history")
    assert texts[1:] == ["recent question", "recent answer", "next question", "next answer"]
    assert [c.message for c in after.calls] == [3] and after.line == 6  # only the call made after it


# --- Cursor ----------------------------------------------------------------------------------------


@needs_realworld
def test_cursor_reads_the_text_of_its_transcript():
    lines_ = records(CURSOR)
    transcript = read(CURSOR.read_bytes())
    assert transcript.dialect == "openai" and transcript.calls == []  # no model, no usage recorded
    assert [m.role.value for m in transcript.messages] == [line["role"] for line in lines_]
    assert sum(m.role == Role.USER for m in transcript.messages) == 5
    assert orjson.loads(transcript.messages[0].raw)["content"] == lines_[0]["message"]["content"][0]["text"]
    assert replay_calls(CURSOR) == 51  # one per reply line: the log records no calls of its own


def test_cursor_calls_without_their_results_and_unknown_lines_are_skipped_and_counted():
    skipped = Skipped()
    transcript = read(lines([
        {"role": "user", "message": {"content": [{"type": "text", "text": "look"}]}},
        {"role": "assistant", "message": {"content": [{"type": "text", "text": "reading"},
                                                      {"type": "tool_use", "name": "Grep", "input": {}}]}},
        {"type": "turn_ended", "status": "success"},
        {"type": "brand-new"},
    ]), skipped=skipped)
    assert [orjson.loads(m.raw) for m in transcript.messages] == [
        {"role": "user", "content": "look"}, {"role": "assistant", "content": "reading"}]
    assert skipped.as_dict()["records"] == {"brand-new": 1, "tool_use": 1}


# --- default folders -------------------------------------------------------------------------------


def test_the_default_folders_follow_the_variables_each_agent_honours(tmp_path):
    for folder in ("copilot/session-state", "pi-sessions", "pi-agent/sessions", "cur/projects/ws/agent-transcripts"):
        (tmp_path / folder).mkdir(parents=True)
    environ = {"HOME": str(tmp_path / "nobody"), "COPILOT_HOME": str(tmp_path / "copilot"),
               "PI_CODING_AGENT_DIR": str(tmp_path / "pi-agent"), "CURSOR_CONFIG_DIR": str(tmp_path / "cur")}
    found = default_folders(environ)
    assert [str(tmp_path / "copilot/session-state"), str(tmp_path / "pi-agent/sessions"),
            str(tmp_path / "cur/projects/ws/agent-transcripts")] == found
    assert str(tmp_path / "pi-sessions") in default_folders({**environ, "PI_CODING_AGENT_SESSION_DIR":
                                                              str(tmp_path / "pi-sessions")})


@needs_realworld
def test_sessions_with_no_path_lists_copilot_pi_and_cursor_in_a_new_user_s_home(tmp_path):
    home = tmp_path / "home"
    copilot = home / ".copilot" / "session-state" / "17e5f2a1-661d-43f1-a85f-d5899a9e99b3"
    pi = home / ".pi" / "agent" / "sessions" / "--Users-ninawork-entire-test-repos-test-repo--"
    cursor = home / ".cursor" / "projects" / "Users-me-test-repo"
    transcript = cursor / "agent-transcripts" / "b8b6fbd5" / "b8b6fbd5.jsonl"
    for folder in (copilot, pi, transcript.parent, cursor / "mcps"):
        folder.mkdir(parents=True)
    (copilot / "events.jsonl").write_bytes(COPILOT.read_bytes())
    (copilot / "workspace.yaml").write_text("id: 17e5f2a1\n")
    (pi / "2026-04-24T20-33-40-331Z_019dc132-b9ea-736e-aa6f-e20ee7d84b11.jsonl").write_bytes(PI.read_bytes())
    transcript.write_bytes(CURSOR.read_bytes())
    (cursor / "mcps" / "tools.json").write_text('{"name": "a tool description, no conversation"}')
    env = {k: v for k, v in os.environ.items() if k not in (
        "CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME", "CLINE_DIR", "CLINE_DATA_DIR", "GEMINI_CLI_HOME",
        "COPILOT_HOME", "PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "CURSOR_CONFIG_DIR")}
    done = subprocess.run([sys.executable, "-m", "ctxfit_cli", "sessions", "--json"], env={**env, "HOME": str(home)},
                          stdin=subprocess.DEVNULL, capture_output=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = {row["agent"]: row for row in orjson.loads(done.stdout)["sessions"]}
    assert sorted(rows) == ["Cursor", "GitHub Copilot CLI", "Pi"]
    assert rows["GitHub Copilot CLI"]["id"] == "17e5f2a1-661d-43f1-a85f-d5899a9e99b3"
    assert rows["Pi"]["id"] == "019dc132-b9ea-736e-aa6f-e20ee7d84b11" and rows["Pi"]["cost"]["usd"] > 0
    assert rows["Cursor"]["id"] == "b8b6fbd5" and rows["Cursor"]["project"] == "Users-me-test-repo"


def test_copilot_cli_a_sub_agent_s_events_are_not_the_conversation_but_are_its_cost():
    from ctxfit_cli.agents.copilot_cli import describe
    from ctxfit_cli.formats.reading import Record

    events = [
        {"type": "session.model_change", "data": {"newModel": "claude-haiku-4.5"}},
        {"type": "user.message", "data": {"content": "look around"}},
        {"type": "assistant.message", "data": {"content": "", "outputTokens": 20, "toolRequests": [
            {"toolCallId": "t1", "name": "task", "arguments": {"prompt": "find it"}}]}},
        {"type": "assistant.message", "data": {"content": "found", "outputTokens": 5, "parentToolCallId": "t1"}},
        {"type": "tool.execution_complete", "data": {"toolCallId": "t1", "success": True,
                                                     "result": {"content": "it is here"}}},
        {"type": "assistant.message", "data": {"content": "It is here.", "outputTokens": 7}},
    ]
    transcript = read(lines(events))
    assert [m.role.value for m in transcript.messages] == ["user", "assistant", "user", "assistant"]
    assert [c.output_tokens for c in transcript.calls] == [20, 7]
    [session] = describe("events.jsonl", [Record(n, e, b"") for n, e in enumerate(events, 1)])
    assert session.spend == {("claude-haiku-4-5", False): [0, 0, 0, 32, 0]}


def test_pi_compacts_past_its_window_less_its_reserve():
    from ctxfit_cli.fleet.auto_compact import compaction_at

    assert compaction_at("pi", 200_000) == 200_000 - 16_384
