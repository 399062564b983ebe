"""Qwen Code, Goose, Amp and Crush (issue 34 item 4), on logs built from each agent's own schema
(no real log of any of them was available: `tests/agent_schemas/README.md` says which source file
and commit each fixture follows). Each is detected, read into its model's dialect with its calls
and results paired, fitted into valid requests, replayed with one request per call its log
records, and listed by `sessions`, from its default folder in a new user's HOME."""

from __future__ import annotations

import io
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import ROOT
from fuzzing import invoke

from ctxfit_cli.agents import BY_NAME, recognised
from ctxfit_cli.core.model import Role
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.fleet.discovery import default_folders
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.reading import read_records
from ctxfit_cli.formats.skipped import Skipped
from ctxfit_cli.input_formats import FORMATS

SCHEMAS = ROOT / "tests" / "agent_schemas"
QWEN = SCHEMAS / "qwen_code_session.jsonl"
AMP = SCHEMAS / "T-019b9d03-62e3-772f-9780-3e637f90eaec.json"
GOOSE_LEGACY = SCHEMAS / "20250301_120000.jsonl"


def database(sql: str, path: Path) -> Path:
    """A database built from one of the fixtures' SQL (the agent's own CREATE TABLE statements)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as connection:
        connection.executescript((SCHEMAS / sql).read_text())
    connection.close()
    return path


@pytest.fixture
def goose_db(tmp_path) -> Path:
    return database("goose_sessions.sql", tmp_path / "goose" / "sessions.db")


@pytest.fixture
def crush_db(tmp_path) -> Path:
    return database("crush.sql", tmp_path / "proj" / ".crush" / "crush.db")


def read(path: Path, skipped: Skipped | None = None) -> list:
    with open(path, "rb") as stream:
        return [t.materialize() for t in read_transcripts(str(path), stream, skipped=skipped)]


def text(message) -> str:
    """A message as it is sent (its JSON), to look for what it says."""
    return message.raw.decode("utf-8")


def calls_and_results(transcript) -> tuple[list[str], list[str]]:
    """The ids of the calls the transcript's replies make and of the results sent back, in order."""
    calls, results = [], []
    for message in transcript.messages:
        value = orjson.loads(message.raw)
        for block in value.get("content") if isinstance(value.get("content"), list) else ():
            if block.get("type") == "tool_use":
                calls.append(block["id"])
            elif block.get("type") == "tool_result":
                results.append(block["tool_use_id"])
        calls += [c["id"] for c in value.get("tool_calls") or ()]
        if value.get("role") == "tool":
            results.append(value["tool_call_id"])
    return calls, results


# --- detection --------------------------------------------------------------------------------------


def test_each_agent_is_a_format_with_one_registry_entry():
    for name in ("qwen-code", "goose", "amp", "crush"):
        assert name in FORMATS and BY_NAME[name].name == name
    # where each compacts on its own, as its source computes it
    assert BY_NAME["qwen-code"].compaction_at(1_000_000) == 850_000
    assert BY_NAME["qwen-code"].compaction_at(131_072) == 131_072 - 33_000
    assert BY_NAME["goose"].compaction_at(200_000) == 160_000


@pytest.mark.parametrize("path, format", [(QWEN, "qwen-code"), (AMP, "amp"), (GOOSE_LEGACY, "goose")])
def test_a_json_log_is_detected_even_behind_records_of_types_no_agent_writes(path, format, tmp_path):
    data = path.read_bytes()
    assert {t.format for t in read(path)} == {format}
    if path.suffix == ".jsonl":  # a record of a new type first: detection reads on
        moved = tmp_path / path.name
        moved.write_bytes(b'{"type": "brand-new-bookkeeping", "at": 1}\n' + data)
        assert {t.format for t in read(moved)} == {format}


def test_a_database_is_detected_by_its_name_and_its_tables(goose_db, crush_db, tmp_path):
    assert {t.format for t in read(goose_db)} == {"goose"}
    assert {t.format for t in read(crush_db)} == {"crush"}
    renamed = tmp_path / "sessions.sqlite"  # Goose's tables, not its file's name: not taken for it
    shutil.copy(goose_db, renamed)
    done = invoke(["estimate", str(renamed)])
    assert done.exit_code == 3 and "SQLite database of no agent ctxfit reads" in done.stderr
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE sessions (id TEXT)")
    connection.close()
    assert invoke(["estimate", str(other)]).exit_code == 3


