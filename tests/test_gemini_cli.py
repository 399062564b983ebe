"""Gemini CLI chat recordings: the real ones fitted at every share, both layouts replayed as
Gemini CLI replays them, a recording still being written, and `sessions` on a new user's HOME."""

from __future__ import annotations

import io
import os
import json
import shutil
import subprocess
import sys

import orjson
import pytest

from ctxfit_cli.core.notes import ABORTED_CALL
from fuzzing import sent_in_payload
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.fleet.discovery import default_folders
from ctxfit_cli.formats import read_transcripts
from conftest import REALWORLD, ROOT, needs_realworld
from fuzzing import check_payloads, invoke
from test_gemini import gemini_problems

FOLDER = REALWORLD / "gemini-cli"
LEGACY = FOLDER / "session-2025-10-29T10-36-453aa339.json"
JSONL = FOLDER / "jsonl_v040.jsonl"
SHARES = (1.0, 0.5, 0.2, 0.05)


def read(data: bytes, name: str = "session.jsonl"):
    [transcript] = read_transcripts(name, io.BytesIO(data))
    return transcript.materialize()


def lines(*records: dict) -> bytes:
    return b"\n".join(orjson.dumps(r) for r in records) + b"\n"


META = {"sessionId": "s1", "projectHash": "abc", "startTime": "2026-01-01T00:00:00.000Z", "kind": "main"}


def gemini(id: str, text: str = "", calls: tuple = (), tokens: int | None = None, **more) -> dict:
    record = {"id": id, "timestamp": "2026-01-01T00:00:01.000Z", "type": "gemini", "content": text,
              "model": "gemini-2.5-flash", **more}
    if calls:
        record["toolCalls"] = list(calls)
    if tokens is not None:
        record["tokens"] = {"input": tokens, "output": 10, "cached": 0, "thoughts": 5, "tool": 0, "total": tokens + 15}
    return record


def tool(id: str, name: str = "read_file", result: str | None = "ok") -> dict:
    call = {"id": id, "name": name, "args": {"path": id}, "status": "success"}
    if result is not None:
        call["result"] = [{"functionResponse": {"id": id, "name": name, "response": {"output": result}}}]
    return call


def user(id: str, text: str) -> dict:
    return {"id": id, "timestamp": "2026-01-01T00:00:00.000Z", "type": "user", "content": [{"text": text}]}


# --- the real recordings --------------------------------------------------------------------------


@needs_realworld
@pytest.mark.parametrize("path", [LEGACY, JSONL], ids=lambda p: p.name)
def test_a_real_recording_is_the_request_its_agent_sends_with_the_sizes_it_recorded(path):
    [transcript] = read_transcripts(str(path), open(path, "rb"))
    assert (transcript.format, transcript.dialect, transcript.repairs) == ("gemini-cli", "gemini", [])
    roles = [m.role.value for m in transcript.messages]
    assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:]))
    recorded = {p["id"]: p for p in _recorded(path)}
    assert [c.id for c in transcript.calls] == list(recorded)  # one call per reply with tokens
    for call in transcript.calls:
        assert transcript.messages[call.message].role.value == "assistant"
        assert call.prompt_tokens == recorded[call.id]["tokens"]["input"]
        assert call.model.startswith("gemini-")


def _recorded(path) -> list[dict]:
    data = path.read_bytes()
    if path.suffix == ".json":
        return [m for m in orjson.loads(data)["messages"] if m.get("tokens")]
    return [r for r in map(orjson.loads, data.splitlines()) if r.get("type") == "gemini" and r.get("tokens")]


@needs_realworld
@pytest.mark.parametrize("path", [LEGACY, JSONL], ids=lambda p: p.name)
def test_a_real_recording_fits_at_every_share_into_a_valid_gemini_request(path):
    whole = invoke(["fit", "--budget", str(10**9), "--json", str(path)])
    assert whole.exit_code == 0, whole.stderr
    full = orjson.loads(whole.stdout_bytes)["reports"][0]["tokens_before"]
    for share in SHARES:
        budget = max(1, int(full * share))
        done = invoke(["fit", "--budget", str(budget), "--json", str(path)])
        assert done.exit_code in (0, 4) and "Traceback" not in done.stderr, (share, done.stderr)
        if done.exit_code == 4:
            continue
        document = orjson.loads(done.stdout_bytes)
        for report, payload in zip(document["reports"], document["payloads"]):
            assert report["dialect"] == "gemini"
            assert validate_request(payload, "gemini") == [] and gemini_problems(payload) == [], share
            assert report["tokens_sent"] <= budget or report["overrun"], share
        raws = [orjson.dumps(p) for p in document["payloads"]]
        assert check_payloads(document["reports"], raws, str(budget)) == [], share


