"""Running the per-file function over many files on this machine: in this process, or in
`jobs` worker processes. Results come back in input order either way."""

from __future__ import annotations

import os
from typing import Callable, Iterator

from ..formats.parallel import _die_with_parent, cores
from .work import FileResult, Job, run_file


def default_jobs() -> int:
    """The cores this process may use."""
    return cores()


def run_files(paths: list[str], job: Job, *, jobs: int = 1,
              run: Callable[[str, Job], FileResult] = run_file) -> Iterator[FileResult]:
    """`run(path, job)` for every path, in order. Standard input is always read here (a worker
    cannot read this process's stdin); with several workers, each file is read by one of them
    and no file is itself split over processes."""
    jobs = max(1, min(jobs, len(paths)))
    if jobs == 1:
        for path in paths:
            yield run(path, job)
        return
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context
    spread = job._replace(split_big_files=False)
    # Forked, and killed with this process (as parallel.py's): a killed ctxfit leaves no worker behind.
    with ProcessPoolExecutor(jobs, mp_context=get_context("fork"), initializer=_die_with_parent,
                             initargs=(os.getpid(),)) as pool:
        futures = [None if path == "-" else pool.submit(run, path, spread) for path in paths]
        for path, future in zip(paths, futures):
            yield run(path, job) if future is None else future.result()
