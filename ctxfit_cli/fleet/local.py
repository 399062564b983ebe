"""Running the per-file function over many files on this machine: in this process, or in
`jobs` worker processes. Results come back in input order either way."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..formats.parallel import cores
from ..formats.workers import Workers
from .job import Job
from .work import FileResult, run_file


def default_jobs() -> int:
    """The cores this process may use."""
    return cores()


def run_files(
    paths: list[str], job: Job, *, jobs: int = 1, run: Callable[[str, Job], FileResult] = run_file
) -> Iterator[FileResult]:
    """`run(path, job)` for every path, in order. Standard input is always read here (a worker
    cannot read this process's stdin); with several workers, each file is read by one of them
    and no file is itself split over processes."""
    jobs = max(1, min(jobs, len(paths)))
    if jobs == 1:
        for path in paths:
            yield run(path, job)
        return
    spread = job._replace(split_big_files=False)
    # Forked, killed with this process, stopped at once by Ctrl-C (formats/workers.py).
    with Workers(jobs, tasks=len(paths)) as workers:
        futures = [None if path == "-" else workers.submit(run, path, spread, name=path) for path in paths]
        for path, future in zip(paths, futures):
            yield run(path, job) if future is None else workers.result(future)
