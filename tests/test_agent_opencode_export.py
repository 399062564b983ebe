"""`opencode export` JSON (issue #34 item 4), on the real export of ../shared/realworld: read by
OpenCode's own request builder, one call per step with its recorded prompt, its recorded cost."""

from __future__ import annotations

import json

import pytest
from conftest import REALWORLD, needs_realworld
from fuzzing import invoke

from ctxfit_cli.agents import opencode_export
from ctxfit_cli.core.model import PartKind, Role
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.formats import read_transcripts

pytestmark = needs_realworld
EXPORT = REALWORLD / "opencode-export" / "devtoolbox_960b22501128-0_full.jsonl"


def _raw() -> dict:
    return json.loads(EXPORT.read_bytes())


def _read():
    with open(EXPORT, "rb") as stream:
        return [t.materialize() for t in read_transcripts(str(EXPORT), stream)]


def _steps() -> list[dict]:
    """The `step-finish` parts of the export: one per model call."""
    return [p for m in _raw()["messages"] for p in m["parts"] if p["type"] == "step-finish"]


def test_detected_from_its_document_and_read_in_its_models_dialect():
    [transcript] = _read()
    assert (transcript.format, transcript.dialect) == ("opencode-export", "openai")  # opencode-go/hy3: not Claude
    assert [m.role for m in transcript.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert transcript.messages[0].parts[0].text == "tell me what it is"


def test_its_tool_call_is_answered_by_its_result():
    [transcript] = _read()
    tool = next(p for m in _raw()["messages"] for p in m["parts"] if p["type"] == "tool")
    calls = [p.call_id for m in transcript.messages for p in m.parts if p.kind is PartKind.TOOL_CALL]
    results = [p.call_id for m in transcript.messages for p in m.parts if p.kind is PartKind.TOOL_RESULT]
    assert calls == results == [tool["callID"]]
    assert transcript.messages[2].parts[0].text == tool["state"]["output"]


def test_one_recorded_call_per_step_with_its_whole_prompt():
    [transcript] = _read()
    steps = _steps()
    assert len(transcript.calls) == len(steps) == 2
    for call, step in zip(transcript.calls, steps):
        tokens = step["tokens"]
        assert call.prompt_tokens == tokens["input"] + tokens["cache"]["read"] + tokens["cache"]["write"]
        assert call.output_tokens == tokens["output"] + tokens["reasoning"]
        assert call.model == "hy3"
        assert transcript.messages[call.message].role is Role.ASSISTANT


def test_sessions_row_has_its_id_project_dates_and_recorded_cost():
    result = invoke(["sessions", str(EXPORT), "--json"])
    assert result.exit_code == 0, result.stderr
    [row] = json.loads(result.stdout)["sessions"]
    info = _raw()["info"]
    assert (row["id"], row["agent"], row["project"]) == (info["id"], "OpenCode", info["directory"])
    assert row["models"] == ["hy3"] and row["calls"] == 2 and row["peak_source"] == "recorded"
    assert row["peak"] == max(s["tokens"]["input"] + s["tokens"]["cache"]["read"] for s in _steps())
    assert row["started"] == "2026-08-20T14:58:53.784Z" and row["last_activity"] >= row["started"]
    # The dollars OpenCode recorded per message (hy3 is not in the price table): the session's own total.
    costs = [m["info"]["cost"] for m in _raw()["messages"] if m["info"]["role"] == "assistant"]
    assert row["cost"]["usd"] == pytest.approx(sum(costs), abs=1e-6) == pytest.approx(info["cost"], abs=1e-6)
    assert row["cost"]["cache_read"] == sum(s["tokens"]["cache"]["read"] for s in _steps())


@pytest.mark.parametrize("budget", [2_000, 19_000, 400_000])
def test_every_fitted_request_is_valid(budget):
    result = invoke(["fit", str(EXPORT), "--budget", str(budget), "--json"])
    assert result.exit_code == 0, result.stderr
    payloads = json.loads(result.stdout)["payloads"]
    assert payloads and all(validate_request(p, "openai") == [] for p in payloads)


def test_estimate_plan_and_replay_read_it_and_replay_makes_its_calls():
    for command in (["estimate"], ["plan", "--budget", "3000"]):
        result = invoke([*command, str(EXPORT)])
        assert result.exit_code == 0, result.stderr
    replay = invoke(["replay", str(EXPORT), "--json", "-p", "none"])
    assert replay.exit_code == 0, replay.stderr
    assert json.loads(replay.stdout)["files"][0]["policies"]["none"]["calls"] == len(_steps())


def test_unknown_parts_and_keys_are_skipped_and_counted(tmp_path):
    export = _raw()
    export["shiny"] = 1
    export["messages"][1]["parts"].insert(1, {"type": "hologram", "text": "x"})
    export["messages"][1]["mood"] = "calm"
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    result = invoke(["estimate", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    assert "part hologram 1" in result.stderr and "shiny 1" in result.stderr and "mood 1" in result.stderr
    [before], [after] = _read(), list(read_transcripts(str(path), open(path, "rb")))
    assert [m.raw for m in after.materialize().messages] == [m.raw for m in before.messages]


def test_a_message_or_request_is_not_taken_for_an_export():
    assert not opencode_export.recognise({"messages": [{"role": "user", "content": "hi"}]})
    assert not opencode_export.recognise({"info": {"id": "s"}, "messages": [{"role": "user", "parts": []}]})
