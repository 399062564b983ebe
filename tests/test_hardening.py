"""Every reproduction of issue #10, run through the real CLI in a subprocess: nothing lost, no
traceback, one line and a documented exit code, bounded reading."""

from __future__ import annotations

import base64
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from conftest import ROOT, SAMPLES, Chat, run_cli
from pdf_files import classic_pdf, object_stream_pdf

OPENAI = SAMPLES / "openai_agent.openai.jsonl"
ENV = {**os.environ, "COLUMNS": "120", "PYTHONIOENCODING": "utf-8"}
CTXFIT = [sys.executable, "-m", "ctxfit_cli"]


def one_error_line(result, code: int) -> str:
    """The run failed with `code`, one line on stderr, nothing on stdout, no traceback."""
    stderr = result.stderr.decode()
    assert result.returncode == code, stderr
    assert result.stdout == b""
    assert stderr.startswith("ctxfit: error: ") and stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr
    return stderr


def snapshot(path: Path) -> tuple[bytes, int, int]:
    status = path.stat()
    return path.read_bytes(), status.st_mtime_ns, stat.S_IMODE(status.st_mode)


@pytest.fixture
def transcript(tmp_path) -> Path:
    path = tmp_path / "t.jsonl"
    shutil.copy(OPENAI, path)
    return path


# --- data loss ---------------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["-o", "--report"])
def test_output_onto_the_input_is_refused(transcript, option):
    before = snapshot(transcript)
    result = run_cli("fit", str(transcript), "--budget", "20000", option, str(transcript))
    assert "would destroy it" in one_error_line(result, 2)
    assert snapshot(transcript) == before


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_output_onto_the_input_through_a_link_is_refused(tmp_path, transcript, link):
    other = tmp_path / "other.jsonl"
    (os.symlink if link == "symlink" else os.link)(transcript, other)
    before = snapshot(transcript)
    one_error_line(run_cli("fit", str(transcript), "-o", str(other)), 2)
    one_error_line(run_cli("fit", str(other), "--report", str(transcript)), 2)
    assert snapshot(transcript) == before


def test_output_and_report_on_one_file_is_refused(tmp_path, transcript):
    out = tmp_path / "out.json"
    out.write_bytes(b"old")
    one_error_line(run_cli("fit", str(transcript), "-o", str(out), "--report", str(out)), 2)
    assert out.read_bytes() == b"old"


def test_special_files_are_written_through(tmp_path, transcript):
    assert run_cli("fit", str(transcript), "-o", os.devnull).returncode == 0
    assert Path(os.devnull).is_char_device()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    result = run_cli("fit", str(transcript), "--budget", "20000", "-o", str(fifo))
    reader.join(30)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    payload = orjson.loads(received[0])
    assert payload["messages"]
    through_stdout = run_cli("fit", str(transcript), "--budget", "20000", "-o", "/dev/stdout")
    assert through_stdout.returncode == 0 and orjson.loads(through_stdout.stdout) == payload


