"""Issue #25: dollars (the price table, recorded cost per session, replay in dollars, ccusage's
figures), dates as ccusage users type them, choices, quiet and honest totals."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REALWORLD, ROOT, needs_realworld
from typer.testing import CliRunner

from ctxfit_cli.cli.app import app
from ctxfit_cli.cli.commands import sessions as sessions_command
from ctxfit_cli.cli.options import ENGINES, PROFILES, TOKENIZERS
from ctxfit_cli.fleet import sessions as view
from ctxfit_cli.fleet.spend import Spend
from ctxfit_cli.replay.model_prices import load_prices

#: The tables' width pinned: a COLUMNS in the environment running the tests (a narrow terminal,
#: a test runner's worker) would otherwise turn the table into cards.
runner = CliRunner(env={"COLUMNS": "120"})
CLAUDE = REALWORLD / "claude-code"
CODEX = REALWORLD / "codex"


def run(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


# --- the price table ------------------------------------------------------------------------------

def test_every_model_family_of_the_window_table_has_prices():
    table = load_prices()
    assert table.date == "2026-12-07"
    for model in ("claude-opus-4-8", "claude-opus-4-8-fast", "gpt-5.4", "gpt-5.3-codex-spark", "gemini-3.1-pro-preview",
                  "claude-opus-4-6", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001", "gpt-5-codex",
                  "gpt-5.3-codex", "gpt-4.1", "gpt-4o", "o3", "gemini-2.5-pro", "gemini-2.5-flash", "claude-opus-4-7"):
        assert table.price(model) is not None, model
    # A model the table lacks is priced by the providers' catalog under its own name (issue #34 item 5),
    # never silently as an older one.
    listed = table.price("gpt-6.1-terra")
    assert listed.name == "gpt-6.1-terra" and listed.source.startswith("gpt-6.1-terra in genai-prices")


def test_long_context_and_one_hour_cache_rates():
    price = load_prices().price("claude-sonnet-4-5")
    assert price.cost(input=1_000_000, cache_write=0, cache_read=0, output=0) == 3.0
    assert price.cost(input=1_000_000, cache_write=0, cache_read=0, output=0, long=True) == 6.0
    assert price.cost(input=0, cache_write=0, cache_read=0, output=0, cache_write_1h=1_000_000) == 6.0


def test_prices_file_replaces_the_models_it_names(tmp_path):
    given = tmp_path / "prices.json"
    given.write_text(json.dumps({"date": "2027-01-01", "models": {"claude-opus-4-6": {
        "input": 1, "cache_write": 1, "cache_read": 1, "output": 1}}}))
    table = load_prices(str(given))
    assert table.price("claude-opus-4-6").rates.output == 1.0
    assert table.price("gpt-5").rates.output == 10.0  # the rest stays shipped
    assert (table.date, table.source) == ("2027-01-01", str(given))


def test_a_bad_prices_file_is_a_usage_error(tmp_path):
    given = tmp_path / "prices.json"
    given.write_text(json.dumps({"models": {"m": {"input": "three"}}}))
    result = run("sessions", str(tmp_path), "--prices", str(given))
    assert result.exit_code == 2
    assert "input must be a price" in result.stderr


# --- recorded usage -------------------------------------------------------------------------------

def test_a_reply_counts_once_with_its_last_usage_and_codex_repeats_are_dropped():
    spend = Spend()
    for output in (1, 7):
        spend.claude_code({"requestId": "r", "message": {"id": "m", "model": "claude-opus-4-6", "usage": {
            "input_tokens": 2, "cache_creation_input_tokens": 10, "output_tokens": output,
            "cache_creation": {"ephemeral_1h_input_tokens": 4}}}})
    spend.codex_model("gpt-5-codex")
    event = {"total_token_usage": {"input_tokens": 100}, "last_token_usage": {
        "input_tokens": 100, "cached_input_tokens": 60, "output_tokens": 5}}
    spend.codex_usage(event)
    spend.codex_usage(dict(event))  # the same call reported again
    assert spend.totals() == {("claude-opus-4-6", False): [2, 6, 0, 7, 4], ("gpt-5-codex", False): [40, 0, 60, 5, 0]}


@needs_realworld
@pytest.mark.parametrize("path", [CLAUDE / "spotter_short.jsonl", CLAUDE / "full-session-four.jsonl",
                                  CODEX / "rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl"])
def test_estimate_of_one_log_adds_up_its_spend_as_it_reads_it(path, monkeypatch):
    """The tally `estimate` reads on the way is the one a reading of its own gives, and the log
    is not read again for it."""
    from ctxfit_cli.fleet import spend as spend_module
    from ctxfit_cli.fleet.job import Job
    from ctxfit_cli.fleet.work import run_file

    alone = spend_module.spend_of_file(str(path), "codex" if path.parent == CODEX else "claude-code")
    assert alone  # (these logs record usage)
    monkeypatch.setattr(spend_module, "spend_of_file", lambda *_: pytest.fail("read again for its spend"))
    [unit] = run_file(str(path), Job("estimate", describe=False)).units
    [item] = unit.items
    assert item["spend"] == alone
    result = run("estimate", str(path))
    assert result.exit_code == 0, result.stderr
    assert "recorded cost: $" in result.stdout


@needs_realworld
def test_sessions_cost_as_recorded_matches_ccusage_figures():
    """ccusage 20.0.24's `session --json --offline` on these files (docs/cost.md)."""
    result = run("sessions", str(CLAUDE / "full-session-four.jsonl"), str(CLAUDE / "spotter_short.jsonl"),
                 str(CODEX / "rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl"), "--json")
    assert result.exit_code == 0, result.stderr
    costs = {Path(row["path"]).stem: row["cost"] for row in json.loads(result.stdout)["sessions"]}
    expected = {"full-session-four": 0.5990635500000001, "spotter_short": 0.144448,
                "rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e": 0.206222}
    for name, usd in expected.items():
        assert costs[name]["usd"] == pytest.approx(usd, rel=0.01), name
    assert costs["spotter_short"]["cache_write_1h"] > 0  # the hour-long writes ccusage prices at 2x input


