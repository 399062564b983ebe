"""SWE-agent trajectories and OpenHands event logs, read from the real files in ../shared/realworld."""

from __future__ import annotations

import json

import orjson
import pytest
from typer.testing import CliRunner

from ctxfit_cli.cli.app import app
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.formats import read_transcripts

from conftest import REALWORLD, ROOT, needs_realworld

pytestmark = needs_realworld
SWE = sorted((REALWORLD / "swe-agent").glob("*.traj"))
OPENHANDS = [REALWORLD / "openhands" / "basic.json", REALWORLD / "openhands" / "multi_swe_bench_output.jsonl"]
runner = CliRunner()


def _read(path):
    with open(path, "rb") as stream:
        return [t.materialize() for t in read_transcripts(str(path), stream)]


def test_the_real_files_are_there():
    assert len(SWE) == 2 and all(p.exists() for p in OPENHANDS)


@pytest.mark.parametrize("path", SWE + OPENHANDS, ids=lambda p: p.name)
def test_detected_and_every_fitted_request_is_valid(path):
    expected = "swe-agent" if path.suffix == ".traj" else "openhands"
    estimate = runner.invoke(app, ["estimate", str(path), "--json"])
    assert estimate.exit_code == 0, estimate.output
    assert {f["format"] for f in json.loads(estimate.stdout)["files"]} == {expected}
    for budget in (2_000, 6_000, 400_000):
        fitted = runner.invoke(app, ["fit", str(path), "--budget", str(budget), "--json"])
        assert fitted.exit_code == 0, fitted.output
        for payload in json.loads(fitted.stdout)["payloads"]:
            assert validate_request(payload, "openai") == []


def test_swe_agent_tool_calls_and_results_pair_up():
    [simple] = _read(REALWORLD / "swe-agent" / "function_calling_simple.traj")
    calls = [p.call_id for m in simple.messages for p in m.parts if p.kind == "tool_call"]
    results = [p.call_id for m in simple.messages for p in m.parts if p.kind == "tool_result"]
    assert calls == results and len(calls) == 5
    assert [m.role for m in simple.system] == ["system"]
    # SWE-agent's bookkeeping fields are not part of what is sent.
    assert all(b'"thought"' not in m.raw and b'"agent"' not in m.raw for m in simple.messages)
    assert len(simple.calls) == sum(m.role == "assistant" for m in simple.messages)


def test_swe_agent_without_function_calling_is_a_chat_with_its_demonstration():
    [pydicom] = _read(REALWORLD / "swe-agent" / "pydicom-1458_gpt4.traj")
    raw = json.loads((REALWORLD / "swe-agent" / "pydicom-1458_gpt4.traj").read_bytes())
    assert len(pydicom.system) + len(pydicom.messages) == len(raw["history"])
    assert any("demonstration" in m.parts[0].text for m in pydicom.messages[:2])


def test_openhands_records_every_calls_usage():
    lines = (REALWORLD / "openhands" / "multi_swe_bench_output.jsonl").read_bytes().splitlines()
    transcripts = _read(OPENHANDS[1])
    assert len(transcripts) == len(lines) == 3
    for transcript, line in zip(transcripts, lines):
        usages = orjson.loads(line)["metrics"]["token_usages"]
        recorded = [(c.id, c.prompt_tokens, c.output_tokens) for c in transcript.calls]
        assert recorded == [(u["response_id"], u["prompt_tokens"], u["completion_tokens"]) for u in usages]
        for call in transcript.calls:
            assert transcript.messages[call.message].role == "assistant"
        assert transcript.tools is not None and transcript.system  # the system action's prompt and tools


def test_openhands_event_list_rebuilds_the_conversation():
    [basic] = _read(OPENHANDS[0])
    assert [m.role for m in basic.messages] == ["user", "assistant", "tool", "assistant"]
    assert [(c.model, c.prompt_tokens) for c in basic.calls] == [
        ("claude-3-5-sonnet-20241022", 3486), ("claude-3-5-sonnet-20241022", 4646)]


def test_forced_format_and_a_wrong_document(tmp_path):
    path = tmp_path / "run.traj"
    path.write_text('{"history": [{"role": "user", "content": "fix it", "agent": "main"}], "info": {}}')
    result = runner.invoke(app, ["estimate", str(path), "--format", "swe-agent", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["files"][0]["messages"] == 1
    broken = tmp_path / "broken.json"
    broken.write_text('{"history": 3, "instance_id": "x"}')
    result = runner.invoke(app, ["estimate", str(broken), "--format", "openhands"])
    assert result.exit_code == 3
    assert "broken.json:1" in result.stderr and "list of events" in result.stderr