def test_a_symlink_is_followed_to_its_target(tmp_path, transcript):
    target = tmp_path / "target.json"
    target.write_bytes(b"old")
    target.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert run_cli("fit", str(transcript), "-o", str(link)).returncode == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert orjson.loads(target.read_bytes())["messages"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_directory_is_refused_with_a_message(tmp_path, transcript):
    for option in ("-o", "--report"):
        assert "is a directory" in one_error_line(run_cli("fit", str(transcript), option, str(tmp_path)), 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]


def test_modes_existing_kept_new_from_the_umask(tmp_path, transcript):
    existing = tmp_path / "existing.json"
    existing.write_bytes(b"old")
    existing.chmod(0o604)
    new = tmp_path / "new.json"
    result = subprocess.run([*CTXFIT, "fit", str(transcript), "-o", str(existing), "--report", str(new)],
                            capture_output=True, env=ENV, cwd=ROOT, preexec_fn=lambda: os.umask(0o027))
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(existing.stat().st_mode) == 0o604
    assert stat.S_IMODE(new.stat().st_mode) == 0o640


def test_report_is_not_written_when_the_payload_was_not(tmp_path, transcript):
    report = tmp_path / "report.json"
    result = run_cli("fit", str(transcript), "-o", "/dev/full", "--report", str(report))
    assert "No space left" in one_error_line(result, 6)
    assert not report.exists()


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KB tmpfs: a real ENOSPC from the kernel (needs root; skipped where mount is refused)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_disk_full_during_output_leaves_the_old_file_and_no_temp(full_disk):
    big = SAMPLES / "subagent_reader.anthropic.jsonl"  # its payload is ~1 MB, the disk 64 KB
    old = full_disk / "out.json"
    old.write_bytes(b"previous payload")
    result = run_cli("fit", str(big), "-o", str(old), "--report", str(full_disk / "report.json"))
    assert "No space left on device" in one_error_line(result, 6)
    assert sorted(p.name for p in full_disk.iterdir()) == ["out.json"]
    assert old.read_bytes() == b"previous payload"


# --- tracebacks become one line and an exit code -------------------------------------------------

MALFORMED = {
    "role-list": (b'{"role":[],"content":"x"}\n', '"role" must be a string, got a list'),
    "role-object": (b'{"role":{},"content":"x"}\n', '"role" must be a string, got an object'),
    "nested-2000": (b'{"role":"user","content":"x","a":' + b"[" * 2000 + b"]" * 2000 + b"}\n",
                    "nested more than 1,024 levels deep"),
    "utf-16": ('{"role":"user","content":"hi"}\n'.encode("utf-16"), "the file is UTF-16 text"),
    "utf-32": ('{"role":"user","content":"hi"}\n'.encode("utf-32-be"), "the file is UTF-32 text"),
    "lone-cr": (b'{"role":"user","content":"hi"}\r{"role":"assistant","content":"x"}\r', "lone CR"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.parametrize("command", ["estimate", "fit", "replay"])
def test_malformed_input_is_one_line_exit_3(tmp_path, case, command):
    data, expected = MALFORMED[case]
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    assert expected in one_error_line(run_cli(command, str(path)), 3)
    assert path.read_bytes() == data


def _claude_code_with(tool_use_id) -> bytes:
    lines = (SAMPLES / "claude_code_session.jsonl").read_bytes().splitlines()
    for i, line in enumerate(lines):
        record = orjson.loads(line)
        content = record.get("message", {}).get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and "tool_use_id" in b for b in content):
            for block in content:
                if isinstance(block, dict) and "tool_use_id" in block:
                    block["tool_use_id"] = tool_use_id
            lines[i] = orjson.dumps(record)
            return b"\n".join(lines) + b"\n"
    raise AssertionError("the sample has no tool result")


def _codex_with_content(content) -> bytes:
    lines = (SAMPLES / "codex_rollout.jsonl").read_bytes().splitlines()
    for i, line in enumerate(lines):
        record = orjson.loads(line)
        if record.get("payload", {}).get("type") == "message":
            record["payload"]["content"] = content
            lines[i] = orjson.dumps(record)
            return b"\n".join(lines) + b"\n"
    raise AssertionError("the sample has no message")


@pytest.mark.parametrize("data", [_claude_code_with(["toolu_1"]), _codex_with_content(5)],
                         ids=["claude-code-tool_use_id-list", "codex-content-number"])
@pytest.mark.parametrize("command", ["estimate", "fit", "replay"])
def test_log_records_of_the_wrong_type_are_one_line_exit_3(tmp_path, data, command):
    path = tmp_path / "log.jsonl"
    path.write_bytes(data)
    one_error_line(run_cli(command, str(path)), 3)


def test_json_nested_255_to_1024_levels_is_read_and_written_back(tmp_path):
    deep = b"[" * 600 + b"]" * 600
    lines = [b'{"role":"user","content":"go"}',
             b'{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{"q":' + deep + b"}}]}",
             orjson.dumps({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r" * 4000}]})]
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    fitted = run_cli("fit", str(path), "--budget", "500")
    assert fitted.returncode == 0, fitted.stderr
    assert b"Traceback" not in fitted.stderr
    read_back = run_cli("estimate", "--json", "-", input=fitted.stdout)
    assert read_back.returncode == 0, read_back.stderr


@pytest.mark.parametrize("args", [["note"], ["estimate", str(OPENAI)], ["estimate", "--json", str(OPENAI)],
                                  ["fit", str(OPENAI)], ["plan", str(OPENAI)]])
def test_stdout_that_cannot_be_written_is_exit_6(args):
    with open("/dev/full", "wb") as full:
        result = subprocess.run([*CTXFIT, *args], stdout=full, stderr=subprocess.PIPE, env=ENV, cwd=ROOT)
    stderr = result.stderr.decode()
    assert result.returncode == 6, stderr
    assert stderr.count("\n") == 1 and "No space left on device" in stderr and "Traceback" not in stderr


def test_closed_stdin_is_a_usage_error():
    for args in (["estimate", "-"], ["fit", "-"], ["calibrate", "-t", "cl100k", "-"]):
        result = subprocess.run([*CTXFIT, *args], stdin=subprocess.DEVNULL, capture_output=True, env=ENV, cwd=ROOT,
                                preexec_fn=lambda: os.close(0))
        assert "closed" in one_error_line(result, 2), args


@pytest.mark.parametrize("args", [
    ["fit", "--protect-share", "nan"], ["fit", "--lowwater", "nan"], ["plan", "--protect-share", "inf"],
    ["replay", "--price-read", "nan"],
    ["estimate", "--json", "--budget", str(2**64)], ["fit", "--json", "--window", str(2**64)],
    ["replay", "--json", "--budget", str(2**64), "--window", str(2**65)],
])
def test_absurd_options_are_usage_errors(args):
    result = run_cli(*args, str(OPENAI))
    assert result.returncode == 2 and result.stdout == b"" and b"Traceback" not in result.stderr


def _profile(**changes) -> dict:
    data = orjson.loads((ROOT / "ctxfit_cli" / "counters" / "profiles" / "seed.json").read_bytes())
    return {**data, **changes}


@pytest.mark.parametrize(("content", "expected"), [
    (b'{"a":' * 3000 + b"1" + b"}" * 3000, "nested far too deeply"),
    (orjson.dumps(_profile(version=True)), "'version' must be an integer"),
    (orjson.dumps(_profile(rates=dict.fromkeys(_profile()["rates"], 1e308))), "from 0.01 to 1000"),
    (orjson.dumps(_profile(runs={"words": 1e308})), "weight of run"),
])
def test_bad_profile_files_are_one_line_exit_3(tmp_path, content, expected):
    path = tmp_path / "profile.json"
    path.write_bytes(content)
    assert expected in one_error_line(run_cli("estimate", str(OPENAI), "--profile", str(path)), 3)


@pytest.mark.parametrize("text", [b"", b"short\n\nparagraphs\n"])
def test_calibrate_without_a_long_paragraph_is_one_line_exit_3(tmp_path, text):
    path = tmp_path / "sample.txt"
    path.write_bytes(text)
    assert "200 or more characters" in one_error_line(run_cli("calibrate", "-t", "cl100k", str(path)), 3)


@pytest.mark.parametrize("args", [["-t", "o200k"], ["-t", "qwen"], ["-t", "tekken"], ["--compare"]])
def test_tokenizers_count_a_million_spaces(tmp_path, args):
    pytest.importorskip("tiktoken")
    path = tmp_path / "spaces.jsonl"
    path.write_bytes(orjson.dumps({"role": "user", "content": "a" + " " * 1_000_000 + "b"}) + b"\n")
    result = run_cli("estimate", "--json", *args, str(path))
    assert result.returncode == 0, result.stderr
    assert orjson.loads(result.stdout)["total"]["tokens"] > 0


# --- wrong output and hangs ----------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc").is_dir() or (os.cpu_count() or 1) < 2, reason="needs /proc and 2 cores")
def test_workers_die_with_their_parent(tmp_path):
    chat = Chat("openai").user("go")
    for _ in range(20_000):
        chat.round("word " * 100)
    path = tmp_path / "big.jsonl"
    path.write_bytes(chat.jsonl())
    # The real CLI, with the parallel threshold lowered so that a 14 MB file is read by workers.
    code = "import ctxfit_cli.formats.parallel as p; p.MIN_BYTES = 1; from ctxfit_cli.cli import main; main()"
    process = subprocess.Popen([sys.executable, "-c", code, "fit", str(path), "--budget", "100000"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=ENV)
    workers = []
    deadline = time.monotonic() + 30
    while not workers and time.monotonic() < deadline and process.poll() is None:
        workers = _children(process.pid)
        time.sleep(0.01)
    if not workers:
        process.kill()
        pytest.skip("the fit ended before its workers could be seen")
    time.sleep(0.2)
    process.kill()  # only the main process, as subprocess.run(timeout=...) does
    process.wait()
    deadline = time.monotonic() + 10
    while any(_running(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [w for w in workers if _running(w)]
    for worker in alive:
        os.kill(worker, signal.SIGKILL)
    assert not alive


@pytest.mark.parametrize("args", [["estimate"], ["estimate", "--json"], ["plan"], ["replay"], ["fit"], ["note"]])
def test_a_broken_pipe_exits_0_silently(args):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte (`| head -0`)
    paths = [] if args == ["note"] else [str(SAMPLES / "subagent_reader.anthropic.jsonl")]
    result = subprocess.run([*CTXFIT, *args, *paths], stdout=write_end, stderr=subprocess.PIPE, env=ENV, cwd=ROOT)
    os.close(write_end)
    assert result.returncode == 0, result.stderr
    assert b"Traceback" not in result.stderr and b"Exception ignored" not in result.stderr


def test_pipefail_head_is_success(tmp_path):
    result = subprocess.run(["bash", "-c", f"set -o pipefail; {' '.join(CTXFIT)} estimate {OPENAI} | head -1"],
                            capture_output=True, env=ENV, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(b"\n") == 1


def test_file_names_with_brackets_are_printed_as_they_are(tmp_path):
    path = tmp_path / "run [2] [bold]x[bold].jsonl"
    shutil.copy(OPENAI, path)
    for args in (["estimate"], ["plan"], ["replay", "--no-chart"]):
        result = run_cli(*args, str(path))
        assert result.returncode == 0, result.stderr
        assert str(path).encode() in result.stdout, args
        assert b"\\[" not in result.stdout
    fitted = run_cli("fit", str(path), "--budget", "20000")
    assert str(path).encode() in fitted.stderr and b"\\[" not in fitted.stderr


def test_a_read_failure_is_bad_input_not_usage():
    # Reading /proc/self/mem from offset 0 fails in the kernel with EIO: a real I/O error.
    result = run_cli("estimate", "/proc/self/mem")
    assert "cannot read" in one_error_line(result, 3)


def _png(width: int, height: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\x08\x06\x00\x00\x00"


def _tokens_of_blocks(tmp_path, *blocks) -> int:
    path = tmp_path / "media.jsonl"
    path.write_bytes(orjson.dumps({"role": "user", "content": list(blocks)}) + b"\n")
    result = run_cli("estimate", "--json", str(path))
    assert result.returncode == 0, result.stderr
    return orjson.loads(result.stdout)["total"]["by_kind"]


def _image(data: bytes) -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": base64.b64encode(data).decode()}}


def _pdf(data: bytes) -> dict:
    return {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                           "data": base64.b64encode(data).decode()}}


def test_an_image_with_an_extreme_aspect_ratio_errs_high(tmp_path):
    extreme = _tokens_of_blocks(tmp_path, _image(_png(1, 4_294_967_295)))
    square = _tokens_of_blocks(tmp_path, _image(_png(1000, 1000)))
    assert _image_tokens(extreme) == 1600 and _image_tokens(square) == 1334


def _image_tokens(by_kind: dict) -> int:
    return sum(v["tokens"] if isinstance(v, dict) else v for k, v in by_kind.items() if "image" in k)


@pytest.mark.parametrize("make", [classic_pdf, object_stream_pdf])
def test_pdf_pages_are_counted_by_a_pdf_reader(tmp_path, make):
    pytest.importorskip("pypdf")
    assert _image_tokens(_tokens_of_blocks(tmp_path, _pdf(make(12)))) == 12 * 1600


# --- memory and time bounded by design --------------------------------------------------------


def test_input_without_newlines_stops_at_the_line_limit():
    result = subprocess.run([*CTXFIT, "estimate", "/dev/zero", "--max-line-mb", "8"], capture_output=True,
                            env=ENV, cwd=ROOT, timeout=60)
    assert "line longer than 8 MiB" in one_error_line(result, 3)


def test_a_bad_first_line_is_reported_without_reading_on():
    # An endless input after a broken first line: reading it to the end would never finish.
    command = ("(echo '{\"role\": \"user\", \"content\": \"hi'; yes '{\"role\":\"user\",\"content\":\"x\"}') | "
               f"{' '.join(CTXFIT)} estimate -")
    result = subprocess.run(["bash", "-c", command], capture_output=True, env=ENV, cwd=ROOT, timeout=60)
    assert "<stdin>:1: truncated JSON" in one_error_line(result, 3)


def test_a_pretty_printed_document_is_still_one_document(tmp_path):
    request = {"system": "s", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}]}
    path = tmp_path / "request.json"
    path.write_bytes(orjson.dumps(request, option=orjson.OPT_INDENT_2))
    result = run_cli("estimate", "--json", str(path))
    assert result.returncode == 0, result.stderr
    assert orjson.loads(result.stdout)["files"][0]["messages"] == 2  # and the system prompt
    broken = tmp_path / "broken.json"
    broken.write_bytes(orjson.dumps(request, option=orjson.OPT_INDENT_2).replace(b'"x"', b'"x",'))
    assert "broken.json:" in one_error_line(run_cli("estimate", str(broken)), 3)
