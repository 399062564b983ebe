"""Many inputs: folders, the default log folders, bad files among good ones, copies, --jobs.

The logs are copies of ../shared/realworld made at test time in temporary folders."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxfit_cli.cli.app import app
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.fleet.discovery import default_folders

from conftest import REALWORLD, ROOT, needs_realworld

pytestmark = needs_realworld
CLAUDE = REALWORLD / "claude-code" / "ccviewer_5c0375b4.jsonl"
SUBAGENT = REALWORLD / "claude-code" / "spotter_4d5611e5_agent-a2898e3.jsonl"
CODEX = REALWORLD / "codex" / "localpush_rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"
SWE = REALWORLD / "swe-agent" / "function_calling_simple.traj"
OPENHANDS = REALWORLD / "openhands" / "multi_swe_bench_output.jsonl"
SUMMARY_ONLY = b'{"type":"summary","summary":"Fix the login bug","leafUuid":"6f1c2a9e-0d7b-4d0c-9a51-2b4f3f1e8c11"}\n'
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """A folder tree of real logs of four agents, and a file that is not a log."""
    (tmp_path / "claude" / "-home-me-demo").mkdir(parents=True)
    (tmp_path / "codex" / "2026" / "02").mkdir(parents=True)
    (tmp_path / "runs").mkdir()
    shutil.copy(CLAUDE, tmp_path / "claude" / "-home-me-demo" / CLAUDE.name)
    shutil.copy(SUBAGENT, tmp_path / "claude" / "-home-me-demo" / SUBAGENT.name)
    shutil.copy(CODEX, tmp_path / "codex" / "2026" / "02" / CODEX.name)
    shutil.copy(SWE, tmp_path / "runs" / SWE.name)
    shutil.copy(OPENHANDS, tmp_path / "runs" / OPENHANDS.name)
    (tmp_path / "runs" / "README.txt").write_text("not a log")
    return tmp_path


def test_a_folder_is_searched_recursively(logs):
    result = invoke("estimate", str(logs), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    formats = sorted(f["format"] for f in report["files"])
    assert formats == ["claude-code", "claude-code", "codex", "openhands", "openhands", "openhands", "swe-agent"]
    assert report["errors"] == [] and report["skipped"] == []
    assert report["total"]["tokens"] == sum(f["tokens"] for f in report["files"])


def test_a_bad_file_among_many_is_a_warning_and_exit_5(logs):
    bad = logs / "runs" / "broken.jsonl"
    # (cut in the middle: a cut last line is a log being written, read up to it)
    bad.write_bytes(b'{"role": "user", "content": "hi"}\n{"role": "assistant", "con\n{"role": "user", "content": "x"}\n')
    result = invoke("estimate", str(logs), "--json")
    assert result.exit_code == 5
    report = json.loads(result.stdout)
    assert len(report["files"]) == 7  # the others are all reported
    assert report["errors"] == [{"path": str(bad), "error": f"{bad}:2: truncated JSON: the line ends before the value is complete"}]
    assert f"warning: {bad}:2" in result.stderr and "exit code 5" in result.stderr
    strict = invoke("estimate", str(logs), "--json", "--strict")
    assert strict.exit_code == 3 and strict.stdout == ""
    assert f"error: {bad}:2: truncated JSON" in strict.stderr


@pytest.mark.parametrize("command", [["replay", "--no-chart"], ["sessions"], ["plan"], ["fit"]])
def test_every_command_goes_on_past_a_bad_file(logs, command):
    bad = logs / "runs" / "broken.traj"
    bad.write_bytes(b"\x00\x01 not json")
    result = invoke(*command, str(logs / "runs"), str(CLAUDE))
    assert result.exit_code == 5, result.output
    assert str(bad) in result.stderr and result.stdout


def test_a_log_of_only_a_summary_does_not_stop_the_run(logs):
    summary = logs / "claude" / "-home-me-demo" / "a3c2b1d0.jsonl"
    summary.write_bytes(SUMMARY_ONLY)
    result = invoke("estimate", str(logs), "--json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert [s["path"] for s in report["skipped"]] == [str(summary)] and len(report["files"]) == 7
    assert "skipped: no conversation" in result.stderr
    alone = invoke("estimate", str(summary))
    assert alone.exit_code == 3 and "has no messages" in alone.stderr


def test_the_same_session_copied_is_counted_once(logs):
    copies = logs / "zz-backup"  # read last: the first of two copies is the one kept
    copies.mkdir()
    shutil.copy(CLAUDE, copies / "renamed.jsonl")
    shutil.copy(SWE, copies / "again.traj")  # no session id in it: known by its bytes
    # A resumed session's new log repeats the replies of the old one; the old one is its start.
    lines = CLAUDE.read_bytes().replace(b"5c0375b4-57a5-4f26-b12d-d022ee4e51b7",
                                        b"9e1f0c2a-0000-4000-8000-000000000001").splitlines(keepends=True)
    (copies / "start.jsonl").write_bytes(b"".join(lines[:20]))
    result = invoke("sessions", str(logs), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert len(report["sessions"]) == 7
    skipped = {Path(s["path"]).name: s["reason"] for s in report["skipped"]}
    assert set(skipped) == {"renamed.jsonl", "again.traj", "start.jsonl"}
    assert "its replies are the start of" in skipped["start.jsonl"]
    estimate = json.loads(invoke("estimate", str(logs), "--json").stdout)
    assert len(estimate["files"]) == 7


def test_fit_and_plan_take_several_paths(logs, tmp_path):
    paths = [str(CLAUDE), str(SWE), str(OPENHANDS)]
    fitted = invoke("fit", *paths, "--budget", "3000")
    assert fitted.exit_code == 0, fitted.output
    payloads = [json.loads(line) for line in fitted.stdout_bytes.splitlines()]
    assert len(payloads) == 5  # one per conversation: OpenHands' output holds three
    dialects = ["anthropic", "openai", "openai", "openai", "openai"]
    assert all(validate_request(p, d) == [] for p, d in zip(payloads, dialects))
    plans = json.loads(invoke("plan", *paths, "--budget", "3000", "--json").stdout)
    assert isinstance(plans, list) and len(plans) == 5
    [one] = json.loads(invoke("plan", str(SWE), "--json").stdout)  # always a list
    assert one["stage"] == "none"


@pytest.mark.parametrize("command", [["estimate"], ["replay", "--steps"], ["sessions", "--budget", "20000"]])
def test_jobs_give_the_same_results_as_one_process(logs, command):
    shutil.copy(REALWORLD / "claude-code" / "spotter_short.jsonl", logs / "short.jsonl")
    (logs / "broken.json").write_text("{")
    one = invoke(*command, str(logs), "--json", "--jobs", "1")
    two = invoke(*command, str(logs), "--json", "--jobs", "2")
    assert one.exit_code == two.exit_code == 5
    assert one.stdout == two.stdout and one.stderr == two.stderr


def test_default_folders_follow_the_environment(tmp_path):
    home = tmp_path / "home"
    (home / ".claude" / "projects").mkdir(parents=True)
    (home / ".codex" / "sessions").mkdir(parents=True)
    assert default_folders({"HOME": str(home)}) == [str(home / ".claude" / "projects"), str(home / ".codex" / "sessions")]
    one, two = tmp_path / "one", tmp_path / "two"
    (one / "projects").mkdir(parents=True)
    (two / "projects").mkdir(parents=True)
    (tmp_path / "codex" / "sessions").mkdir(parents=True)
    environ = {"HOME": str(home), "CLAUDE_CONFIG_DIR": f"{one}, {two}", "CODEX_HOME": str(tmp_path / "codex")}
    assert default_folders(environ) == [str(one / "projects"), str(two / "projects"), str(tmp_path / "codex" / "sessions")]


def _run(*args: str, env: dict, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxfit_cli", *args], env=env, stdin=stdin,
                          capture_output=True, cwd=ROOT, timeout=120)


def test_with_no_path_the_default_log_folders_are_read(tmp_path):
    """Real runs: no path and nothing piped (stdin is /dev/null) reads the agents' folders."""
    home = tmp_path / "home"
    project = home / ".claude" / "projects" / "-home-me-demo"
    project.mkdir(parents=True)
    shutil.copy(CLAUDE, project / CLAUDE.name)
    (project / "b7e1.jsonl").write_bytes(SUMMARY_ONLY)
    codex_home = tmp_path / "codex-home"
    (codex_home / "sessions" / "2026").mkdir(parents=True)
    shutil.copy(CODEX, codex_home / "sessions" / "2026" / CODEX.name)
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(codex_home)}
    env.pop("CLAUDE_CONFIG_DIR", None)
    done = _run("sessions", "--json", env=env)
    assert done.returncode == 0, done.stderr
    sessions = json.loads(done.stdout)["sessions"]
    assert sorted(s["agent"] for s in sessions) == ["Claude Code", "Codex"]
    claude = next(s for s in sessions if s["agent"] == "Claude Code")
    assert claude["id"] == "5c0375b4-57a5-4f26-b12d-d022ee4e51b7" and claude["project"] == "/path/to/Demo"
    assert b"b7e1.jsonl: skipped: no conversation" in done.stderr
    # CLAUDE_CONFIG_DIR replaces ~/.claude; piped input wins over the folders.
    other = tmp_path / "other"
    (other / "projects" / "p").mkdir(parents=True)
    shutil.copy(SUBAGENT, other / "projects" / "p" / SUBAGENT.name)
    done = _run("estimate", "--json", env={**env, "CLAUDE_CONFIG_DIR": str(other)})
    names = sorted(Path(f["path"]).name for f in json.loads(done.stdout)["files"])
    assert names == [CODEX.name, SUBAGENT.name]
    piped = _run("estimate", "--json", env=env, stdin=open(SWE, "rb"))
    assert [f["format"] for f in json.loads(piped.stdout)["files"]] == ["swe-agent"]
    empty = tmp_path / "empty-home"
    empty.mkdir()
    nothing = _run("replay", env={**os.environ, "HOME": str(empty), "CODEX_HOME": str(empty / "none"),
                                  "CLAUDE_CONFIG_DIR": str(empty / "none")})
    assert nothing.returncode == 2 and b"no logs were found in the default folders" in nothing.stderr


def test_partial_exit_code_across_the_process_boundary(logs):
    (logs / "runs" / "bad.json").write_text('{"history": 3, "instance_id": "x"}')
    done = _run("estimate", str(logs), env=dict(os.environ))
    assert done.returncode == 5
    assert done.stdout.count(b"tokens") >= 7 and b"bad.json:1" in done.stderr
