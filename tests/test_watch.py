"""`ctxfit watch`: logs followed as they are written (never read twice), the size of each
session's next request as `estimate` gives it, one snapshot for scripts and status lines, the
proxy's stats, and the live view in a real terminal (tmux) while a test process appends to a log."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
import uuid

import httpx
import orjson
import pytest
from conftest import REALWORLD, ROOT, needs_realworld, run_cli
from servers import fake_provider, proxy

from ctxfit_cli.core.usage import next_request
from ctxfit_cli.counters.models import counter_for_models
from ctxfit_cli.fleet.follow import Follower
from ctxfit_cli.fleet.live import LiveSession
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.reading import open_input

CLAUDE = REALWORLD / "claude-code" / "spotter_4d5611e5.jsonl"
CODEX = REALWORLD / "codex" / "localpush_rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"


def wait_for(condition, seconds: float = 20.0, what: str = "the condition"):
    """Poll `condition` until it returns something true; fail after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def assistant(prompt: int, text: str = "done", reply_id: str | None = None) -> bytes:
    """A Claude Code assistant record whose call reported a prompt of `prompt` tokens."""
    record = {"type": "assistant", "sessionId": "0d5a1e57-0000-4000-8000-000000000001", "cwd": "/work/live-demo",
              "uuid": str(uuid.uuid4()), "timestamp": "2026-12-02T10:00:00.000Z",
              "message": {"id": reply_id or f"msg_{uuid.uuid4().hex[:12]}", "role": "assistant",
                          "model": "claude-opus-4-6", "content": [{"type": "text", "text": text}],
                          "usage": {"input_tokens": 3, "cache_read_input_tokens": prompt - 3, "output_tokens": 9}}}
    return orjson.dumps(record) + b"\n"


def user(text: str) -> bytes:
    record = {"type": "user", "sessionId": "0d5a1e57-0000-4000-8000-000000000001", "cwd": "/work/live-demo",
              "uuid": str(uuid.uuid4()), "timestamp": "2026-12-02T10:00:01.000Z",
              "message": {"role": "user", "content": text}}
    return orjson.dumps(record) + b"\n"


# --- the follower -------------------------------------------------------------------------------


def test_half_a_line_is_kept_until_the_rest_arrives(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"a": 1}\n{"b": ')
    follower = Follower(str(log))
    assert follower.read().lines == [b'{"a": 1}'] and follower.partial == b'{"b": '
    assert follower.read().lines == []  # nothing new: nothing read again
    with log.open("ab") as stream:
        stream.write(b'2}\n{"c": 3}\n')
    assert follower.read().lines == [b'{"b": 2}', b'{"c": 3}']
    assert follower.line == 3 and follower.partial == b"" and follower.offset == log.stat().st_size


def test_a_log_written_one_byte_at_a_time_gives_the_same_lines(tmp_path):
    data = CLAUDE.read_bytes()[:40_000] if CLAUDE.exists() else b'{"x": "\xc3\xa9"}\n' * 500
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"")
    follower, lines = Follower(str(log)), []
    cuts = sorted(random.Random(7).sample(range(1, len(data)), 300))
    for start, end in zip([0, *cuts], [*cuts, len(data)]):
        with log.open("ab") as stream:
            stream.write(data[start:end])
        lines += follower.read().lines
    assert lines == [line for line in data.split(b"\n")[:-1] if line.strip()]
    assert follower.partial == data.rsplit(b"\n", 1)[1]


