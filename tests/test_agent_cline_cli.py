"""Cline CLI 3 (npm `cline`): its sessions (`~/.cline/data/sessions/<id>/<id>.messages.json`) read as
the request Cline sends, each reply's recorded usage, the session's row; and the real Cline CLI,
as `.ci/run` pins it, run against the scripted provider: what ctxfit rebuilds from the log it
writes is what the provider received."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from agents_installed import agent_binary
from conftest import ROOT
from fuzzing import invoke
from scripted_provider import FINAL_ANSWER
from servers import Server, recorded

from ctxfit_cli.agents import cline_cli
from ctxfit_cli.agents.spend import Spend
from ctxfit_cli.fleet.discovery import default_folders
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.skipped import Skipped

FIXTURE = ROOT / "tests" / "agent_schemas" / "cline_cli" / "1796678303488_uzqs7.messages.json"


def _read(data: bytes, skipped: Skipped | None = None):
    [transcript] = read_transcripts("s.messages.json", io.BytesIO(data), skipped=skipped)
    return transcript.materialize()


def test_a_session_is_read_as_cline_sends_it():
    skipped = Skipped()
    transcript = _read(FIXTURE.read_bytes(), skipped)
    assert transcript.format == "cline-cli" and transcript.dialect == "openai"  # gpt-5.4
    assert [orjson.loads(m.raw) for m in transcript.system] == [
        {"role": "system", "content": "You are Cline, an AI coding agent."}]
    sent = [None] + [orjson.loads(m.raw) for m in transcript.messages]  # (numbered as sent, after the system's)
    assert sent[1] == {"role": "user", "content": "Read notes.txt and say what it holds"}  # without its mode tag
    assert sent[2]["tool_calls"][0]["function"] == {"name": "read_files",
                                                     "arguments": '{"files":[{"path":"/work/notes.txt"}]}'}
    result = [{"query": "/work/notes.txt", "result": "1 | milk, eggs, bread\n2 | call the plumber"}]
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(result, separators=(",", ":"))}
    assert [(c.id, c.prompt_tokens, c.output_tokens, c.model) for c in transcript.calls] == [
        ("msg_8uA0pugu", 4487, 20, "gpt-5.4"), ("msg_X_FPGcID", 4530, 31, "gpt-5.4")]
    assert skipped.as_dict()["records"] == {"block mystery_block": 1}


def test_a_long_result_is_sent_cut_in_the_middle_as_cline_cuts_it():
    """Cline's message builder sends each text of a result in at most 8,000 characters (JavaScript's
    length): its head and tail around a note of what was left out (seen at the provider: 14,979
    characters read as 3,984 + the note + 3,984)."""
    from ctxfit_cli.agents.cline_cli import _middle

    assert _middle("a" * 8000) == "a" * 8000
    cut = _middle("h" * 5000 + "m" * 4000 + "t" * 5000)
    assert cut == "h" * 3984 + "\n\n...[truncated 6032 chars]...\n\n" + "t" * 3984 and len(cut) == 8000
    emoji = _middle("\U0001F600" * 5000)  # two UTF-16 units each, as JavaScript counts them
    assert emoji.encode("utf-16-le", "surrogatepass").count(b"\x3d\xd8") == 2 * 3984 // 2


def test_its_row_has_its_id_folder_and_recorded_spend():
    [session] = cline_cli.describe(str(FIXTURE), [_record(FIXTURE)])
    assert (session.id, session.project, session.models) == ("1796678303488_uzqs7", "/work", ["gpt-5.4"])
    expected = Spend()  # an OpenAI-compatible provider's input counts its cache reads
    expected.call("gpt-5.4", 4487 - 3365, 0, 3365, 20)
    expected.call("gpt-5.4", 4530 - 3360, 0, 3360, 31)
    assert session.spend == expected.totals()
    assert session.started == "2026-12-07T21:18:23.577Z" and session.last == "2026-12-07T21:18:24.091Z"


def test_a_provider_whose_input_was_not_checked_records_no_prompt_size():
    value = orjson.loads(FIXTURE.read_bytes())
    for message in value["messages"]:
        if message["role"] == "assistant":
            message["modelInfo"] = {"id": "claude-sonnet-4.5", "provider": "anthropic"}
    transcript = _read(orjson.dumps(value))
    assert transcript.dialect == "anthropic" and [orjson.loads(m.raw) for m in transcript.system] == [
        {"role": "system", "content": "You are Cline, an AI coding agent."}]
    assert [(c.prompt_tokens, c.output_tokens, c.model) for c in transcript.calls] == [
        (None, 20, "claude-sonnet-4-5"), (None, 31, "claude-sonnet-4-5")]


def test_its_folder_is_a_default_one_and_a_walk_reads_the_messages_only(tmp_path):
    home = tmp_path / "home"
    session = home / ".cline" / "data" / "sessions" / "1796678303488_uzqs7"
    session.mkdir(parents=True)
    for path in FIXTURE.parent.iterdir():
        (session / path.name).write_bytes(path.read_bytes())
    assert str(home / ".cline" / "data" / "sessions") in default_folders({"HOME": str(home)})
    result = invoke(["sessions", str(home / ".cline"), "--json"])
    assert result.exit_code == 0, result.stderr
    [row] = json.loads(result.stdout)["sessions"]
    assert (row["agent"], row["id"], row["calls"], row["peak"]) == ("Cline CLI", "1796678303488_uzqs7", 2, 4530)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_hub(port: int) -> None:
    """Stop the hub daemon a Cline run left listening on `port` (it outlives the run)."""
    for folder in Path("/proc").glob("[0-9]*"):
        try:
            argv = (folder / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--cline-hub-daemon" in argv and str(port).encode() in argv:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(folder.name), signal.SIGTERM)


def _record(path: Path):
    from ctxfit_cli.formats.reading import Record

    return Record(1, orjson.loads(path.read_bytes()), b"")


# --- the real Cline CLI ------------------------------------------------------------------------------


def test_the_real_cline_cli_log_rebuilds_what_the_provider_received(tmp_path):
    """Cline CLI 3.0.65 with an OpenAI-compatible provider (`cline auth -p openai -b URL`), reading
    two files for the scripted provider."""
    binary = agent_binary("cline")
    work, home, record = tmp_path / "work", tmp_path / "home", tmp_path / "provider.jsonl"
    work.mkdir()
    files = []
    for number in (1, 2):
        files.append(work / f"f{number}.txt")
        files[-1].write_text("".join(f"line {n}: amber river stone {n * number}\n" for n in range(400)))
    # Its own hub (a daemon each run starts, and later runs on the same port use) on a port of this
    # test's; no telemetry. (Proxy variables cannot fence it in as the other agents' tests do: its
    # runtime sends loopback HTTP through HTTPS_PROXY too, whatever NO_PROXY says.)
    hub = free_port()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "CLINE_HUB_PORT": str(hub), "DO_NOT_TRACK": "1",
           "DISABLE_TELEMETRY": "1"}
    try:
        with Server([sys.executable, str(ROOT / "tests" / "scripted_provider.py"), "--record", str(record),
                     "--files", *map(str, files)]) as provider:
            auth = [str(binary), "auth", "-p", "openai", "-k", "sk-test", "-m", "gpt-5.4", "-b", f"{provider.url}/v1"]
            subprocess.run(auth, cwd=work, env=env, capture_output=True, timeout=120, check=True)
            done = subprocess.run([str(binary), "Read f1.txt and f2.txt in this folder, then say their names"],
                                  cwd=work, env=env, capture_output=True, text=True, timeout=180)
    finally:
        stop_hub(hub)
    assert done.returncode == 0 and FINAL_ANSWER in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    [log] = (home / ".cline" / "data" / "sessions").glob("*/*.messages.json")
    transcript = _read(log.read_bytes())
    main = [r for r in recorded(record) if r.get("main")]
    assert len(main) == 3 and [c.prompt_tokens for c in transcript.calls] == [r["true_tokens"] for r in main]
    last = main[-1]["body"]["messages"]  # all but the final reply
    assert [orjson.loads(m.raw) for m in (*transcript.system, *transcript.messages)][:-1] == last
    result = invoke(["sessions", str(log), "--json"])
    assert result.exit_code == 0 and not result.stderr, result.stderr
    [row] = json.loads(result.stdout)["sessions"]
    assert (row["agent"], row["project"], row["calls"]) == ("Cline CLI", str(work), 3)
