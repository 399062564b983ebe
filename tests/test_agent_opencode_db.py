"""OpenCode's database (1.2 and later, `~/.local/share/opencode/opencode.db`), built with OpenCode's
own schema from the real `opencode export` (the one the real OpenCode writes is read in
test_real_agents.py): read as the export is,
one row per session in `sessions`, found in its default place, read-only; its cost against ccusage's."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REALWORLD, ROOT, needs_realworld
from fuzzing import invoke
from opencode_database import add_export, database_of
from test_agent_continue import sessions_at_home

from ctxfit_cli.agents import opencode_db
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.fleet.discovery import default_folders
from ctxfit_cli.formats import read_transcripts

pytestmark = needs_realworld
EXPORT = REALWORLD / "opencode-export" / "devtoolbox_960b22501128-0_full.jsonl"


@pytest.fixture
def database(tmp_path) -> Path:
    return database_of([EXPORT], tmp_path / "opencode.db")


def _read(path: Path):
    with open(path, "rb") as stream:
        return [t.materialize() for t in read_transcripts(str(path), stream)]


def test_detected_by_its_tables_and_read_as_its_export(database):
    assert opencode_db.database(str(database)) is not None and opencode_db.database(str(EXPORT)) is None
    [from_database], [from_export] = _read(database), _read(EXPORT)
    assert from_database.format == "opencode-db"
    assert [m.raw for m in from_database.messages] == [m.raw for m in from_export.messages]
    assert from_database.calls == from_export.calls and len(from_database.calls) == 2


def _add_second_session(database: Path, updated_ms: int = 1787238000001) -> None:
    second = json.loads(EXPORT.read_bytes())
    second["info"] = {**second["info"], "id": "ses_second", "time": {"created": 1787238000000, "updated": updated_ms}}
    for message in second["messages"]:
        message["info"]["id"] += "2"
        for part in message["parts"]:
            part["id"] += "2"
    with sqlite3.connect(database) as db:
        add_export(db, second)


def test_each_session_is_a_row_with_its_recorded_cost(database):
    _add_second_session(database)
    result = invoke(["sessions", str(database), "--json"])
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["sessions"]
    assert sorted((r["id"], r["agent"], r["calls"], r["messages"]) for r in rows) == [
        ("ses_fe0515d27ffe9rCVKAHcb6Q4WN", "OpenCode", 2, 4), ("ses_second", "OpenCode", 2, 4)]
    info = json.loads(EXPORT.read_bytes())["info"]
    assert all(r["cost"]["usd"] == pytest.approx(info["cost"], abs=1e-6) for r in rows)
    first = next(r for r in rows if r["id"] == info["id"])
    assert first["project"] == info["directory"] and first["started"] == "2026-08-20T14:58:53.784Z"


@pytest.mark.parametrize("command", [["fit", "--budget", "3000", "--json"], ["plan", "--budget", "3000"],
                                     ["replay", "-p", "none", "--json"], ["estimate"]])
def test_every_command_reads_it(database, command):
    result = invoke([command[0], str(database), *command[1:]])
    assert result.exit_code == 0, result.stderr
    if command[0] == "fit":
        payloads = json.loads(result.stdout)["payloads"]
        assert payloads and all(validate_request(p, "openai") == [] for p in payloads)
    if command[0] == "replay":
        assert json.loads(result.stdout)["files"][0]["policies"]["none"]["calls"] == 2


def test_it_is_opened_read_only(database):
    database.chmod(0o444)
    database.parent.chmod(0o555)  # (not even a journal could be made beside it)
    try:
        assert len(_read(database)) == 1
    finally:
        database.parent.chmod(0o755)


def test_found_where_opencode_keeps_it(tmp_path):
    data = tmp_path / ".local" / "share" / "opencode"
    data.mkdir(parents=True)
    database_of([EXPORT], data / "opencode.db")
    assert default_folders({"HOME": str(tmp_path)}) == [str(data / "opencode.db")]
    assert opencode_db.folders({"OPENCODE_DB": "other.db"}, tmp_path) == [data / "other.db"]
    assert opencode_db.folders({"XDG_DATA_HOME": "/x", "OPENCODE_DB": "/y/o.db"}, tmp_path) == [Path("/y/o.db")]
    done = sessions_at_home(tmp_path)
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)["sessions"]
    assert row["id"] == "ses_fe0515d27ffe9rCVKAHcb6Q4WN" and row["calls"] == 2


def test_a_database_of_no_agent_is_refused_in_one_line(tmp_path):
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    result = invoke(["estimate", str(other)])
    assert result.exit_code == 3 and "a SQLite database of no agent ctxfit reads" in result.stderr


def _ccusage() -> str | None:
    """ccusage 20's binary where it is installed (`CCUSAGE_DIR`, or /tmp/cc-npm as the guide installs it)."""
    for folder in (os.environ.get("CCUSAGE_DIR"), "/tmp/cc-npm"):
        binary = Path(folder or "/nonexistent") / "node_modules" / ".bin" / "ccusage"
        if binary.exists():
            return str(binary)
    return None


@pytest.mark.skipif(_ccusage() is None, reason="ccusage is not installed (CCUSAGE_DIR)")
def test_cost_agrees_with_ccusage_within_one_percent(tmp_path):
    data = tmp_path / "opencode"
    data.mkdir()
    database_of([EXPORT], data / "opencode.db")
    env = {**os.environ, "HOME": str(tmp_path), "OPENCODE_DATA_DIR": str(data), "NO_COLOR": "1"}
    done = subprocess.run([_ccusage(), "opencode", "session", "--json", "--offline"], env=env,
                          capture_output=True, text=True, timeout=300, check=True)
    [theirs] = json.loads(done.stdout)["sessions"]
    ours = subprocess.run([sys.executable, "-m", "ctxfit_cli", "sessions", str(data / "opencode.db"), "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=True)
    [row] = json.loads(ours.stdout)["sessions"]
    assert theirs["sessionId"] == row["id"]
    assert row["cost"]["usd"] == pytest.approx(theirs["totalCost"], rel=0.01)
    # ccusage's output leaves reasoning out; ctxfit counts it (billed as output).
    assert (row["cost"]["input"], row["cost"]["cache_read"]) == (theirs["inputTokens"], theirs["cacheReadTokens"])



def test_watch_shows_each_session_of_the_database_active_within_its_window(database):
    """OpenCode keeps every session in one database: `watch` shows each session active within
    `--active` (and the latest one whatever its time), each under its own id, not the file's."""
    from ctxfit_cli.fleet.live import Watch

    _add_second_session(database, updated_ms=1787238000001)  # 2026-08-20T15:40Z, after the first
    first = json.loads(EXPORT.read_bytes())["info"]
    updated = first["time"]["updated"] / 1000

    def ids(active: float | None, now: float) -> list[str]:
        watch = Watch([str(database)], active=active, clock=lambda: now)
        watch.catch_up()
        return [row["id"] for row in watch.snapshot()]

    assert ids(None, updated) == ["ses_second", first["id"]]
    assert ids(3600, updated + 60) == ["ses_second", first["id"]]
    assert ids(3600, 1787238000.001 + 7 * 86400) == ["ses_second"]  # a week later: the latest only
    result = invoke(["watch", str(database), "--once", "--json", "--active", "0"])
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["sessions"]
    assert [(r["id"], r["agent"], r["calls"]) for r in rows] == [("ses_second", "OpenCode", 2), (first["id"], "OpenCode", 2)]
