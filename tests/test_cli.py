"""The commands: JSON shapes, streams, files and exit codes."""

from __future__ import annotations

import orjson
from typer.testing import CliRunner

from ctxfit_cli.cli import app
from ctxfit_cli.core.notes import AGENT_NOTE, TOO_LONG
from conftest import ROOT, Chat, run_cli
from test_fitting import result

runner = CliRunner()


def subagent_file(tmp_path, results=(300,) * 10, dialect="anthropic"):
    chat = Chat(dialect).user("Read everything and summarise.")
    for tokens in results:
        chat.round(result(tokens))
    path = tmp_path / f"agent.{dialect}.jsonl"
    path.write_bytes(chat.jsonl())
    return path


def test_estimate_json_has_the_documented_schema(tmp_path):
    path = subagent_file(tmp_path)
    outcome = runner.invoke(app, ["estimate", "--json", str(path)])
    assert outcome.exit_code == 0, outcome.output
    document = orjson.loads(outcome.stdout)
    for entry in (document["files"][0], document["total"]):
        assert {"messages", "tokens", "naive_tokens", "by_script", "by_kind"} <= set(entry)
        assert set(entry["by_script"]) == {"ascii", "cjk", "other"}
        assert all({"chars", "tokens"} <= set(v) for v in entry["by_script"].values())
        assert sum(entry["by_kind"].values()) == entry["tokens"]
    assert document["files"][0]["path"] == str(path) and document["files"][0]["format"] == "anthropic"


def test_estimate_weighs_a_log_against_the_budget_fit_would_use_never_more_than_its_window(tmp_path):
    """The default budget (400,000) is above a Claude model's 200,000 window: `fit` fits to the
    window, so `estimate` says how far the log is from that, not from a budget no fit uses."""
    small = tmp_path / "small.anthropic.jsonl"
    small.write_bytes(subagent_file(tmp_path).read_bytes())
    claude = str(ROOT / "sample_transcripts" / "claude_code_session.jsonl")
    outcome = runner.invoke(app, ["estimate", claude, str(small)])
    assert outcome.exit_code == 0, outcome.output
    [line] = [line for line in outcome.stdout.splitlines() if "of the 200,000 window" in line and "largest" not in line]
    assert "of the 200,000 budget" in line
    assert "of the 400,000 budget, " in outcome.stdout  # (the other file's window is larger)
    document = orjson.loads(runner.invoke(app, ["estimate", "--json", claude, str(small)]).stdout)
    assert [f["budget"] for f in document["files"]] == [200_000, 400_000] and document["budget"] == 400_000
    assert document["total"]["largest"]["budget"] == min(400_000, document["total"]["largest"]["window"])


def test_fit_writes_only_the_payload_on_stdout_and_a_summary_on_stderr(tmp_path):
    path = subagent_file(tmp_path)
    done = run_cli("fit", str(path), "--budget", "2000")
    assert done.returncode == 0
    payload = orjson.loads(done.stdout)
    assert payload["system"] == "You are an agent." and payload["messages"]
    assert "stage 1" in done.stderr.decode() and "→" in done.stderr.decode()


def test_fit_into_estimate_through_a_real_pipe(tmp_path):
    path = subagent_file(tmp_path)
    fitted = run_cli("fit", str(path), "--budget", "2000")
    estimated = run_cli("estimate", "--json", "-", input=fitted.stdout)
    assert estimated.returncode == 0
    report = orjson.loads(estimated.stdout)["files"][0]
    assert report["format"] == "request" and report["tokens"] <= 2000


def test_fit_output_file_is_written_atomically_and_report_as_json(tmp_path):
    path = subagent_file(tmp_path)
    out, report = tmp_path / "request.json", tmp_path / "report.json"
    outcome = runner.invoke(app, ["fit", str(path), "-b", "2000", "-o", str(out), "--report", str(report)])
    assert outcome.exit_code == 0
    assert outcome.stdout == ""
    assert orjson.loads(out.read_bytes())["messages"]
    facts = orjson.loads(report.read_bytes())
    assert facts["stage"] == "clear" and facts["tokens_sent"] <= 2000
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".ctxfit-")] == []


def test_cannot_fit_exits_4_with_the_design_message_and_no_output(tmp_path):
    path = subagent_file(tmp_path, results=(300, 20_000))
    out = tmp_path / "request.json"
    done = run_cli("fit", str(path), "--budget", "2000", "--window", "10000", "-o", str(out))
    assert done.returncode == 4
    assert done.stdout == b"" and not out.exists()
    message = done.stderr.decode()
    assert TOO_LONG in message and "10,000" in message and message.count("\n") == 1


def test_an_overrun_within_the_window_is_written_with_a_warning(tmp_path):
    path = subagent_file(tmp_path, results=(300, 5_000))
    done = run_cli("fit", str(path), "--budget", "2000", "--window", "10000", "--report", str(tmp_path / "r.json"))
    assert done.returncode == 0 and orjson.loads(done.stdout)["messages"]
    assert "warning: even the smallest request" in done.stderr.decode()
    assert orjson.loads((tmp_path / "r.json").read_bytes())["overrun"] is True


