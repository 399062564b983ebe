"""Continue sessions (issue #34 item 4), on the real session of ../shared/realworld: its history in
its model's dialect, calls paired with their results, one call per logged model call, its
default folder (`$CONTINUE_GLOBAL_DIR/sessions`, else `~/.continue/sessions`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import REALWORLD, ROOT, needs_realworld
from fuzzing import invoke

from ctxfit_cli.agents import continue_dev
from ctxfit_cli.core.model import PartKind, Role
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.fleet.discovery import default_folders, expand
from ctxfit_cli.formats import read_transcripts

pytestmark = needs_realworld
SESSION = REALWORLD / "continue" / "hms_02044b99-f94b-4df0-a981-3b26d054b6b0.json"


def _raw() -> dict:
    return json.loads(SESSION.read_bytes())


def sessions_at_home(home, **environ: str) -> subprocess.CompletedProcess:
    """`ctxfit sessions --json` as a user runs it: no path, nothing piped, this home."""
    env = {key: value for key, value in os.environ.items() if key not in ("CONTINUE_GLOBAL_DIR", "XDG_DATA_HOME")}
    env.update(HOME=str(home), **environ)
    return subprocess.run([sys.executable, "-m", "ctxfit_cli", "sessions", "--json"], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=ROOT, timeout=120)


def _read(path=SESSION):
    with open(path, "rb") as stream:
        return [t.materialize() for t in read_transcripts(str(path), stream)]


def test_detected_and_read_as_chat_completions_with_its_system_prompt():
    [transcript] = _read()
    assert (transcript.format, transcript.dialect) == ("continue", "openai")  # GPT-5.2
    history = [item["message"] for item in _raw()["history"]]
    [system] = transcript.system
    assert system.parts[0].text.startswith("<important_rules>") and system.parts[0].text.endswith("</important_rules>")
    # Every user and tool message and every reply with text or calls is sent; thinking and the
    # empty placeholders are not; the cancelled call is answered (one message more).
    sent = [m for m in history if m["role"] in ("user", "tool") or m.get("toolCalls") or
            m["role"] == "assistant" and m["content"].strip()]
    assert len(transcript.messages) == len(sent) + 1 == 36
    assert transcript.messages[0].role is Role.USER and "Safe to delete" in transcript.messages[0].parts[0].text


def test_calls_and_results_pair_up_and_the_cancelled_call_is_answered_as_aborted():
    [transcript] = _read()
    calls = [p.call_id for m in transcript.messages for p in m.parts if p.kind is PartKind.TOOL_CALL]
    results = [p.call_id for m in transcript.messages for p in m.parts if p.kind is PartKind.TOOL_RESULT]
    logged = [c["id"] for item in _raw()["history"] for c in item["message"].get("toolCalls", [])]
    assert calls == logged and sorted(results) == sorted(calls) and len(calls) == 20
    cancelled = next(
        s["toolCallId"] for item in _raw()["history"] for s in item.get("toolCallStates", []) if s["status"] == "canceled"
    )
    assert any(cancelled in repair for repair in transcript.repairs)


def test_one_call_per_logged_model_call_and_no_recorded_tokens():
    [transcript] = _read()
    logged = [item for item in _raw()["history"] if item.get("promptLogs")]
    assert len(transcript.calls) == len(logged) == 14
    assert {c.model for c in transcript.calls} == {"GPT-5.2"}
    assert all(c.prompt_tokens is None for c in transcript.calls)  # Continue records no usage
    assert [transcript.messages[c.message].role for c in transcript.calls] == [Role.ASSISTANT] * 14
    replay = invoke(["replay", str(SESSION), "--json", "-p", "none"])
    assert replay.exit_code == 0, replay.stderr
    assert json.loads(replay.stdout)["files"][0]["policies"]["none"]["calls"] == 14


@pytest.mark.parametrize("budget", [3_000, 10_000, 400_000])
def test_every_fitted_request_is_valid(budget):
    result = invoke(["fit", str(SESSION), "--budget", str(budget), "--json"])
    assert result.exit_code == 0, result.stderr
    payloads = json.loads(result.stdout)["payloads"]
    assert payloads and all(validate_request(p, "openai") == [] for p in payloads)
    assert invoke(["plan", str(SESSION), "--budget", str(budget)]).exit_code == 0


def test_a_claude_session_is_read_as_anthropic_with_its_signed_thinking():
    session = {
        "sessionId": "s1",
        "title": "t",
        "workspaceDirectory": "file:///home/me/app",
        "history": [
            {"message": {"role": "user", "content": "list files", "id": "u"}, "contextItems": []},
            {"message": {"role": "thinking", "content": "let me look", "signature": "sig", "id": "t"}},
            {
                "message": {"role": "assistant", "content": "", "id": "a", "toolCalls": [
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"dirPath":"."}'}}]},
                "promptLogs": [{"modelTitle": "Claude Sonnet 4.5", "modelProvider": "anthropic",
                                "prompt": "<system>\nBe brief.\n\n<user>\nlist files", "completion": ""}],
            },
            {"message": {"role": "tool", "content": "a.py", "toolCallId": "c1", "id": "r"}},
        ],
    }
    [transcript] = list(read_transcripts("s1.json", __import__("io").BytesIO(json.dumps(session).encode())))
    transcript = transcript.materialize()
    assert transcript.dialect == "anthropic" and transcript.system[0].parts[0].text == "Be brief."
    reply = json.loads(transcript.messages[1].raw)
    assert [b["type"] for b in reply["content"]] == ["thinking", "tool_use"]
    assert reply["content"][1]["input"] == {"dirPath": "."}
    assert json.loads(transcript.messages[2].raw)["content"][0]["tool_use_id"] == "c1"
    assert [c.model for c in transcript.calls] == ["Claude Sonnet 4.5"]


def test_sessions_row_names_its_project_and_model_and_takes_its_date_from_the_index(tmp_path, monkeypatch):
    """A fake home as Continue leaves it: `~/.continue/sessions/<id>.json` beside the index."""
    sessions = tmp_path / ".continue" / "sessions"
    sessions.mkdir(parents=True)
    shutil.copy(SESSION, sessions / f"{_raw()['sessionId']}.json")
    index = [{"sessionId": _raw()["sessionId"], "title": "cleanup", "dateCreated": "1771582392000",
              "workspaceDirectory": _raw()["workspaceDirectory"]}]
    (sessions / "sessions.json").write_text(json.dumps(index))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CONTINUE_GLOBAL_DIR", raising=False)
    assert str(sessions) in default_folders()
    assert expand([str(sessions)]) == [str(sessions / f"{_raw()['sessionId']}.json")]  # not the index
    done = sessions_at_home(tmp_path)
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)["sessions"]
    assert (row["id"], row["agent"], row["project"]) == (_raw()["sessionId"], "Continue", "c:/laragon/www/hms")
    assert row["models"] == ["GPT-5.2"] and row["calls"] == 14 and row["messages"] == 36
    assert row["started"] == "2026-02-20T10:13:12.000Z" and row["cost"]["usd"] is None  # no usage recorded


def test_continue_global_dir_moves_its_folder(tmp_path):
    assert continue_dev.folders({"CONTINUE_GLOBAL_DIR": str(tmp_path / "c")}, tmp_path) == [tmp_path / "c" / "sessions"]
    assert continue_dev.folders({}, tmp_path) == [tmp_path / ".continue" / "sessions"]


def test_unknown_messages_and_keys_are_skipped_and_counted(tmp_path):
    session = _raw()
    session["shiny"] = 1
    session["history"][3]["sparkle"] = True
    session["history"].insert(2, {"message": {"role": "narrator", "content": "meanwhile", "id": "n"}})
    path = tmp_path / "session.json"
    path.write_text(json.dumps(session))
    result = invoke(["estimate", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    assert "message narrator 1" in result.stderr and "shiny 1" in result.stderr and "sparkle 1" in result.stderr
    [before], [after] = _read(), _read(path)
    assert [m.raw for m in after.messages] == [m.raw for m in before.messages] and after.calls == before.calls
