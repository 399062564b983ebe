"""The progress bar: drawn on stderr only when stderr is a terminal and not with --json.

Real processes, stderr on a pseudo-terminal; CTXFIT_PROGRESS_AFTER=0 stands in for work that
takes more than a second."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys

import pytest

from conftest import REALWORLD, ROOT, needs_realworld

pytestmark = needs_realworld


@pytest.fixture
def folder(tmp_path):
    for path in sorted((REALWORLD / "swe-agent").glob("*.traj")) + [REALWORLD / "openhands" / "basic.json"]:
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


def run_on_terminal(*args: str) -> tuple[int, bytes, bytes]:
    """Run ctxfit with stderr on a pseudo-terminal; return (exit code, stdout, what the terminal got)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "CTXFIT_PROGRESS_AFTER": "0", "COLUMNS": "100", "TERM": "xterm"}
    process = subprocess.Popen([sys.executable, "-m", "ctxfit_cli", *args], stdout=subprocess.PIPE,
                               stderr=follower, stdin=subprocess.DEVNULL, cwd=ROOT, env=env)
    os.close(follower)
    screen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process has exited
            break
        if not chunk:
            break
        screen += chunk
    stdout = process.stdout.read()
    process.wait(timeout=60)
    os.close(leader)
    return process.returncode, stdout, screen


def test_a_bar_on_a_terminal(folder):
    code, stdout, screen = run_on_terminal("estimate", str(folder))
    assert code == 0 and b"tokens" in stdout
    assert b"3/3" in screen and b"files" in screen  # files done, of all


def test_never_with_json_nor_in_a_pipe(folder):
    code, stdout, screen = run_on_terminal("sessions", str(folder), "--json")
    assert code == 0 and b"files" not in screen and screen.strip() == b""
    piped = subprocess.run([sys.executable, "-m", "ctxfit_cli", "estimate", str(folder)], capture_output=True,
                           cwd=ROOT, env={**os.environ, "CTXFIT_PROGRESS_AFTER": "0"}, timeout=60)
    assert piped.returncode == 0 and piped.stderr == b""
