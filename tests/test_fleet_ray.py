"""--engine ray on a real (local) Ray cluster: the same per-file function as --jobs, combined in
the same place, so the output is byte-for-byte the local run's. CI starts the cluster
(`ray start --head` in .ci/run, RAY_ADDRESS=auto); without one, Ray starts a local one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'ctxfit[fleet]' (CI installs it)")

from conftest import ROOT  # noqa: E402
from ctxfit_cli.fleet import ray_engine  # noqa: E402
from ctxfit_cli.fleet.local import run_files as run_locally  # noqa: E402
from ctxfit_cli.fleet.work import Job, run_file  # noqa: E402

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