def test_tell_agent_adds_the_note_to_the_system_prompt_once(tmp_path):
    path = subagent_file(tmp_path)
    once = run_cli("fit", str(path), "--tell-agent")
    assert orjson.loads(once.stdout)["system"].endswith(AGENT_NOTE)
    twice = run_cli("fit", "-", "--tell-agent", input=once.stdout)
    assert twice.stdout == once.stdout


def test_plan_json_lists_batches_with_their_results(tmp_path):
    path = subagent_file(tmp_path)
    outcome = runner.invoke(app, ["plan", str(path), "--budget", "2000", "--json"])
    assert outcome.exit_code == 0
    [plan] = orjson.loads(outcome.stdout)
    assert {"stage", "tokens_before", "tokens_after", "budget", "batches"} <= set(plan)
    result_keys = {"index", "tool", "id", "tokens"}
    assert all(result_keys <= set(r) for b in plan["batches"] for r in b["results"])
    assert plan["batches"][0]["results"][0]["tool"] == "read_file"


def test_plan_report_is_a_table_on_stdout(tmp_path):
    path = subagent_file(tmp_path)
    done = run_cli("plan", str(path), "--budget", "2000")
    text = done.stdout.decode()
    assert done.returncode == 0 and "clearing batches" in text and "fits from here" in text


def test_replay_json_compares_policies(tmp_path):
    path = subagent_file(tmp_path)
    outcome = runner.invoke(app, ["replay", str(path), "-b", "2000", "-w", "2500", "-p", "ctxfit", "-p", "turns", "--json", "--steps"])
    assert outcome.exit_code == 0, outcome.output
    document = orjson.loads(outcome.stdout)
    assert set(document["policies"]) == {"ctxfit", "turns"}
    for numbers in document["policies"].values():
        assert {"calls", "rejected", "max_request", "total_input", "cache_read_share", "cache_breaks",
                "cache_bound", "cache_bound_share", "share_of_bound"} <= set(numbers)
        assert numbers["cache_read"] <= numbers["cache_bound"] and 0 <= numbers["share_of_bound"] <= 1
    assert len(document["files"][0]["policies"]["ctxfit"]["steps"]) == 10
    assert document["policies"]["turns"]["rejected"] > 0 == document["policies"]["ctxfit"]["rejected"]


def test_replay_reads_standard_input(tmp_path):
    path = subagent_file(tmp_path, dialect="openai")
    done = run_cli("replay", "-", "-b", "2000", "--no-chart", input=path.read_bytes())
    assert done.returncode == 0 and "ctxfit" in done.stdout.decode()


def test_note_prints_the_agent_note():
    outcome = runner.invoke(app, ["note"])
    assert outcome.stdout.strip() == AGENT_NOTE
    assert orjson.loads(runner.invoke(app, ["note", "--json"]).stdout) == {"note": AGENT_NOTE}


def test_help_lists_the_exit_codes():
    for command in ([], ["estimate"], ["fit"], ["plan"], ["replay"], ["note"]):
        outcome = runner.invoke(app, [*command, "--help"])
        assert outcome.exit_code == 0
        assert "4 cannot fit" in outcome.stdout and "3 bad input" in outcome.stdout


def test_python_dash_m_runs_the_cli():
    done = run_cli("--help")
    assert done.returncode == 0 and b"estimate" in done.stdout


def test_fit_clears_down_to_the_low_water_mark_and_strict_only_until_it_fits(tmp_path):
    path = subagent_file(tmp_path, results=(300,) * 14)  # strict clears 1 batch, the default 2
    plans = {}
    for name, extra in {"default": [], "strict": ["--strict"]}.items():
        outcome = runner.invoke(app, ["plan", str(path), "--budget", "4000", "--json", *extra])
        assert outcome.exit_code == 0, outcome.output
        [plans[name]] = orjson.loads(outcome.stdout)
    cleared = {n: sum(b["cleared"] for b in p["batches"]) for n, p in plans.items()}
    assert cleared["default"] > cleared["strict"] > 0
    assert plans["default"]["tokens_after"] < plans["strict"]["tokens_after"] <= 4000
    assert plans["default"]["protected"] == plans["strict"]["protected"]


def test_strict_with_a_low_water_mark_is_a_usage_error(tmp_path):
    path = subagent_file(tmp_path)
    done = run_cli("fit", str(path), "--strict", "--lowwater", "0.7")
    assert done.returncode == 2 and done.stdout == b""
    assert b"--strict" in done.stderr


def test_replay_tries_another_low_water_mark_for_the_ctxfit_policy(tmp_path):
    path = subagent_file(tmp_path, results=(300,) * 30)
    runs = {}
    for mark in ("0.55", "0.95"):
        outcome = runner.invoke(app, ["replay", str(path), "-b", "4000", "--lowwater", mark, "--min-cacheable", "0",
                                      "-p", "ctxfit", "-p", "ctxfit-strict", "--json"])
        assert outcome.exit_code == 0, outcome.output
        runs[mark] = orjson.loads(outcome.stdout)["policies"]
    assert runs["0.55"]["ctxfit-strict"] == runs["0.95"]["ctxfit-strict"]  # the seed rule ignores the mark
    assert runs["0.55"]["ctxfit"]["cache_breaks"] < runs["0.95"]["ctxfit"]["cache_breaks"]
