"""--engine ray on a real (local) Ray cluster: the same per-file function as --jobs, combined in
the same place, so the output is byte-for-byte the local run's. CI starts the cluster
(`ray start --head` in .ci/run, RAY_ADDRESS=auto); without one, Ray starts a local one."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'ctxfit[fleet]' (CI installs it)")

from conftest import ROOT  # noqa: E402
from ctxfit_cli.fleet import ray_engine  # noqa: E402
from ctxfit_cli.fleet.local import run_files as run_locally  # noqa: E402
from ctxfit_cli.fleet.job import Job  # noqa: E402
from ctxfit_cli.fleet.work import run_file  # noqa: E402

REAL = ROOT.parent / "shared" / "realworld"
SAMPLES = ROOT / "sample_transcripts"


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """Samples and every real log we have, a bad file, and a session copied twice."""
    folder = tmp_path_factory.mktemp("logs")
    for path in SAMPLES.glob("*.json*"):
        shutil.copy(path, folder / path.name)
    if REAL.exists():
        for path in REAL.rglob("*"):
            if path.suffix in (".jsonl", ".json", ".traj") and path.stat().st_size < 1_500_000:
                target = folder / path.parent.name
                target.mkdir(exist_ok=True)
                shutil.copy(path, target / path.name)
    (folder / "broken.jsonl").write_bytes(b'{"role":"user","content":"hi"}\n{not json\n')
    copies = folder / "copies"
    copies.mkdir()
    shutil.copy(SAMPLES / "claude_code_session.jsonl", copies / "claude_code_session.jsonl")
    return folder


def ctxfit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxfit_cli", *args], capture_output=True, timeout=600,
                          cwd=ROOT, env={**os.environ, "COLUMNS": "120"})


@pytest.mark.parametrize("command", [
    ["estimate", "--json"],
    ["replay", "--json", "--budget", "30000", "-p", "ctxfit", "-p", "turns"],
    ["sessions", "--json", "--budget", "30000"],
    ["sessions", "--budget", "30000"],  # the table too
])
def test_ray_engine_prints_exactly_what_the_local_run_prints(logs, command):
    local = ctxfit(*command, str(logs), "--jobs", "1")
    on_ray = ctxfit(*command, str(logs), "--engine", "ray")
    assert local.returncode == 5, local.stderr  # partial: broken.jsonl
    assert (on_ray.returncode, on_ray.stdout) == (local.returncode, local.stdout)
    assert b"broken.jsonl" in on_ray.stderr
    assert len(local.stdout) > 1000


def test_ray_engine_maps_the_per_file_function_in_input_order(logs):
    paths = sorted(str(p) for p in logs.rglob("*.json*"))
    job = Job("estimate")
    local = [(r.path, r.error, len(r.units)) for r in run_locally(paths, job, jobs=1)]
    distributed = list(ray_engine.run_files(paths, job, run=run_file, address=os.environ.get("RAY_ADDRESS")))
    assert [(r.path, r.error, len(r.units)) for r in distributed] == local
    assert [r.units[0].items[0]["report"].tokens for r in distributed if r.units] == \
           [r.units[0].items[0]["report"].tokens for r in run_locally(paths, job, jobs=1) if r.units]


def test_file_uris_are_read_as_paths(logs):
    path = logs / "subagent_reader.anthropic.jsonl"
    [result] = ray_engine.run_files([path.as_uri()], Job("estimate"), run=run_file)
    assert result.error is None and result.path == str(path)


def test_a_missing_ray_says_what_to_install(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("no ray")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    from ctxfit_cli.errors import MissingExtra
    with pytest.raises(MissingExtra, match=r"pip install 'ctxfit\[fleet\]'"):
        ray_engine.ray_module()


@pytest.mark.parametrize("options", [["--engine", "spark"], ["--engine", "ray", "--jobs", "2"],
                                     ["--ray-address", "auto"]])
def test_engine_options_that_cannot_work_are_usage_errors(options):
    done = ctxfit("estimate", str(SAMPLES), "--json", *options)
    assert done.returncode == 2 and done.stdout == b""
    assert b"--engine" in done.stderr or b"--ray-address" in done.stderr or b"--jobs" in done.stderr


# --- a Ray that ctxfit starts is stopped by ctxfit, whatever ends the run (issue 20, R13) -------


def run_markers() -> dict[int, str]:
    """Processes carrying a ctxfit run's Ray marker: pid -> marker."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                environ = open(f"/proc/{entry}/environ", "rb").read().split(b"\0")
            except OSError:
                continue
            for item in environ:
                if item.startswith(b"CTXFIT_RAY_RUN="):
                    found[int(entry)] = item.split(b"=", 1)[1].decode()
    return found