def test_a_database_on_standard_input_is_refused_with_what_to_do(goose_db):
    done = invoke(["estimate", "-"], input=goose_db.read_bytes())
    assert done.exit_code == 3 and "give its path" in done.stderr and "Traceback" not in done.stderr


def test_reading_a_database_leaves_its_folder_as_it_was(goose_db):
    before = sorted(os.listdir(goose_db.parent)), goose_db.read_bytes()
    read(goose_db)
    assert (sorted(os.listdir(goose_db.parent)), goose_db.read_bytes()) == before


def test_no_agent_takes_another_agents_records_or_a_plain_message():
    claude = {"type": "assistant", "uuid": "u", "parentUuid": None, "sessionId": "s", "cwd": "/p", "version": "2.1",
              "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}}  # fmt: skip
    for value in (claude, {"role": "user", "content": "hi"}, {"messages": [{"role": "user", "content": "x"}]}):
        assert recognised(value) is None


# --- messages, pairs and calls -------------------------------------------------------------------------


def test_qwen_code_reads_the_active_branch_a_conversation_per_compression():
    skipped = Skipped()
    first, second = read(QWEN, skipped)
    assert first.dialect == second.dialect == "openai"
    texts = [text(m) for m in first.messages]
    assert not any("Fixing it." in t for t in texts)  # the rewound branch is left out
    assert not any("The user wants a summary." in t for t in texts)  # thoughts are not sent
    assert [m.role for m in first.messages][:3] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    calls, results = calls_and_results(first)
    assert calls == results == ["call_read_1", "call_edit_1"]
    assert [(c.message, c.prompt_tokens, c.output_tokens) for c in first.calls] == [
        (1, 11850, 38), (3, 11990, 61), (5, 12120, 70), (7, 12230, 17)]  # fmt: skip
    assert all(first.messages[c.message].role is Role.ASSISTANT for c in first.calls)
    assert second.given == 2 and "state_snapshot" in text(second.messages[0])
    assert [(c.prompt_tokens, c.model) for c in second.calls] == [(4310, "qwen3-coder-plus")]
    assert skipped.as_dict() == {"records": {"shiny_new_record": 1}, "keys": {"newRecordKey": 1}}


def test_amp_reads_a_thread_as_anthropic_messages_with_its_calls_and_results_paired():
    skipped = Skipped()
    [thread] = read(AMP, skipped)
    assert thread.dialect == "anthropic"
    calls, results = calls_and_results(thread)
    assert calls == results == ["toolu_01A", "toolu_01B"]
    failed = orjson.loads(thread.messages[-2].raw)["content"][0]
    assert failed["type"] == "tool_result" and failed.get("is_error") is True
    assert [c.prompt_tokens for c in thread.calls] == [3 + 14210, 5 + 120 + 14210, 4 + 160 + 14330]
    assert skipped.as_dict()["records"] == {"block/summary": 1, "message/info": 1}


def test_goose_sends_what_the_agent_sees_one_call_per_reply(goose_db):
    skipped = Skipped()
    first, second = read(goose_db, skipped)
    assert (first.dialect, second.dialect) == ("anthropic", "openai")  # no model recorded: OpenAI
    texts = " ".join(text(m) for m in first.messages)
    assert "It counts words." not in texts and "Summary of the conversation" in texts  # compacted history hidden
    calls, results = calls_and_results(first)
    assert calls == results == ["toolu_01", "toolu_02"]
    assert len(first.calls) == 3 and all(c.prompt_tokens is None for c in first.calls)
    assert len(second.calls) == 1
    assert skipped.as_dict()["records"] == {"content/shinyThing": 1}
    [legacy] = read(GOOSE_LEGACY)
    assert calls_and_results(legacy) == (["call_1"], ["call_1"]) and len(legacy.calls) == 2


def test_crush_reads_top_level_sessions_a_conversation_from_each_summary(crush_db):
    skipped = Skipped()
    before, after = read(crush_db, skipped)
    assert before.dialect == after.dialect == "anthropic"
    calls, results = calls_and_results(before)
    assert calls == results == ["call_view_1", "call_edit_1"]
    assert len(before.calls) == 3 and len(after.calls) == 1
    assert after.messages[0].role is Role.USER and "Summary:" in text(after.messages[0])
    assert not any("Find typos" in text(m) for m in before.messages + after.messages)  # a sub-agent's session
    assert skipped.as_dict()["records"] == {"part/sparkle": 1}


# --- the commands ------------------------------------------------------------------------------------


def inputs(goose_db: Path, crush_db: Path) -> list[tuple[Path, int]]:
    """Each input with the model calls its log records (the assistant records or messages)."""
    return [(QWEN, 5), (AMP, 3), (goose_db, 4), (GOOSE_LEGACY, 2), (crush_db, 4)]


def test_every_command_exits_0_and_fit_writes_valid_requests(goose_db, crush_db):
    for path, _ in inputs(goose_db, crush_db):
        for command in (["estimate"], ["plan", "--budget", "2000"], ["sessions"]):
            done = invoke([*command, str(path)])
            assert done.exit_code == 0, (path, command, done.stderr)
        done = invoke(["fit", "--budget", "60", "--json", str(path)])
        assert done.exit_code == 0, (path, done.stderr)
        document = orjson.loads(done.stdout_bytes)
        for report, payload in zip(document["reports"], document["payloads"]):
            assert validate_request(payload, report["dialect"]) == [], path


def test_replay_makes_one_request_per_call_the_log_records(goose_db, crush_db):
    for path, calls in inputs(goose_db, crush_db):
        done = invoke(["replay", "--json", "--budget", "3000", str(path)])
        assert done.exit_code == 0, (path, done.stderr)
        assert orjson.loads(done.stdout_bytes)["policies"]["ctxfit"]["calls"] == calls, path


def test_sessions_rows_say_model_project_dates_and_recorded_cost(goose_db, crush_db):
    done = invoke(["sessions", "--json", str(QWEN), str(AMP), str(goose_db), str(crush_db)])
    assert done.exit_code == 0, done.stderr
    rows = {row["id"]: row for row in orjson.loads(done.stdout_bytes)["sessions"]}
    qwen = rows["7d1c2a4e-5b6f-4c3d-9e8a-1b2c3d4e5f60"]
    assert (qwen["agent"], qwen["project"], qwen["models"], qwen["compactions"]) == (
        "Qwen Code", "/home/user/proj", ["qwen3-coder-plus"], 1)  # fmt: skip
    assert (qwen["started"], qwen["last_activity"]) == ("2026-03-02T10:00:00.000Z", "2026-03-02T10:09:00.000Z")
    # Priced as ccusage prices qwen3-coder-plus (1 / 0.1 / 5 per million: model_prices.json).
    c = qwen["cost"]
    assert c["unpriced"] == [] and c["usd"] == pytest.approx((c["input"] * 1 + c["cache_read"] * 0.1 + c["output"] * 5) / 1e6)
    assert qwen["cost"]["cache_read"] == 11800 + 11900 + 11950 + 12050  # the rewound reply was billed too
    amp = rows["T-019b9d03-62e3-772f-9780-3e637f90eaec"]
    assert amp["project"] == "/home/user/proj" and amp["started"] == "2026-01-08T09:50:03.494Z"
    assert (amp["cost"]["input"], amp["cost"]["cache_write"], amp["cost"]["cache_read"], amp["cost"]["output"]) == (
        12, 14490, 28540, 111)  # fmt: skip
    assert amp["cost"]["usd"] == pytest.approx((12 * 3 + 14490 * 3.75 + 28540 * 0.3 + 111 * 15) / 1e6, rel=1e-3)
    goose = rows["20260210_1"]
    assert goose["models"] == ["claude-sonnet-4-5-20250929"] and goose["project"] == "/home/user/proj"
    assert goose["compactions"] == 1  # its summary: a user message only the agent sees
    assert (goose["cost"]["input"], goose["cost"]["output"]) == (27500, 640)
    assert goose["cost"]["usd"] == pytest.approx((27500 * 3 + 640 * 15) / 1e6, rel=1e-3)  # not long-context rates
    assert rows["20260211_1"]["cost"]["usd"] is None  # no model recorded
    crush = rows["c1a2b3c4-0001"]
    assert (crush["agent"], crush["project"], crush["compactions"]) == ("Crush", str(crush_db.parent.parent), 1)
    assert crush["started"] == "2026-03-02T10:00:00.000Z"
    assert crush["cost"]["usd"] == pytest.approx(0.0712)  # the dollars Crush recorded for the session
    assert "c1a2b3c4-0002" not in rows  # a sub-agent's session is not listed, as Crush lists them


# --- where each keeps its logs -----------------------------------------------------------------------------


def test_the_default_folders_follow_the_variables_each_agent_honours(tmp_path):
    home = tmp_path / "home"
    for folder in (".qwen/projects/-home-user-proj/chats", ".local/share/goose/sessions", ".local/share/amp/threads"):
        (home / folder).mkdir(parents=True)
    assert set(default_folders({"HOME": str(home)})) >= {
        str(home / ".qwen/projects/-home-user-proj/chats"), str(home / ".local/share/goose/sessions"),
        str(home / ".local/share/amp/threads")}  # fmt: skip
    moved = tmp_path / "moved"
    for folder in ("runtime/projects/p/chats", "qhome/projects/q/chats", "goose/data/sessions", "xdg/amp/threads"):
        (moved / folder).mkdir(parents=True)
    env = {"HOME": str(home), "QWEN_RUNTIME_DIR": str(moved / "runtime"), "QWEN_HOME": str(moved / "qhome"),
           "GOOSE_PATH_ROOT": str(moved / "goose"), "XDG_DATA_HOME": str(moved / "xdg")}  # fmt: skip
    found = default_folders(env)
    assert str(moved / "runtime/projects/p/chats") in found and str(moved / "qhome/projects/q/chats") not in found
    assert str(moved / "goose/data/sessions") in found and str(moved / "xdg/amp/threads") in found
    env.pop("QWEN_RUNTIME_DIR")
    assert str(moved / "qhome/projects/q/chats") in default_folders(env)


def test_sessions_on_a_new_users_home_lists_every_session_of_each_agent(tmp_path):
    home = tmp_path / "home"
    chats = home / ".qwen" / "projects" / "-home-user-proj" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(QWEN, chats / "7d1c2a4e-5b6f-4c3d-9e8a-1b2c3d4e5f60.jsonl")
    sessions = home / ".local" / "share" / "goose" / "sessions"
    database("goose_sessions.sql", sessions / "sessions.db")
    shutil.copy(GOOSE_LEGACY, sessions / GOOSE_LEGACY.name)
    threads = home / ".local" / "share" / "amp" / "threads"
    threads.mkdir(parents=True)
    shutil.copy(AMP, threads / AMP.name)
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_DATA_HOME", "QWEN_HOME", "QWEN_RUNTIME_DIR")}
    env.update(HOME=str(home), COLUMNS="200")
    done = subprocess.run([sys.executable, "-m", "ctxfit_cli", "sessions", "--json"], capture_output=True,
                          env=env, cwd=ROOT, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = orjson.loads(done.stdout)["sessions"]
    assert {(row["agent"], row["id"]) for row in rows} == {
        ("Qwen Code", "7d1c2a4e-5b6f-4c3d-9e8a-1b2c3d4e5f60"), ("Amp", "T-019b9d03-62e3-772f-9780-3e637f90eaec"),
        ("Goose", "20260210_1"), ("Goose", "20260211_1"), ("Goose", "20250301_120000")}  # fmt: skip


def test_an_amp_thread_cut_short_is_read_as_being_written(tmp_path):
    data = AMP.read_bytes()
    cut = tmp_path / AMP.name
    cut.write_bytes(data[: data.index(b'"messageId": 3')])
    done = invoke(["estimate", str(cut)])
    assert done.exit_code == 0 and "still being written" in done.stdout, done.stderr


def test_a_qwen_session_on_stdin_reads_as_it_does_from_its_file():
    with open(QWEN, "rb") as stream:
        whole = [t.materialize() for t in read_transcripts("-", io.BytesIO(stream.read()))]
    assert [len(t.messages) for t in whole] == [len(t.messages) for t in read(QWEN)]


@pytest.mark.parametrize("path", [QWEN, GOOSE_LEGACY], ids=lambda p: p.name)
def test_records_of_unknown_types_anywhere_and_unknown_keys_change_nothing_but_the_count(path, tmp_path):
    """Issue 34 item 2: agents add record types and keys every week; neither changes what is read."""
    lines = path.read_bytes().splitlines()
    expected = [([m.raw for m in t.messages], t.calls) for t in read(path)]
    for at in range(len(lines) + 1):
        changed = [orjson.dumps({**orjson.loads(line), "addedThisWeek": 1}) for line in lines]
        changed.insert(at, b'{"type": "added-this-week", "data": {}}')
        variant = tmp_path / path.name
        variant.write_bytes(b"\n".join(changed) + b"\n")
        skipped = Skipped()
        assert [([m.raw for m in t.messages], t.calls) for t in read(variant, skipped)] == expected, at
        assert skipped.as_dict()["records"].get("added-this-week") == 1, at
        assert skipped.as_dict()["keys"].get("addedThisWeek", 0) >= len(lines) - 1, at


def test_a_database_being_written_is_read_anew_not_from_the_cache(goose_db):
    """Goose writes its database in WAL mode: while it runs, new rows are in `sessions.db-wal`
    and the database file itself does not change, so its kept result would be stale."""
    from ctxfit_cli.fleet import summary_cache

    def ids() -> set[str]:
        done = invoke(["sessions", "--json", str(goose_db)])
        return {row["id"] for row in orjson.loads(done.stdout_bytes)["sessions"]}

    with sqlite3.connect(goose_db) as setup:  # a WAL database, as Goose's is; closed, no -wal file
        setup.execute("PRAGMA journal_mode=WAL")
    setup.close()
    assert summary_cache.identity(str(goose_db)) is not None
    assert ids() == {"20260210_1", "20260211_1"}  # (its result is now kept)
    writer = sqlite3.connect(goose_db)
    writer.execute("INSERT INTO sessions (id, working_dir, accumulated_input_tokens) VALUES ('live', '/p', 1)")
    writer.execute(
        "INSERT INTO messages (session_id, role, content_json, created_timestamp) "
        """VALUES ('live', 'user', '[{"type": "text", "text": "hi"}]', 1770800000)"""
    )
    writer.commit()
    try:
        assert (goose_db.parent / "sessions.db-wal").exists()
        assert summary_cache.identity(str(goose_db)) is None
        assert "live" in ids()
    finally:
        writer.close()


def test_a_log_with_nothing_said_yet_is_no_conversation_naming_the_agent(tmp_path, goose_db):
    titled = tmp_path / "new.jsonl"  # a session with only its title so far
    titled.write_bytes(QWEN.read_bytes().splitlines()[5] + b"\n")
    empty = tmp_path / "elsewhere" / "sessions.db"
    empty.parent.mkdir()
    shutil.copy(goose_db, empty)
    with sqlite3.connect(empty) as connection:
        connection.execute("DELETE FROM messages")
    connection.close()
    for path, agent in ((titled, "Qwen Code session"), (empty, "Goose session")):
        for command in (["estimate"], ["fit", "--budget", "100"]):
            done = invoke([*command, str(path)])
            assert done.exit_code == 3 and agent in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("path", [QWEN, AMP, GOOSE_LEGACY], ids=lambda p: p.name)
def test_any_value_of_the_wrong_shape_is_read_past_or_refused_never_a_crash(path):
    """Values replaced by ones of every other JSON type (a fixed seed, 60 logs each): reading and
    describing each either works or refuses it as bad input, never fails inside."""
    import copy
    import random

    from ctxfit_cli.errors import BadInput, NoConversation
    from ctxfit_cli.fleet.meta import describe

    chance = random.Random(34)
    lines = path.read_bytes().splitlines() if path.suffix == ".jsonl" else [path.read_bytes()]
    wrong = [None, 1, -5, "x", [], {}, True, 1.5, [1], {"a": 1}]

    def places(value, at=()):
        children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, child in children:
            yield at + (key,)
            yield from places(child, at + (key,))

    for _ in range(60):
        records = [orjson.loads(line) for line in lines]
        for _ in range(chance.randint(1, 4)):
            record = chance.randrange(len(records))
            spots = list(places(records[record]))
            if spots:
                *parents, last = chance.choice(spots)
                holder = records[record]
                for key in parents:
                    holder = holder[key]
                holder[last] = copy.deepcopy(chance.choice(wrong))
        data = b"\n".join(orjson.dumps(r) for r in records) + b"\n"
        try:
            for transcript in read_transcripts(str(path), io.BytesIO(data)):
                transcript.materialize()
            format = next(read_transcripts(str(path), io.BytesIO(data))).format
            describe(str(path), format, list(read_records(str(path), io.BytesIO(data))))
        except (BadInput, NoConversation, StopIteration):
            pass
