"""Running the per-file function over many files on this machine: in this process, or in
`jobs` worker processes. Results come back in input order either way. A file whose result the
cache holds (`summary_cache.py`) is taken from it here: no worker is started for it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from .job import Job
from .work import FileResult, cached_result, run_file


def default_jobs() -> int:
    """The cores this process may use."""
    from ..formats.parallel import cores

    return cores()


def run_files(
    paths: list[str], job: Job, *, jobs: int | None = 1, run: Callable[[str, Job], FileResult] = run_file
) -> Iterator[FileResult]:
    """`run(path, job)` for every path, in order (`jobs` None: as many workers as cores). Standard
    input is always read here (a worker cannot read this process's stdin); with several workers,
    each file is read by one of them and no file is itself split over processes."""
    kept = [cached_result(path, job) if run is run_file else None for path in paths]
    missing = [path for path, result in zip(paths, kept) if result is None]
    jobs = max(1, min(default_jobs() if jobs is None and missing else jobs or 1, len(missing)))
    if jobs == 1:
        for path, result in zip(paths, kept):
            yield run(path, job) if result is None else result
        return
    from ..formats.workers import Workers
    from .work import imported

    imported(job.command)  # the readers and the command's work, imported once here: the forked workers share them
    spread = job._replace(split_big_files=False)
    # Forked, killed with this process, stopped at once by Ctrl-C (formats/workers.py).
    with Workers(jobs, tasks=len(missing)) as workers:
        futures: list = [None] * len(paths)
        # The biggest files first: the workers then finish together, where in input order one
        # big file handed out last keeps one worker busy after the other is done.
        for i in sorted(range(len(paths)), key=lambda i: -_size(paths[i])):
            if kept[i] is None and paths[i] != "-":
                futures[i] = workers.submit(run, paths[i], spread, name=paths[i])
        for path, result, future in zip(paths, kept, futures):
            if result is None:
                result = run(path, job) if future is None else workers.result(future)
            yield result


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # (reading it says what is wrong)