def wait_for(condition, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    return condition()


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="finds the run's processes in /proc")
@pytest.mark.parametrize("ending", ["SIGKILL", "SIGINT"])
def test_a_ray_started_by_ctxfit_is_stopped_however_the_run_ends(tmp_path, ending):
    # Its own Ray temp root and no RAY_ADDRESS: the run starts its own Ray and cannot see the
    # cluster CI started (which this test must leave alone). No RAY_* variable either: a Ray
    # started in this process by another test set some (RAY_AUTH_MODE, ...).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CTXFIT_RAY"))}
    env["RAY_TMPDIR"] = str(tmp_path)
    # A file for the cluster, then standard input, which the driver reads itself and which
    # stays open: the run is under way until it is ended.
    driver = subprocess.Popen([sys.executable, "-m", "ctxfit_cli", "estimate", str(SAMPLES / "claude_code_session.jsonl"),
                               "-", "--engine", "ray", "--json"], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        def workers_up():
            markers = {m for pid, m in run_markers().items() if _parent(pid) == driver.pid}
            if len(markers) != 1:
                return None
            [marker] = markers
            mine = [pid for pid, m in run_markers().items() if m == marker]
            return marker if any(b"default_worker" in _cmdline(pid) for pid in mine) else None
        marker = wait_for(workers_up, 120)
        assert marker, driver.stderr.read1().decode() if driver.poll() is not None else "Ray did not start"
        if ending == "SIGKILL":
            driver.kill()
        else:  # Ctrl-C in a terminal: the driver's whole process group
            os.killpg(driver.pid, signal.SIGINT)
        _, stderr = driver.communicate(timeout=60)
        leftovers = wait_for(lambda: not [p for p, m in run_markers().items() if m == marker], 30)
        assert leftovers, [(_cmdline(p)[:120]) for p, m in run_markers().items() if m == marker]
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    if ending == "SIGINT":
        assert driver.returncode == 130, stderr.decode()[-2000:]
        assert b"Traceback" not in stderr and b"interrupted" in stderr


def _parent(pid: int) -> int:
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def _cmdline(pid: int) -> bytes:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return b""


def test_ray_reads_uris_as_they_download_and_prints_what_the_files_give(tmp_path):
    """Over real HTTP: a log gives what the same file gives, and an endless one-line object is
    refused after about the line limit (the run ends, exit 5: the other input was reported)."""
    pytest.importorskip("aiohttp", reason="fsspec reads http:// with aiohttp")
    import threading

    from uri_server import LogServer

    name = "claude_code_session.jsonl"
    server = LogServer({name: (SAMPLES / name).read_bytes()}, tmp_path)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        (tmp_path / "logs").mkdir()
        (tmp_path / "logs" / name).write_bytes((SAMPLES / name).read_bytes())
        (tmp_path / "logs" / "endless.jsonl").write_bytes(b'{"role":"user","content":"' + b"x" * (2 << 20))
        local = ctxfit("estimate", "--json", "--max-line-mb", "1", str(tmp_path / "logs" / name),
                       str(tmp_path / "logs" / "endless.jsonl"))
        uris = [f"{server.url}/logs/{name}", f"{server.url}/logs/endless.jsonl"]
        on_ray = ctxfit("estimate", "--json", "--max-line-mb", "1", *uris, "--engine", "ray")
    finally:
        server.shutdown()
        server.server_close()
    assert local.returncode == 5, local.stderr
    assert on_ray.returncode == 5, on_ray.stderr.decode()[-2000:]
    assert on_ray.stdout.replace(server.url.encode(), b"") == local.stdout.replace(str(tmp_path).encode(), b"")
    assert f"{uris[1]}:1: line longer than 1 MiB".encode() in on_ray.stderr
    assert server.endless_sent < 64 << 20  # what the sockets hold besides: not the endless object


def test_a_uri_with_a_line_past_the_limit_reads_as_the_same_file_does(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    data = b'{"role":"user","content":"hi"}\n{"role":"assistant","content":"' + b"y" * (2 << 20) + b'"}\n'
    with fsspec.open("memory://logs/long.jsonl", "wb") as f:
        f.write(data)
    (tmp_path / "long.jsonl").write_bytes(data)
    job = Job("estimate", line_limit_mb=1)
    remote = ray_engine.run_one(run_file, "memory://logs/long.jsonl", job)
    local = run_file(str(tmp_path / "long.jsonl"), job)
    assert remote.error and remote.error.replace("memory://logs/long.jsonl", "F") == \
        local.error.replace(str(tmp_path / "long.jsonl"), "F")
