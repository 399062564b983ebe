"""Running the per-file function on a Ray cluster (`--engine ray`, `pip install 'ctxfit[fleet]'`).

The same pure function `--jobs` maps over local processes (`work.run_file(path, job)`) is sent
to the cluster as Ray tasks, a chunk of files per task so that ten thousand small logs do not
cost ten thousand task round-trips; results come back in input order, and `combine.py` puts
them together exactly as it does for a local run. Ray is imported only here, only when asked.

Inputs must be readable where the tasks run: paths on a filesystem every node mounts (NFS, a
shared volume), `file://` URIs, or any URI fsspec reads (`s3://`, `gs://`, `https://`, …: the
task reads the object into memory; install fsspec and its protocol's package on the nodes).
Standard input (`-`) is read by the driver. See docs/fleet.md for a real cluster.
"""

from __future__ import annotations

import math
import os
from typing import Callable, Iterator
from urllib.parse import unquote, urlparse

from ..errors import MissingExtra

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
    machine; with none running, Ray starts a local one). Quiet: the product is ctxfit's."""
    ray = ray_module()
    if ray.is_initialized():
        return
    import logging
    ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False,
             include_dashboard=False, configure_logging=True)


def chunk_size(files: int, cpus: int) -> int:
    """Files per Ray task for `files` files on `cpus` CPUs.

    >>> chunk_size(10_000, 8), chunk_size(10, 8), chunk_size(0, 8)
    (64, 1, 1)
    """
    return max(1, min(MAX_CHUNK, math.ceil(files / (max(cpus, 1) * TASKS_PER_CPU))))


def run_files(paths: list[str], job, *, run: Callable | None = None,
              address: str | None = None) -> Iterator:
    """`run(path, job)` for every path on the Ray cluster, results in input order.

    `run` defaults to the per-file function of `--jobs` (`work.run_file`); `job` must pickle.
    """
    if run is None:
        from .work import run_file as run
    ray = ray_module()
    connect(address)
    # Every file is one task's: a big file is not itself split over a node's cores again.
    if hasattr(job, "split_big_files"):
        job = job._replace(split_big_files=False)
    remote = ray.remote(num_cpus=1, max_retries=2)(run_chunk)
    size = chunk_size(len(paths), int(ray.cluster_resources().get("CPU", 1)))
    pending = []
    for start in range(0, len(paths), size):
        chunk = paths[start:start + size]
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
    """`run(path, job)` for a path or a URI (a `file://` URI is a path; another scheme is read
    with fsspec into memory and the result names the URI)."""
    scheme = urlparse(path).scheme if "://" in path else ""
    if not scheme:
        return run(path, job)
    if scheme == "file":
        return run(unquote(urlparse(path).path), job)
    return _run_remote(run, path, job)


def _run_remote(run: Callable, uri: str, job):
    try:
        import fsspec
    except ImportError:
        raise MissingExtra(f"{uri}: reading URIs needs fsspec on every node: pip install fsspec") from None
    import tempfile
    name = os.path.basename(urlparse(uri).path) or "log.jsonl"
    with tempfile.TemporaryDirectory(prefix="ctxfit-") as folder:
        local = os.path.join(folder, name)
        with fsspec.open(uri, "rb") as source, open(local, "wb") as target:
            while block := source.read(1 << 20):
                target.write(block)
        result = run(local, job)
    return _renamed(result, local, uri)


def _renamed(result, local: str, uri: str):
    """The result with the temporary file's name replaced by the URI wherever a report shows it."""
    if hasattr(result, "path") and result.path == local:
        result.path = uri
    if getattr(result, "error", None):
        result.error = result.error.replace(local, uri)
    return result