def test_a_log_replaced_or_shrunk_is_read_again_from_the_start(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    follower = Follower(str(log))
    assert len(follower.read().lines) == 2
    log.write_bytes(b'{"c": 3}\n')  # shorter than what was read
    read = follower.read()
    assert read.restarted and read.lines == [b'{"c": 3}']
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(b'{"d": 4}\n{"e": 5}\n{"f": 6}\n')
    os.replace(replacement, log)  # another file under the same name
    read = follower.read()
    assert read.restarted and len(read.lines) == 3


# --- sizes --------------------------------------------------------------------------------------


def _estimated_next(path) -> int:
    """What `estimate` says the log's next request holds (read whole, anchored on usage)."""
    with open_input(str(path)) as stream:
        last = [t.materialize() for t in read_transcripts(str(path), stream)][-1]
    return next_request(last, counter_for_models([c.model for c in last.calls if c.model])[0]).tokens


@needs_realworld
@pytest.mark.parametrize("path", [CLAUDE, CODEX, REALWORLD / "codex" /
                                  "rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl",
                                  REALWORLD / "claude-code" / "full-session-four.jsonl"], ids=lambda p: p.name[:20])
def test_the_followed_size_is_what_estimate_says_the_next_request_holds(path):
    session = LiveSession(str(path))
    while session.update():
        pass
    row = session.row()
    expected = _estimated_next(path)
    assert abs(row["tokens"] - expected) <= 0.005 * expected, (row["tokens"], expected)
    assert row["confirmed"] > 0.9 * row["tokens"]  # anchored on the latest reported call


@needs_realworld
def test_following_a_log_in_pieces_gives_the_size_of_reading_it_at_once(tmp_path):
    data = CODEX.read_bytes()
    log = tmp_path / "rollout.jsonl"
    log.write_bytes(b"")
    growing = LiveSession(str(log))
    rows = []
    for cut in [*sorted(random.Random(3).sample(range(1, len(data)), 40)), len(data)]:
        with log.open("ab") as stream:
            stream.write(data[log.stat().st_size:cut])
        growing.update()
        rows.append(growing.row())
    whole = LiveSession(str(CODEX))
    whole.update()
    final = {k: v for k, v in rows[-1].items() if k not in ("path", "last_activity")}
    assert final == {k: v for k, v in whole.row().items() if k not in ("path", "last_activity")}
    sizes = [r["calls"] for r in rows if r]
    assert sizes == sorted(sizes)  # calls only ever added as the log grew


def test_the_size_follows_each_appended_call(tmp_path):
    log = tmp_path / "session.jsonl"
    log.write_bytes(user("Start") + assistant(30_000))
    session = LiveSession(str(log))
    session.update()
    assert session.row()["confirmed"] == 30_000 and session.row()["growth_per_call"] is None
    with log.open("ab") as stream:
        stream.write(user("x " * 2000) + assistant(34_000) + user("y " * 2000) + assistant(38_000)[:50])
    session.update()
    row = session.row()
    assert row["confirmed"] == 34_000 and row["tokens"] > 34_000 and row["being_written"]
    assert row["growth_per_call"] == 4_000 and row["window"] == 200_000
    assert row["compacts_at"] == 167_000 and row["calls_to_compaction"] == (167_000 - row["tokens"]) // 4_000
    with log.open("ab") as stream:
        stream.write(assistant(38_000)[50:])  # the rest of that line: a different reply id, fine
    session.update()
    assert session.row()["confirmed"] == 38_000 and not session.row()["being_written"]


def test_a_compaction_starts_the_count_anew(tmp_path):
    boundary = orjson.dumps({"type": "system", "subtype": "compact_boundary", "sessionId": "s",
                             "uuid": "u", "timestamp": "2026-12-02T10:00:02.000Z"}) + b"\n"
    log = tmp_path / "session.jsonl"
    log.write_bytes(user("a") + assistant(20_000) + user("output " * 100_000) + assistant(150_000)
                    + boundary + user("The summary. " * 100))
    session = LiveSession(str(log))
    session.update()
    row = session.row()
    assert row["compactions"] == 1 and row["confirmed"] == 0
    # The unlogged fixed part the first call showed (about 20k) and the summary, not the old 150k.
    assert 20_000 < row["tokens"] < 21_000


# --- one snapshot ---------------------------------------------------------------------------------


def test_once_json_lists_each_session(tmp_path):
    log = tmp_path / "session.jsonl"
    log.write_bytes(user("Hi") + assistant(52_000) + user("more " * 400))
    done = run_cli("watch", str(log), "--once", "--json", "--proxy", "http://127.0.0.1:9")
    assert done.returncode == 0, done.stderr
    document = orjson.loads(done.stdout)
    [row] = document["sessions"]
    assert row["path"] == str(log) and row["agent"] == "Claude Code" and row["project"] == "/work/live-demo"
    assert row["confirmed"] == 52_000 and row["tokens"] == 52_000 + row["estimated"] > 52_000
    assert document["proxy"] is None  # nothing answers on port 9


def test_statusline_reads_claude_codes_json_on_stdin(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    log = tmp_path / "session.jsonl"
    log.write_bytes(user("Hi") + assistant(100_000) + user("next") + assistant(104_000))
    status = {"session_id": "0d5a1e57", "transcript_path": str(log), "model": {"id": "claude-opus-4-6[1m]"},
              "context_window": {"context_window_size": 1_000_000}}
    done = run_cli("watch", "--once", "--statusline", "--proxy", "http://127.0.0.1:9",
                   input=orjson.dumps(status))
    assert done.returncode == 0, done.stderr
    line = done.stdout.decode()
    assert line.count("\n") == 1 and len(line) < 100
    # The window Claude Code said it uses (1M), not the table's 200k for the model.
    assert line.startswith("ctx 104k/1M (10%) · +4k/call · compacts in ~")


def test_a_path_that_does_not_exist_is_bad_input(tmp_path):
    done = run_cli("watch", str(tmp_path / "nowhere.jsonl"), "--once", "--json")
    assert done.returncode == 3 and done.stdout == b""
    assert "nowhere.jsonl: no such file or folder" in done.stderr.decode()


def test_each_status_line_reads_only_what_was_written_since_the_last(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    log = tmp_path / "session.jsonl"
    log.write_bytes(user("Hi") + assistant(40_000))
    status = orjson.dumps({"transcript_path": str(log)})
    first = run_cli("watch", "--once", "--statusline", "--proxy", "http://127.0.0.1:9", input=status)
    assert first.stdout.decode().startswith("ctx 40k/200k (20%)"), first.stderr
    assert len(list((tmp_path / "cache" / "ctxfit" / "watch").glob("*.state"))) == 1
    # What was read is not read again: spoil it (same size, same file), then the agent writes on.
    with log.open("r+b") as stream:
        stream.write(b"x" * len(user("Hi")))
    with log.open("ab") as stream:
        stream.write(user("next") + assistant(44_000))
    second = run_cli("watch", "--once", "--statusline", "--proxy", "http://127.0.0.1:9", input=status)
    assert second.stdout.decode().startswith("ctx 44k/200k (22%) · +4k/call"), second.stderr
    # A log replaced by a shorter one is read again from its start.
    log.write_bytes(user("Hi") + assistant(12_000))
    third = run_cli("watch", "--once", "--statusline", "--proxy", "http://127.0.0.1:9", input=status)
    assert third.stdout.decode().startswith("ctx 12k/200k (6%)"), third.stderr


def test_json_and_statusline_together_is_a_usage_error():
    done = run_cli("watch", "--once", "--json", "--statusline")
    assert done.returncode == 2 and "choose one" in done.stderr.decode()


def test_the_proxys_stats_are_summed(tmp_path):
    """A real `ctxfit proxy` in front of the fake provider clears old results; watch shows it."""
    with fake_provider(None) as provider, proxy(provider.url, "--budget", "3000") as server:
        history = [{"role": "user", "content": "Read the files."}]
        for step in range(8):
            history.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": f"toolu_{step}", "name": "read_file", "input": {"path": f"f{step}"}}]})
            history.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{step}", "content": f"line {step} " * 600}]})
            reply = httpx.post(f"{server.url}/v1/messages", timeout=30, headers={"x-api-key": "k"},
                               json={"model": "claude-test", "max_tokens": 64, "messages": history})
            assert reply.status_code == 200, reply.text
        stats = httpx.get(f"{server.url}/ctxfit/stats").json()
        done = run_cli("watch", str(tmp_path), "--once", "--json", "--proxy", server.url)
    assert done.returncode == 0, done.stderr
    shown = orjson.loads(done.stdout)["proxy"]
    [conversation] = stats["conversations"].values()
    assert shown["requests"] == stats["totals"]["requests"] >= 8 and shown["fitted"] > 0
    assert shown["results_cleared"] == conversation["results_cleared"] > 0
    assert shown["tokens_cleared"] == conversation["tokens_before"] - conversation["tokens_after"] > 0


# --- the live view, in a real terminal ------------------------------------------------------------


def _tmux() -> str:
    executable = shutil.which("tmux")
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("tmux is not installed: .ci/run installs it with apt-get")
        pytest.skip("tmux is not installed (apt-get install tmux)")
    return executable


class Terminal:
    """A tmux server of its own (its own socket), 80 columns wide, running one command."""

    def __init__(self, command: list[str], width: int = 80, height: int = 24) -> None:
        self.tmux = [_tmux(), "-L", f"ctxfit-test-{uuid.uuid4().hex[:8]}", "-f", "/dev/null"]
        env = {"TERM": "xterm-256color", "LANG": "C.UTF-8"}
        wrapped = " ".join(f"'{part}'" for part in command)
        subprocess.run([*self.tmux, "new-session", "-d", "-s", "watch", "-x", str(width), "-y", str(height),
                        *[f"-e{k}={v}" for k, v in env.items()], wrapped], check=True, cwd=ROOT)

    def screen(self) -> str:
        done = subprocess.run([*self.tmux, "capture-pane", "-p", "-t", "watch"], capture_output=True)
        return done.stdout.decode("utf-8", "replace")

    def showing(self, text: str) -> str | None:
        """The screen, if it shows `text`."""
        screen = self.screen()
        return screen if text in screen else None

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", "watch", *keys], check=True)

    def running(self) -> bool:
        return subprocess.run([*self.tmux, "has-session", "-t", "watch"], capture_output=True).returncode == 0

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


def test_the_live_view_shows_each_append_and_quits_on_q(tmp_path):
    log = tmp_path / "session.jsonl"
    log.write_bytes(user("Hi") + assistant(61_234))
    terminal = Terminal([sys.executable, "-m", "ctxfit_cli", "watch", str(log), "--interval", "0.1",
                         "--proxy", "http://127.0.0.1:9"])
    try:
        first = wait_for(lambda: terminal.showing("61.2k"), what="the first size")
        assert "0d5a1e57" in first and "live-de" in first and "31% of 200k" in first and "q quits" in first
        assert max(len(line) for line in first.splitlines()) <= 80
        for header in ("session", "model", "now", "of window", "+/call", "compacts in", "full in"):
            assert header in first  # every column at 80 columns
        with log.open("ab") as stream:  # the agent writes: a result, then its next call
            stream.write(user("output " * 300) + assistant(123_456))
        after = wait_for(lambda: terminal.showing("123.5k"), what="the appended call")
        assert "62% of 200k" in after and "+62.2k" in after
        terminal.keys("q")
        wait_for(lambda: not terminal.running(), what="watch to quit on q")
    finally:
        terminal.close()


def test_ctrl_c_quits_the_live_view_too(tmp_path):
    log = tmp_path / "session.jsonl"
    log.write_bytes(user("Hi") + assistant(10_000))
    terminal = Terminal([sys.executable, "-m", "ctxfit_cli", "watch", str(log), "--interval", "0.1",
                         "--proxy", "http://127.0.0.1:9"])
    try:
        wait_for(lambda: terminal.showing("10k"), what="the view")
        terminal.keys("C-c")
        wait_for(lambda: not terminal.running(), what="watch to quit on Ctrl-C")
    finally:
        terminal.close()
