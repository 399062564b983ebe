"""`ctxfit sessions`: one row per session, grouped, filtered, sorted, and readable at any width."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import orjson
import pytest
from typer.testing import CliRunner

from ctxfit_cli.cli.app import app

from conftest import REALWORLD, ROOT, needs_realworld

pytestmark = needs_realworld
runner = CliRunner()


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """Copies of real logs of every agent (the big Claude Code ones left out to keep tests quick)."""
    folder = tmp_path_factory.mktemp("logs")
    for name in ("claude-code/ccviewer_5c0375b4.jsonl", "claude-code/spotter_4d5611e5_agent-a2898e3.jsonl",
                 "codex/localpush_rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
                 "openhands/multi_swe_bench_output.jsonl", "openhands/basic.json",
                 "swe-agent/pydicom-1458_gpt4.traj"):
        target = folder / name
        target.parent.mkdir(exist_ok=True)
        shutil.copy(REALWORLD / name, target)
    return folder


def sessions(*args: str, env: dict | None = None):
    result = runner.invoke(app, ["sessions", *args], env=env)
    assert result.exit_code == 0, result.output
    return result


def test_one_row_per_session_with_what_the_log_says(logs):
    rows = json.loads(sessions(str(logs), "--json").stdout)["sessions"]
    assert len(rows) == 8  # the OpenHands evaluation output holds three instances
    by_id = {row["id"]: row for row in rows}
    claude = by_id["5c0375b4-57a5-4f26-b12d-d022ee4e51b7"]
    assert claude["agent"] == "Claude Code" and claude["project"] == "/path/to/Demo"
    assert claude["models"] == ["claude-sonnet-4-20250514"]
    assert (claude["started"], claude["last_activity"]) == ("2025-09-07T09:52:03.071Z", "2025-09-07T09:54:26.499Z")
    assert by_id["4d5611e5-241a-462a-8d15-5122611a9569/a2898e3"]["agent"] == "Claude Code"  # a sub-agent's own log
    codex = by_id["019c8a4d-8f45-7010-8b5d-7fad920aa6f9"]
    assert codex["agent"] == "Codex" and codex["models"] == ["gpt-5.3-codex"]
    swe = next(r for r in rows if r["agent"] == "SWE-agent")
    assert swe["started"] is None and swe["peak_source"] == "estimated"
    for row in rows:
        assert row["window_share"] == round(row["peak"] / row["window"], 4)
        assert row["ctxfit"]["stage"] in ("none", "clear", "turns", "rounds")


def test_recorded_usage_is_the_peak_where_the_log_has_it(logs):
    rows = json.loads(sessions(str(logs / "openhands"), "--json").stdout)["sessions"]
    lines = (logs / "openhands" / "multi_swe_bench_output.jsonl").read_bytes().splitlines()
    for line in lines:
        instance = orjson.loads(line)
        row = next(r for r in rows if r["id"].startswith(instance["instance_id"] + "@"))
        assert row["peak_source"] == "recorded" and row["project"] == "ponylang/ponyc"
        assert row["peak"] == max(u["prompt_tokens"] for u in instance["metrics"]["token_usages"])
        # The log's prompts include the system prompt and tools OpenHands sent: more than the estimate
        # of the conversation alone would suggest is not required, only that both are reported.
        assert row["estimated_peak"] > 0


def test_what_ctxfit_would_have_done_at_a_small_budget(logs):
    rows = json.loads(sessions(str(logs), "--json", "--budget", "30000", "--window", "60000").stdout)["sessions"]
    subagent = next(r for r in rows if r["id"].endswith("/a2898e3"))
    # Sending everything, the sub-agent passes a 60k window; ctxfit keeps every request inside it.
    assert subagent["peak_source"] == "recorded" and subagent["recorded_peak"] > 60_000
    assert subagent["agent_rejected"] > 0 and subagent["ctxfit"]["rejected"] == 0
    assert subagent["ctxfit"]["stage"] != "none" and subagent["ctxfit"]["peak"] <= 60_000


def test_group_filter_and_sort(logs):
    rows = json.loads(sessions(str(logs), "--json", "--sort", "peak").stdout)["sessions"]
    assert [r["peak"] for r in rows] == sorted((r["peak"] for r in rows), reverse=True)
    by_day = json.loads(sessions(str(logs), "--json", "--by", "day").stdout)
    assert by_day["by"] == "day" and sum(g["sessions"] for g in by_day["groups"]) == 8
    assert {g["key"] for g in by_day["groups"]} == {"2025-01-27", "2025-04-30", "2025-09-07", "2026-02-12",
                                                    "2026-02-23", "(no date)"}
    weeks = {g["key"]: g["sessions"] for g in json.loads(sessions(str(logs), "--json", "--by", "week").stdout)["groups"]}
    assert weeks["2025-W18"] == 3
    projects = json.loads(sessions(str(logs), "--json", "--by", "project").stdout)["groups"]
    assert next(g for g in projects if g["key"] == "ponylang/ponyc")["sessions"] == 3
    models = json.loads(sessions(str(logs), "--json", "--by", "model").stdout)["groups"]
    assert any(g["key"] == "gpt-5.3-codex" for g in models)
    recent = json.loads(sessions(str(logs), "--json", "--since", "2026-01-01").stdout)["sessions"]
    assert {r["agent"] for r in recent} == {"Claude Code", "Codex"}
    old = json.loads(sessions(str(logs), "--json", "--until", "2025-04-30").stdout)["sessions"]
    assert {r["agent"] for r in old} == {"OpenHands"} and len(old) == 4
    bad = runner.invoke(app, ["sessions", str(logs), "--by", "month"])
    assert bad.exit_code == 2 and "--by" in bad.stderr


@pytest.mark.parametrize("columns", [40, 60, 100, 180])
@pytest.mark.parametrize("by", [None, "project"])
def test_the_layout_fits_the_width_and_never_breaks_a_number(logs, columns, by):
    args = [str(logs), "--budget", "8000", "--window", "16000"] + (["--by", by] if by else [])
    text = sessions(*args, env={"COLUMNS": str(columns)}).stdout
    data = json.loads(sessions(*args, "--json").stdout)
    assert max(len(line) for line in text.splitlines()) <= min(columns, 100)  # compact: never past 100
    rows = data["groups"] if by else data["sessions"]
    numbers = {f"{r['peak']:,}" for r in rows} | {f"{r['messages']:,}" for r in rows}
    found = set(re.findall(r"\d[\d,]*", text))
    assert numbers <= found  # each whole, on one line
    if columns == 100:
        assert text.splitlines()[0].split()[0] in ("SESSION", "GROUP")  # a table at 100 columns


def test_sessions_in_a_real_process_read_the_folders_given(logs):
    done = subprocess.run([sys.executable, "-m", "ctxfit_cli", "sessions", str(logs), "--sort", "messages"],
                          capture_output=True, cwd=ROOT, env={**os.environ, "COLUMNS": "100"}, timeout=120)
    assert done.returncode == 0 and done.stderr == b""
    lines = done.stdout.decode().splitlines()
    assert lines[0].startswith("SESSION") and len(lines) >= 8 and max(map(len, lines)) <= 100


@pytest.mark.parametrize("name", ["spotter_4d5611e5.jsonl", "full-session-four.jsonl", "ccviewer_5c0375b4.jsonl"])
def test_a_big_log_held_in_outline_gives_the_rows_of_the_log_held_whole(name, monkeypatch):
    """A log past `log_outline.MIN_BYTES` is walked in outline (its text not held: `sessions` of a
    256 MB Claude Code log peaks at 175 MB, not 878 MB); the row is the same to the token."""
    from ctxfit_cli.fleet import log_outline
    from ctxfit_cli.fleet import sessions as view
    from ctxfit_cli.fleet.combine import combine
    from ctxfit_cli.fleet.job import Job
    from ctxfit_cli.fleet.work import run_file

    def rows() -> list[dict]:
        combined = combine([run_file(str(REALWORLD / "claude-code" / name), Job("sessions"))])
        return [view.session_row(kept, budget=30_000) for kept in combined.kept]

    whole = rows()
    monkeypatch.setattr(log_outline, "MIN_BYTES", 1)
    assert log_outline.worth_it(str(REALWORLD / "claude-code" / name), "claude-code")
    assert rows() == whole and whole


@needs_realworld
def test_a_sub_agent_whose_replies_are_inline_and_in_its_own_log_is_counted_once(tmp_path):
    """Claude Code 2.1 writes a sub-agent's replies inline in its parent's log (agent_progress) and
    in the sub-agent's own log: read together, each reply is counted once, in the sub-agent's row."""
    parent = REALWORLD / "claude-code" / "spotter_4d5611e5.jsonl"
    child = REALWORLD / "claude-code" / "spotter_4d5611e5_agent-a2898e3.jsonl"

    def costs(*logs):
        folder = tmp_path / str(len(logs))
        folder.mkdir()
        for log in logs:
            shutil.copy(log, folder / log.name)
        result = runner.invoke(app, ["sessions", "--json", "--no-cache", str(folder)])
        return {row["id"].rsplit("/", 1)[-1]: row["cost"]["usd"] for row in json.loads(result.stdout)["sessions"]}

    alone, both = costs(parent), costs(parent, child)
    parent_id = "4d5611e5-241a-462a-8d15-5122611a9569"
    assert both["a2898e3"] > 0
    inline = alone[parent_id] - both[parent_id]
    # What the parent held inline of this sub-agent (11 of its 12 replies) is now its own row's.
    assert 0 < inline < both["a2898e3"]
    assert both[parent_id] + both["a2898e3"] < alone[parent_id] + both["a2898e3"]