@needs_realworld
def test_fit_piped_into_estimate_reads_back_as_gemini(tmp_path):
    """`ctxfit fit LOG | ctxfit estimate -` through real processes: the payload is read as a
    Gemini request, at the size fit promised for the payload (what the agent adds left out)."""
    report = tmp_path / "report.json"
    ctxfit = f"{sys.executable} -m ctxfit_cli"
    shell = (f"set -o pipefail; {ctxfit} fit {LEGACY} --budget 5400 --report {report} 2>/dev/null"
             f" | tee {tmp_path / 'payload.json'} | {ctxfit} estimate - --json")
    done = subprocess.run(["bash", "-c", shell], capture_output=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    [estimate] = orjson.loads(done.stdout)["files"]
    facts = orjson.loads(report.read_bytes())
    facts = facts[-1] if isinstance(facts, list) else facts
    assert estimate["format"] == "request" and estimate["tokens"] == sent_in_payload(facts)
    [transcript] = read_transcripts("-", io.BytesIO((tmp_path / "payload.json").read_bytes()))
    assert transcript.dialect == "gemini"


@needs_realworld
def test_replay_makes_one_request_per_recorded_call():
    done = invoke(["replay", "--json", "--budget", "5450", str(LEGACY)])
    assert done.exit_code == 0, done.stderr
    [replayed] = orjson.loads(done.stdout_bytes)["files"]
    assert replayed["format"] == "gemini-cli" and replayed["policies"]["ctxfit"]["calls"] == 4


@needs_realworld
def test_a_recording_cut_anywhere_is_read_as_a_live_session(tmp_path):
    """Every prefix of the JSONL layout (what is on disk while Gemini CLI writes it; the JSON
    layout is rewritten whole, so no prefix of it is ever on disk), read by every command:
    never exit 3."""
    data = JSONL.read_bytes().splitlines(keepends=True)
    for cut in range(2, len(data) + 1):
        live = tmp_path / f"live{cut}.jsonl"
        live.write_bytes(b"".join(data[:cut]))
        for command in (["estimate"], ["fit", "--budget", "2000"], ["plan", "--budget", "2000"]):
            done = invoke([*command, str(live)])
            assert done.exit_code in (0, 4), (cut, command, done.stderr)


# --- both layouts, as Gemini CLI replays them -------------------------------------------------------


def test_records_of_one_message_replace_it_and_keep_its_place():
    data = lines(META, user("u1", "Read a."), gemini("g1", calls=(tool("c1", result=None),)),
                 gemini("g1", calls=(tool("c1", result="A"),), tokens=100), {"$set": {"lastUpdated": "x"}},
                 gemini("g2", "Done.", tokens=130))
    transcript = read(data)
    assert [m.role.value for m in transcript.messages] == ["user", "assistant", "user", "assistant"]
    assert transcript.messages[2].parts[0].text == "A" and transcript.repairs == []
    assert [(c.message, c.prompt_tokens, c.output_tokens) for c in transcript.calls] == [(1, 100, 15), (3, 130, 15)]


def test_a_rewind_drops_the_message_and_all_after_it_and_set_messages_replaces_them():
    rewound = read(lines(META, user("u1", "one"), gemini("g1", "A", tokens=10), user("u2", "two"),
                         gemini("g2", "B", tokens=20), {"$rewindTo": "u2"}, user("u3", "three")))
    assert [m.parts[0].text for m in rewound.messages] == ["one", "A", "three"]
    compressed = read(lines(META, user("u1", "one"), gemini("g1", "A"),
                            {"$set": {"messages": [user("s1", "summary"), gemini("s2", "ok")]}},
                            user("u2", "two")))
    assert [m.parts[0].text for m in compressed.messages] == ["summary", "ok", "two"]


def test_what_gemini_cli_never_sends_is_left_out():
    data = lines(META, user("u0", "/stats"), {"id": "i1", "type": "info", "content": "Logged in."},
                 user("u1", "hello"), {"id": "e1", "type": "error", "content": "quota"}, gemini("g1", "Hi!"))
    transcript = read(data)
    assert [m.parts[0].text for m in transcript.messages] == ["hello", "Hi!"]


def test_a_newer_recording_sends_its_content_parts_calls_and_thoughts_included():
    parts = [{"text": "plan", "thought": True, "thoughtSignature": "c2ln"},
             {"functionCall": {"id": "c1", "name": "ls", "args": {}}}]
    data = lines(META, user("u1", "list"), gemini("g1", calls=(tool("c1", "ls", "a b"),), content=parts))
    transcript = read(data)
    assert orjson.loads(transcript.messages[1].raw)["parts"] == parts
    assert transcript.messages[2].parts[0].call_id == "c1"


def test_a_recording_still_being_written_answers_the_running_call_and_says_so():
    data = lines(META, user("u1", "Run the tests."), gemini("g1", calls=(tool("c1", "run_shell_command", None),),
                                                           tokens=500))
    transcript = read(data)
    answer = orjson.loads(transcript.messages[-1].raw)
    assert answer["parts"][0]["functionResponse"] == {"id": "c1", "name": "run_shell_command",
                                                      "response": {"error": ABORTED_CALL}}
    assert "still being written?" in transcript.repairs[0]
    assert gemini_problems({"contents": [orjson.loads(m.raw) for m in transcript.messages]}) == []


def test_a_cancelled_call_then_a_new_prompt_are_sent_as_one_user_content():
    data = lines(META, user("u1", "go"), gemini("g1", calls=(tool("c1", result="[Operation Cancelled]"),)),
                 user("u2", "Do something else."), gemini("g2", "Sure."))
    transcript = read(data)
    assert [m.role.value for m in transcript.messages] == ["user", "assistant", "user", "assistant"]
    assert [p.kind.value for p in transcript.messages[2].parts] == ["tool_result", "text"]
    assert any("merged two user contents" in r for r in transcript.repairs)


# --- where the chats are ----------------------------------------------------------------------------


def test_the_default_folders_are_each_projects_chats_under_the_home_gemini_cli_uses(tmp_path):
    home, other = tmp_path / "home", tmp_path / "profile"
    for base in (home, other):
        for project in ("web", "api"):
            (base / ".gemini" / "tmp" / project / "chats").mkdir(parents=True)
    (home / ".gemini" / "tmp" / "web" / "logs.json").write_text("[]")
    assert default_folders({"HOME": str(home)}) == [str(home / ".gemini" / "tmp" / p / "chats") for p in ("api", "web")]
    moved = default_folders({"HOME": str(home), "GEMINI_CLI_HOME": str(other)})
    assert moved == [str(other / ".gemini" / "tmp" / p / "chats") for p in ("api", "web")]


@needs_realworld
def test_sessions_on_a_new_users_home_lists_every_gemini_chat(tmp_path):
    home = tmp_path / "home"
    for project, path in (("web", LEGACY), ("api", JSONL)):
        chats = home / ".gemini" / "tmp" / project / "chats"
        chats.mkdir(parents=True)
        shutil.copy(path, chats / (path.name if path.suffix == ".json" else "session-2026-04-29T21-39-gemini_s.jsonl"))
    (home / ".gemini" / "tmp" / "web" / "logs.json").write_text('[{"sessionId": "x", "type": "user"}]')
    live = home / ".gemini" / "tmp" / "api" / "chats" / "session-2026-05-01T10-00-live0001.jsonl"
    live.write_bytes(lines({**META, "sessionId": "live-1"}, user("u1", "Run it."),
                           gemini("g1", calls=(tool("c1", "run_shell_command", None),), tokens=900)))
    env = {**os.environ, "HOME": str(home), "COLUMNS": "200"}
    env.pop("GEMINI_CLI_HOME", None)
    done = subprocess.run([sys.executable, "-m", "ctxfit_cli", "sessions", "--json"], capture_output=True,
                          env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in orjson.loads(done.stdout)["sessions"]}
    assert set(rows) == {"453aa339-7d2b-4709-a41a-b0b73beaff85", "gemini_stage0_jsonl", "live-1"}
    legacy = rows["453aa339-7d2b-4709-a41a-b0b73beaff85"]
    assert (legacy["agent"], legacy["project"], legacy["models"]) == ("Gemini CLI", "web", ["gemini-2.5-pro"])
    assert legacy["peak"] == 5480 and legacy["peak_source"] == "recorded" and legacy["window"] == 1_048_576
    assert rows["live-1"]["project"] == "api"


@needs_realworld
def test_a_gemini_cli_session_costs_what_its_replies_record():
    """Each reply's `tokens`: cached input a cache read, thoughts billed as output (ccusage 20.0.24
    gives this session $0.0074701: tests/test_fake_home.py compares them where npm is)."""
    from ctxfit_cli.cli.app import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["sessions", "--json", str(REALWORLD / "gemini-cli" / "jsonl_v040.jsonl")])
    [row] = json.loads(result.stdout)["sessions"]
    cost = row["cost"]
    assert (cost["input"], cost["cache_read"], cost["output"]) == (12_422, 11_502, 228)
    assert cost["usd"] == pytest.approx(0.0074701, rel=0.01)
