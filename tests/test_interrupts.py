"""Issue #20's hangs, through the real CLI in subprocesses: a FIFO among logs never blocks a
survey, Ctrl-C always ends a run promptly with 130 and one line, and what stdout received by
then is whole documents or nothing (`fleet/discovery.py`, `formats/workers.py`, `cli/outputs.py`).

Ctrl-C is sent as a terminal sends it: SIGINT to the whole process group. Every wait is on a
condition (a process blocked where the test means it to be) with a deadline, never a timer."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from conftest import ROOT, SAMPLES
from test_hardening import CTXFIT, ENV, _children

OPENAI = SAMPLES / "openai_agent.openai.jsonl"
COMMANDS = ["sessions", "estimate", "replay", "fit"]

pytestmark = pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="needs Linux /proc")


def start(*args: str, stdout=subprocess.PIPE) -> subprocess.Popen:
    """ctxfit in its own process group (a terminal's foreground job)."""
    return subprocess.Popen([*CTXFIT, *args], stdout=stdout, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env=ENV, cwd=ROOT, start_new_session=True)


def wait_until(condition, what: str, deadline: float = 60.0) -> None:
    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


def family(pid: int) -> list[int]:
    """The process and its descendants."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        queue.extend(_children(current))
    return found


def blocked_in(pid: int, *places: str) -> bool:
    """Whether the process or one of its workers sleeps in one of these kernel functions."""
    for member in family(pid):
        try:
            if Path(f"/proc/{member}/wchan").read_text() in places:
                return True
        except OSError:
            pass
    return False


def interrupt(process: subprocess.Popen, deadline: float = 20.0) -> tuple[bytes, str]:
    """Ctrl-C; the run must end by itself within `deadline` seconds (else: killed, and a failure)."""
    os.killpg(process.pid, signal.SIGINT)
    try:
        stdout, stderr = process.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise AssertionError("Ctrl-C did not end the run: it hung") from None
    return stdout, stderr.decode()


def assert_interrupted(process: subprocess.Popen, stderr: str) -> None:
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert stderr.endswith("ctxfit: error: interrupted\n"), stderr


@pytest.fixture
def folder_with_a_fifo(tmp_path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(OPENAI, folder / "a.jsonl")
    os.mkfifo(folder / "live.jsonl")
    return folder


@pytest.mark.parametrize("command", COMMANDS)
def test_a_fifo_in_a_folder_is_no_log_and_blocks_nothing(folder_with_a_fifo, command):
    process = start(command, str(folder_with_a_fifo), "--json")
    try:
        stdout, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise AssertionError(f"{command} waited on the FIFO") from None
    assert process.returncode == 0, stderr
    assert b"a.jsonl" in stdout and b"live.jsonl" not in stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_a_fifo_named_directly_is_read_as_a_stream(folder_with_a_fifo, command):
    fifo = folder_with_a_fifo / "live.jsonl"
    process = start(command, str(fifo), str(folder_with_a_fifo / "a.jsonl"), "--json")
    try:
        wait_until(lambda: blocked_in(process.pid, "wait_for_partner"), "ctxfit to open the FIFO")
        fifo.write_bytes(OPENAI.read_bytes())  # the writer comes, writes once and goes
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 0, stderr
    assert b"live.jsonl" in stdout


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_ends_a_wait_for_a_fifo_writer(folder_with_a_fifo, jobs):
    other = folder_with_a_fifo / "a.jsonl"
    process = start("estimate", "--jobs", jobs, str(folder_with_a_fifo / "live.jsonl"), str(other))
    wait_until(lambda: blocked_in(process.pid, "wait_for_partner"), "ctxfit to open the FIFO")
    stdout, stderr = interrupt(process)
    assert_interrupted(process, stderr)
    assert stdout == b""


#: Logs estimated while Ctrl-C comes: their JSON document is several times the pipe's 4 KB.
FEW = 20


@pytest.fixture(scope="module")
def many_logs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("many")
    text = OPENAI.read_bytes()
    for i in range(150):
        (folder / f"f{i:03}.jsonl").write_bytes(text.replace(b"You are", f"You are ({i})".encode(), 1))
    return folder


def _whole_or_nothing(stdout: bytes) -> None:
    if stdout:
        assert isinstance(orjson.loads(stdout), dict)


def test_ctrl_c_during_jobs_never_deadlocks(many_logs):
    """Issue #20 R11: about 1 run in 10 deadlocked (every process in futex_wait) when Ctrl-C
    reached workers in the middle of a queue operation."""
    for run in range(6):
        process = start("replay", str(many_logs), "--jobs", "2", "--budget", "20000", "--json")
        # Interrupted while the workers read: both exist, and a few files are done.
        wait_until(lambda: len(_children(process.pid)) >= 2 or process.poll() is not None, "the workers")
        assert process.poll() is None, process.communicate()[1]
        stdout, stderr = interrupt(process)
        assert_interrupted(process, stderr)
        _whole_or_nothing(stdout)
        wait_until(lambda: not any(Path(f"/proc/{w}").exists() and _alive(w) for w in _children(process.pid)),
                   "the workers to be gone", 10)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_ctrl_c_while_stdout_is_written_leaves_a_whole_document(many_logs, tmp_path):
    """The reader is slow: ctxfit blocks writing the JSON; Ctrl-C then lets the document finish
    (only whole documents on stdout) and the exit code still says it was interrupted."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)  # (a page: a few files' document fills it)
    few = tmp_path
    for log in sorted(many_logs.glob("*.jsonl"))[:FEW]:
        (few / log.name).write_bytes(log.read_bytes())
    process = start("estimate", str(few), "--jobs", "1", "--json", stdout=write_end)
    os.close(write_end)
    try:
        wait_until(lambda: blocked_in(process.pid, "anon_pipe_write", "pipe_write") or process.poll() is not None,
                   "ctxfit to fill the pipe", 120)
        assert process.poll() is None, "the document fitted in the pipe: make it bigger"
        os.killpg(process.pid, signal.SIGINT)
        received = []
        reader = threading.Thread(target=lambda: received.append(_read_all(read_end)))
        reader.start()
        stderr = process.communicate(timeout=20)[1].decode()
        reader.join(20)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert_interrupted(process, stderr)
    document = orjson.loads(received[0])
    assert len(document["files"]) == FEW


def _read_all(descriptor: int) -> bytes:
    with os.fdopen(descriptor, "rb") as stream:
        return stream.read()


def test_a_killed_worker_is_named_by_its_file(folder_with_a_fifo):
    """A worker killed (by the kernel's OOM killer, say) was `internal error (BrokenProcessPool)`."""
    fifo = folder_with_a_fifo / "live.jsonl"
    process = start("estimate", "--jobs", "2", str(fifo), str(folder_with_a_fifo / "a.jsonl"))
    try:
        wait_until(lambda: blocked_in(process.pid, "wait_for_partner"), "a worker to open the FIFO")
        worker = next(w for w in _children(process.pid) if Path(f"/proc/{w}/wchan").read_text() == "wait_for_partner")
        os.kill(worker, signal.SIGKILL)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    stderr = stderr.decode()
    assert process.returncode == 1 and stdout == b"", stderr
    assert stderr == (f"ctxfit: error: {fifo}: the worker process reading it died (killed by SIGKILL, perhaps "
                      "by the kernel for lack of memory); nothing was written. Read it alone with --jobs 1 to see why\n")


# --- Ctrl-C while a command's modules load ----------------------------------------------------


@pytest.mark.parametrize("other_threads", [0, 2])
def test_ctrl_c_while_a_module_loads_waits_for_the_import(tmp_path, monkeypatch, other_threads):
    """Interrupted in a native extension's initialization (orjson's), an interrupted run died of
    SIGSEGV, and in a class's creation it ended as an "internal error" (RuntimeError): about 1 of
    40 interrupted `replay --jobs 2` runs. The lazily loaded modules are imported with Ctrl-C
    held: the import completes, then the interrupt is raised."""
    from ctxfit_cli.cli.lazy import LazyModule

    (tmp_path / "interrupted_import.py").write_text(
        "import dataclasses, os, signal\n"
        "os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C in the middle of the import\n"
        "@dataclasses.dataclass\n"
        "class Made:\n"
        "    parts: list = dataclasses.field(default_factory=list)\n"
        "DONE = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "interrupted_import", raising=False)  # (imported by another case)
    # Other threads alive (a pool's, a client's): the kernel may hand the signal to one of them.
    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait) for _ in range(other_threads)]
    for thread in threads:
        thread.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            LazyModule("interrupted_import").load()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    module = sys.modules.get("interrupted_import")  # (not imported again: it would send another)
    assert module is not None and module.DONE and module.Made().parts == []