@needs_realworld
def test_sessions_by_model_and_day_sum_the_costs():
    files = [str(CLAUDE / "spotter_ae4a77f8.jsonl"), str(CLAUDE / "full-session-four.jsonl")]
    rows = json.loads(run("sessions", *files, "--json").stdout)["sessions"]
    models = json.loads(run("sessions", *files, "--json", "--by", "model").stdout)["groups"]
    assert sum(g["usd"] for g in models) == pytest.approx(sum(r["cost"]["usd"] for r in rows))
    days = json.loads(run("sessions", *files, "--json", "--by", "day", "--tz", "UTC").stdout)["groups"]
    assert sum(g["usd"] for g in days) == pytest.approx(sum(r["cost"]["usd"] for r in rows))
    table = run("sessions", *files, "--by", "model").stdout
    assert "COST" in table and "$" in table


@needs_realworld
def test_replay_gives_dollars_and_savings_against_sending_everything():
    result = run("replay", str(CLAUDE / "full-session-four.jsonl"), "--json", "-p", "ctxfit", "-p", "none")
    document = json.loads(result.stdout)
    policies = document["files"][0]["policies"]
    assert policies["none"]["saves_usd"] == 0.0
    assert policies["ctxfit"]["saves_usd"] == pytest.approx(policies["none"]["usd"] - policies["ctxfit"]["usd"])
    price = load_prices().price("claude-sonnet-4-5")
    none = policies["none"]
    assert none["usd"] == pytest.approx(price.cost(input=none["uncached"], cache_write=none["cache_write"],
                                                   cache_read=none["cache_read"], output=0))
    assert "$" in run("replay", str(CLAUDE / "full-session-four.jsonl"), "--no-chart").stdout


# --- ccusage itself, where npm is -----------------------------------------------------------------

@needs_realworld
@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("npx") is None,
                    reason="npm is not installed: ccusage (an npm package) cannot be run")
