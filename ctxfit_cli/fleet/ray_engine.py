"""Running the per-file function on a Ray cluster (`--engine ray`, `pip install 'ctxfit[fleet]'`).

The same pure function `--jobs` maps over local processes (`work.run_file(path, job)`) is sent
to the cluster as Ray tasks, a chunk of files per task so that ten thousand small logs do not
cost ten thousand task round-trips; results come back in input order, and `combine.py` puts
them together exactly as it does for a local run. Ray is imported only here, only when asked.

Inputs must be readable where the tasks run: paths on a filesystem every node mounts (NFS, a
shared volume), `file://` URIs, or any URI fsspec reads (`s3://`, `gs://`, `https://`, …: the
task streams the object, the line limit applied as it downloads, and never copies it to disk;
install fsspec and its protocol's package on the nodes).
Standard input (`-`) is read by the driver. See docs/fleet.md for a real cluster.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from ..errors import MissingExtra

if TYPE_CHECKING:  # (imported when a local Ray is started)
    import subprocess

#: Files per Ray task: enough that per-task overhead (~1 ms) is small next to the work, few
#: enough that every worker gets several tasks and the slowest file does not hold up the end.
MAX_CHUNK = 64
#: Tasks per CPU of the cluster, at least.
TASKS_PER_CPU = 4


def ray_module():
    """`ray`, or a one-line error that says what to install."""
    try:
        import ray
    except ImportError:
        raise MissingExtra("--engine ray needs Ray: pip install 'ctxfit[fleet]'") from None
    return ray


def connect(address: str | None = None) -> None:
    """Join the cluster at `address` (or RAY_ADDRESS, or the one `ray start` made on this
    machine); with none running, start a local one that `ray_reaper` stops whatever ends the
    run. Quiet: the product is ctxfit's."""
    ray = ray_module()
    if ray.is_initialized():
        return
    import logging

    quiet = dict(logging_level=logging.ERROR, log_to_driver=False, include_dashboard=False, configure_logging=True)
    if address is None and _no_cluster_to_join():
        _start_own(ray, quiet)
    else:
        ray.init(address=address, **quiet)


def _no_cluster_to_join() -> bool:
    """Whether `ray.init()` would start a local Ray (no RAY_ADDRESS, no `ray start` cluster)."""
    try:
        from ray._private.services import canonicalize_bootstrap_address

        return canonicalize_bootstrap_address(None) is None
    except Exception:  # Ray's internals moved, or the address it found is unusable: Ray decides
        return False


class _OwnRay:
    """The local Ray this run started: its reaper, and whether the run was cut short."""

    reaper: subprocess.Popen[bytes] | None = None
    interrupted = False


def _start_own(ray, options: dict) -> None:
    """Start a local Ray whose every process carries this run's marker, watched by a reaper
    process that stops them when this process ends, however it ends (`ray_reaper.py`)."""
    import atexit
    import signal
    import subprocess
    import sys
    import tempfile
    import threading
    import uuid

    from .ray_reaper import MARKER_VARIABLE

    marker = uuid.uuid4().hex
    temp_dir = tempfile.mkdtemp(prefix="ctxfit-ray-")  # short: Ray's socket paths must fit 107 bytes
    _OwnRay.reaper = subprocess.Popen(
        [sys.executable, "-m", "ctxfit_cli.fleet.ray_reaper", marker, temp_dir],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.environ[MARKER_VARIABLE] = marker
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _note_interruption)
    ray.init(_temp_dir=temp_dir, **options)
    atexit.register(_at_exit)  # runs before Ray's own shutdown hook (registered earlier)


def _at_exit() -> None:
    """An interrupted run does not go through Ray's shutdown (on Ctrl-C its processes got the
    signal too, and shutting down against them crashed or printed tracebacks): the reaper stops
    them, and this process ends at once, with the interrupted exit code."""
    if not _OwnRay.interrupted:
        return
    reaper = _OwnRay.reaper
    assert reaper is not None and reaper.stdin is not None  # (started with the run, stdin=PIPE)
    reaper.stdin.close()
    try:
        reaper.wait(timeout=10)
    except Exception:
        pass
    os._exit(130)


def _note_interruption(_signum, _frame) -> None:
    _OwnRay.interrupted = True
    raise KeyboardInterrupt


def chunk_size(files: int, cpus: int) -> int:
    """Files per Ray task for `files` files on `cpus` CPUs.

    >>> chunk_size(10_000, 8), chunk_size(10, 8), chunk_size(0, 8)
    (64, 1, 1)
    """
    return max(1, min(MAX_CHUNK, math.ceil(files / (max(cpus, 1) * TASKS_PER_CPU))))


def run_files(paths: list[str], job, *, run: Callable | None = None, address: str | None = None) -> Iterator:
    """`run(path, job)` for every path on the Ray cluster, results in input order.

    `run` defaults to the per-file function of `--jobs` (`work.run_file`); `job` must pickle.
    """
    if run is None:
        from .work import run_file

        run = run_file
    ray = ray_module()
    connect(address)
    # Every file is one task's: a big file is not itself split over a node's cores again.
    if hasattr(job, "split_big_files"):
        job = job._replace(split_big_files=False)
    remote = ray.remote(num_cpus=1, max_retries=2)(run_chunk)
    size = chunk_size(len(paths), int(ray.cluster_resources().get("CPU", 1)))
    pending = []
    for start in range(0, len(paths), size):
        chunk = paths[start : start + size]
        # Standard input is the driver's: read it here, in its place in the order.
        pending.append(chunk if "-" in chunk else remote.remote(run, chunk, job))
    for item in pending:
        if isinstance(item, list):
            yield from run_chunk(run, item, job)
        else:
            yield from ray.get(item)


def run_chunk(run: Callable, paths: list[str], job) -> list:
    """What one Ray task does: `run` on each of its files, in order."""
    return [run_one(run, path, job) for path in paths]


def run_one(run: Callable, path: str, job):
    """`run(path, job)` for a path or a URI: a `file://` URI is a path, another scheme is
    streamed with fsspec where the task runs, never copied to disk (`uri_input.py`)."""
    scheme = urlparse(path).scheme if "://" in path else ""
    if scheme == "file":
        return run(unquote(urlparse(path).path), job)
    if scheme and hasattr(job, "uris"):
        return run(path, job._replace(uris=True))
    return run(path, job)
