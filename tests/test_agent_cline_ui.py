"""Cline's `ui_messages.json` (issue #34 item 4): usage only. `fit` and `estimate` say where the
conversation is; `sessions` reports its calls, peak and cost as recorded; beside the task's history
it is the same session; Kilo Code's tasks are found in its own folder."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import REALWORLD, needs_realworld
from fuzzing import invoke
from test_agent_continue import sessions_at_home

from ctxfit_cli.agents import cline_ui, kilo_code
from ctxfit_cli.fleet.discovery import default_folders, expand

pytestmark = needs_realworld
UI = REALWORLD / "cline-ui" / "mcp-vscode-server_ui_messages.json"
HISTORY = REALWORLD / "cline" / "api_conversation_history.json"


def _usages() -> list[dict]:
    """What each `api_req_started` message records: one per model call."""
    return [json.loads(m["text"]) for m in json.loads(UI.read_bytes()) if m.get("say") == "api_req_started"]


@pytest.mark.parametrize("command", [["fit", "--budget", "5000"], ["estimate"], ["plan"], ["replay"]])
def test_the_commands_that_need_the_conversation_name_the_file_that_holds_it(command):
    result = invoke([*command, str(UI)])
    assert result.exit_code == 3 and not result.stdout
    [line] = result.stderr.strip().splitlines()
    assert "Cline's UI messages" in line and "api_conversation_history.json beside it" in line


def test_sessions_reports_its_calls_peak_and_recorded_cost():
    result = invoke(["sessions", str(UI), "--json"])
    assert result.exit_code == 0, result.stderr
    [row] = json.loads(result.stdout)["sessions"]
    usages = _usages()
    prompts = [u["tokensIn"] + u["cacheWrites"] + u["cacheReads"] for u in usages]
    assert (row["agent"], row["id"], row["messages"]) == ("Cline", "cline-ui", 0)
    assert row["calls"] == len(usages) == 61
    assert (row["peak"], row["peak_source"]) == (max(prompts), "recorded")
    assert row["cost"]["usd"] == pytest.approx(sum(u["cost"] for u in usages), abs=1e-6)
    assert row["cost"]["cache_read"] == sum(u["cacheReads"] for u in usages)
    assert row["cost"]["output"] == sum(u["tokensOut"] for u in usages)
    stamps = [m["ts"] for m in json.loads(UI.read_bytes())]
    assert (row["started"], row["last_activity"]) == ("2025-10-15T13:14:40.239Z", "2025-10-15T14:19:16.323Z")
    assert (min(stamps), max(stamps)) == (1760534080239, 1760537956323)


def test_beside_its_history_it_is_one_session_whose_cost_it_gives(tmp_path):
    task = tmp_path / "tasks" / "1760534080239"
    task.mkdir(parents=True)
    shutil.copy(HISTORY, task / "api_conversation_history.json")
    shutil.copy(UI, task / "ui_messages.json")
    assert expand([str(tmp_path)]) == [str(task / "api_conversation_history.json"), str(task / "ui_messages.json")]
    result = invoke(["sessions", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    [row] = document["sessions"]
    assert row["path"].endswith("api_conversation_history.json") and row["messages"] > 0
    assert row["cost"]["usd"] == pytest.approx(sum(u["cost"] for u in _usages()), abs=1e-6)
    assert "the usage of the session" in document["skipped"][0]["reason"]


def test_a_task_in_a_fake_home_is_found_and_named_by_its_extension(tmp_path):
    storage = tmp_path / ".config" / "Code" / "User" / "globalStorage"
    for extension, task in (("saoudrizwan.claude-dev", "1"), (kilo_code.EXTENSION, "2")):
        folder = storage / extension / "tasks" / task
        folder.mkdir(parents=True)
        shutil.copy(UI, folder / "ui_messages.json")
    assert str(storage / kilo_code.EXTENSION / "tasks") in default_folders({"HOME": str(tmp_path)})
    done = sessions_at_home(tmp_path)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["sessions"]
    assert sorted((r["agent"], r["id"], r["calls"]) for r in rows) == [("Cline", "1", 61), ("Kilo Code", "2", 61)]


def test_a_kilo_code_history_is_read_as_clines():
    result = invoke(["estimate", str(HISTORY), "--format", "kilo-code", "--json", "--top", "0"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["files"][0]["format"] == "kilo-code"
    assert cline_ui.agent_of(f"/h/globalStorage/{kilo_code.EXTENSION}/tasks/2/ui_messages.json") == "Kilo Code"


def test_only_the_ui_list_is_recognised():
    assert cline_ui.recognise([{"ts": 1, "type": "say", "say": "text", "text": "hi"}])
    assert not cline_ui.recognise([{"role": "user", "content": "hi", "ts": 1, "type": "say"}])
    assert not cline_ui.recognise({"ts": 1, "type": "say"})
