"""Stops the local Ray that ctxfit started, whatever ends the run (`--engine ray`, no cluster).

    python -m ctxfit_cli.fleet.ray_reaper MARKER TEMP_DIR

The driver starts this process first, in a session of its own (so the terminal's Ctrl-C does
not reach it), holding the write end of its standard input, and sets `CTXFIT_RAY_RUN=MARKER`
in its own environment before `ray.init`: every process Ray starts for the run (GCS, raylet,
dashboard and runtime-env agents, workers — the workers in process groups of their own)
inherits it. When the driver ends — done, interrupted, killed with SIGKILL — its end of the
pipe closes; the reaper then sends SIGTERM to every process that carries the marker, SIGKILL to
those still there after a few seconds, and removes the run's Ray temp directory.

Only processes of this run carry the marker: a Ray cluster started by `ray start` (or another
ctxfit run) is never touched.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time

MARKER_VARIABLE = "CTXFIT_RAY_RUN"
#: Seconds the run's processes get to exit on SIGTERM before SIGKILL.
GRACE = 3.0


def marked(marker: str) -> list[int]:
    """The processes (of this user) whose environment carries `CTXFIT_RAY_RUN=marker`."""
    wanted = f"{MARKER_VARIABLE}={marker}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if wanted in environ.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:  # gone, or not ours to read
            continue
    return found


def stop(marker: str) -> None:
    """SIGTERM the run's processes, then SIGKILL what is left after `GRACE` seconds."""
    for sig, wait in ((signal.SIGTERM, GRACE), (signal.SIGKILL, GRACE)):
        pids = marked(marker)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            time.sleep(0.05)
            pids = marked(marker)
        if not pids:
            return


def main() -> None:
    marker, temp_dir = sys.argv[1], sys.argv[2]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the driver's end decides
    while sys.stdin.buffer.read(65536):
        pass
    stop(marker)
    shutil.rmtree(temp_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