def test_recorded_cost_per_session_agrees_with_ccusage_within_one_percent():
    sys.path.insert(0, str(ROOT / "bench"))
    from ccusage_compare import compare
    rows = compare(REALWORLD)
    assert len(rows) >= 10
    for row in rows:
        assert row["ctxfit"] is not None, row
        # ccusage counts a Claude Code log's top-level replies only; ctxfit adds the sub-agents'
        # replies written inline (agent_progress records), the session's cost too (issue #34).
        inline = _inline_subagent_cost(CLAUDE / f"{row['session']}.jsonl")
        assert row["ctxfit"] - inline == pytest.approx(row["ccusage"], rel=0.01), row


def _inline_subagent_cost(log: Path) -> float:
    """The cost of the sub-agents' replies a Claude Code log holds inline, priced as ctxfit prices
    them: those of sub-agents whose own log is not beside it (ctxfit counts those in their own
    log's row, as ccusage does: fleet/combine.py)."""
    if not log.is_file():
        return 0.0
    spend = Spend()
    for line in log.read_bytes().splitlines():
        record = json.loads(line)
        agent = record.get("data", {}).get("agentId") if isinstance(record.get("data"), dict) else None
        if record.get("type") == "progress" and not (log.parent / f"{log.stem}_agent-{agent}.jsonl").is_file():
            spend.claude_code_subagent(record)
    return view.session_cost(spend.totals(), load_prices())["usd"] or 0.0


# --- dates ----------------------------------------------------------------------------------------

ROW = {"started": "2026-02-20T09:00:00.000Z", "last_activity": "2026-02-20T11:00:00.000Z"}


@pytest.mark.parametrize("since, kept", [("20260220", True), ("2026-02-21", False), ("20260221", False)])
def test_since_takes_ccusage_forms(since, kept):
    from ctxfit_cli.cli.dates import bound
    assert bool(view.within([ROW], bound(since, "since", "UTC"), None)) is kept


def test_until_a_day_runs_to_its_end_and_zones_move_it():
    from ctxfit_cli.cli.dates import bound
    assert view.within([ROW], None, bound("2026-02-20", "until", "UTC"))
    # 09:00 UTC is 22:00 on the 20th in Auckland (UTC+13): the 19th there has ended before it.
    assert not view.within([ROW], None, bound("2026-02-19", "until", "Pacific/Auckland"))


@needs_realworld
@pytest.mark.parametrize("when", ["bogus", "2026-13-01", "2026/02/01", "7x"])
def test_a_date_that_is_not_one_is_a_usage_error_naming_the_forms(when):
    result = run("sessions", str(CLAUDE / "spotter_short.jsonl"), "--since", when)
    assert result.exit_code == 2
    assert "YYYYMMDD" in result.stderr and "7d" not in result.stdout


@needs_realworld
def test_relative_since_keeps_recent_sessions_only():
    path = str(CLAUDE / "spotter_short.jsonl")
    assert json.loads(run("sessions", path, "--json", "--since", "100000d").stdout)["sessions"]
    assert not json.loads(run("sessions", path, "--json", "--since", "1h").stdout)["sessions"]
    assert run("sessions", path, "--tz", "Nowhere/Else", "--since", "7d").exit_code == 2


# --- choices --------------------------------------------------------------------------------------

def test_choices_agree_with_the_core():
    from ctxfit_cli.cli.many import ENGINES as MANY_ENGINES
    from ctxfit_cli.counters.profiles import builtin_profiles
    from ctxfit_cli.counters.tokenizers import _TOKENIZERS, ALIASES
    assert sessions_command.GROUPS == view.GROUPS and sessions_command.SORTS == view.SORTS
    assert ENGINES == MANY_ENGINES
    from ctxfit_cli.cli.commands.replay import POLICY_NAMES
    from ctxfit_cli.replay.policies import POLICIES
    assert POLICY_NAMES == tuple(POLICIES)
    assert set(PROFILES) == set(builtin_profiles())
    assert set(TOKENIZERS) == set(_TOKENIZERS) | set(ALIASES)