def test_an_error_a_ctrl_c_caused_is_an_interruption():
    """Python wraps a KeyboardInterrupt raised in `__set_name__` (a dataclass field's, as the
    run above saw) in a RuntimeError: it is still "interrupted", 130, not an internal error."""
    code = (
        "import sys, ctxfit_cli.cli\n"
        "a = sys.modules['ctxfit_cli.cli.app']  # (the package's `app` is the Typer app)\n"
        "def app():\n"
        "    try:\n"
        "        raise KeyboardInterrupt\n"
        "    except KeyboardInterrupt as error:\n"
        "        raise RuntimeError(\"Error calling __set_name__ on 'Field' instance\") from error\n"
        "a.app = app\n"
        "a.main()\n"
    )
    done = subprocess.run([CTXFIT[0], "-c", code], capture_output=True, env=ENV, cwd=ROOT, timeout=60)
    assert (done.returncode, done.stderr, done.stdout) == (130, b"ctxfit: error: interrupted\n", b"")


def test_a_dead_worker_reaped_by_the_executor_thread_first_still_has_its_exit_code(monkeypatch):
    """The executor's thread and the report both wait for a dead worker: the one that loses that
    race sees no exit code (its waitpid fails) until the other has stored it. The report asks again
    rather than call the death unknown, which named a SIGTERMed bystander's file instead (CI, stop 40)."""
    import multiprocessing

    from ctxfit_cli.formats import workers

    process = multiprocessing.get_context("fork").Process(target=signal.pause)
    process.start()
    os.kill(process.pid, signal.SIGKILL)
    _, status = os.waitpid(process.pid, 0)  # the executor's thread won the race ...
    stored = []

    def meanwhile(seconds):  # ... and stores the code while the report waits
        stored.append(os.waitstatus_to_exitcode(status))
        process._popen.returncode = stored[-1]

    monkeypatch.setattr(workers.time, "sleep", meanwhile)
    codes = workers._exit_codes({process.pid: process}, time.monotonic() + 5)
    assert codes == {process.pid: -signal.SIGKILL} and stored