@pytest.mark.parametrize("args, listed", [
    (["sessions", "--by", "month"], "'day', 'week', 'project', 'model', 'agent'"),
    (["sessions", "--sort", "size"], "'cost'"),
    (["estimate", "-f", "csv", "-"], "'claude-code'"),
    (["estimate", "--engine", "spark", "-"], "'local', 'ray'"),
    (["replay", "-p", "trim", "-"], "ctxfit-strict"),
    (["estimate", "-t", "gpt2", "-"], "'o200k'"),
])
def test_a_value_outside_a_choice_is_a_usage_error_listing_them(args, listed):
    result = run(*args)
    assert result.exit_code == 2
    assert listed in result.stderr


def test_completion_offers_the_values():
    env = {"_CTXFIT_COMPLETE": "complete_bash", "COMP_WORDS": "ctxfit sessions --by ", "COMP_CWORD": "3"}
    script = Path(sys.executable).with_name("ctxfit")  # the console script: completion keys on its name
    done = subprocess.run([str(script)], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert {"day", "week", "project", "model", "agent"} <= set(done.stdout.split()), done.stdout + done.stderr
    env = {**env, "COMP_WORDS": "ctxfit replay -p ctxfit", "COMP_CWORD": "3"}
    done = subprocess.run([str(script)], env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert set(done.stdout.split()) == {"ctxfit", "ctxfit-strict"}, done.stdout + done.stderr


# --- quiet, notes, totals, exit codes -------------------------------------------------------------

def _copies(tmp_path: Path, count: int) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    for k in range(count):
        shutil.copy(CLAUDE / "spotter_short.jsonl", folder / f"copy{k}.jsonl")
    return folder


@needs_realworld
def test_repeated_notes_are_summarised_and_verbose_lists_them(tmp_path):
    folder = _copies(tmp_path, 6)
    result = run("sessions", str(folder))
    assert result.exit_code == 0
    assert "5 duplicate logs skipped; --verbose lists them" in result.stderr
    assert result.stderr.count("skipped: the same session") == 0
    assert run("sessions", str(folder), "-v").stderr.count("skipped: the same session") == 5
    quiet = run("sessions", str(folder), "-q")
    assert quiet.stderr == "" and "SESSION" in quiet.stdout


@needs_realworld
def test_estimate_total_is_conversations_and_the_largest_not_a_sum(tmp_path):
    files = [str(CLAUDE / "spotter_4d5611e5.jsonl"), str(CLAUDE / "full-session-four.jsonl")]
    result = run("estimate", *files)
    assert "Total of " in result.stdout and "each conversation is its own request" in result.stdout
    assert "largest: " in result.stdout and "counters: profile:claude" in result.stdout
    total = json.loads(run("estimate", *files, "--json").stdout)["total"]
    largest = max(json.loads(run("estimate", *files, "--json").stdout)["files"], key=lambda f: f["tokens"])
    assert total["largest"]["tokens"] == largest["tokens"] < total["tokens"]
    assert total["conversations"] == 3 and total["cost_usd"] > 0


def test_a_folder_of_only_bad_files_names_the_code_it_returns(tmp_path):
    for k in range(2):
        (tmp_path / f"bad{k}.jsonl").write_bytes(b"\x00\x01 not json\n{\n")
    done = subprocess.run([sys.executable, "-m", "ctxfit_cli", "sessions", str(tmp_path)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 3
    assert "exit code 3" in done.stderr and "exit code 5" not in done.stderr


def test_project_groups_are_shortened_from_the_front():
    from ctxfit_cli.cli import sessions_view
    cells = [{"GROUP": "/home/someone/work/clients/acme/worktrees/feature-" + name, "SESSIONS": "1"}
             for name in ("alpha", "beta")]
    lines = sessions_view.render(cells, 30)
    assert lines[1].startswith("…") and "alpha" in lines[1] and "beta" in lines[2]


@needs_realworld
def test_estimate_of_one_log_gives_its_recorded_cost():
    path = str(CODEX / "rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl")
    total = json.loads(run("estimate", path, "--json").stdout)["total"]
    assert total["cost_usd"] == pytest.approx(0.206222, rel=0.01)  # ccusage's figure
    assert "recorded cost: $0.21" in run("estimate", path).stdout
