"""Forked worker processes that read files on every core: they die with ctxfit, Ctrl-C stops
them at once, and one that dies is reported by the file it was reading.

Why workers ignore Ctrl-C (issue #20): a worker interrupted in the middle of a queue operation
leaves the pool's pipes or locks half-used, and then every process waits on them forever (about
one interrupted `--jobs 2` run in ten). So only the main process takes SIGINT: it kills its
workers (SIGKILL: they hold nothing but results, and write no file) and does not wait for them.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import EXIT_INTERNAL, CtxfitError

if TYPE_CHECKING:
    from collections.abc import MutableMapping
    from concurrent.futures import Future, ProcessPoolExecutor
    from multiprocessing import Process


#: How long a broken pool's report waits for its dead worker to be reaped (its exit code).
REAP_SECONDS = 2.0


class WorkerDied(CtxfitError):
    """A worker process ended without a result (killed, out of memory): names its file."""

    exit_code = EXIT_INTERNAL


class Workers:
    """`count` forked worker processes for `tasks` tasks at most; use as a context manager
    (`with Workers(2, tasks=len(files)) as workers`)."""

    def __init__(self, count: int, *, tasks: int) -> None:
        # Imported here: they cost every command ~30 ms at start-up and only many or big files need them.
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context
        from multiprocessing.sharedctypes import RawArray

        self._names: list[str] = []
        #: Ctrl-C killed the workers.
        self.interrupted = False
        #: Per task: the pid of the worker on it, negated once it is done. Shared memory the
        #: workers inherit when they fork (at the first submit); a worker writes only its own
        #: tasks' slots, so no lock is needed.
        self._key = id(self)
        self._on = _ON[self._key] = RawArray("q", max(tasks, 1))
        self._pool: ProcessPoolExecutor = ProcessPoolExecutor(
            count, mp_context=get_context("fork"), initializer=_start_worker, initargs=(os.getpid(),)
        )
        # The executor's own table of its processes (pid -> Process), kept: it is emptied on shutdown.
        self._processes: MutableMapping[int, Process] = self._pool._processes

    def submit(self, function: Callable[..., Any], *args: Any, name: str) -> Future:
        """Run `function(*args)` in a worker; `name` (a file) is what a report of its death says."""
        slot = len(self._names)
        if slot >= len(self._on):
            raise ValueError(f"more than the {len(self._on)} tasks this pool was made for")
        self._names.append(name)
        # The first submit forks the workers. Ctrl-C is held meanwhile: landing in Python's
        # at-fork hooks, it would be printed as "Exception ignored" and lost.
        with _held(signal.SIGINT):
            return self._pool.submit(_tracked, self._key, slot, function, args)

    def result(self, future: Future) -> Any:
        """The future's result; a dead worker becomes `WorkerDied` naming the file it was on."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            return future.result()
        except BrokenProcessPool:
            if self.interrupted:  # killed by Ctrl-C (whose KeyboardInterrupt Python may have
                raise KeyboardInterrupt from None  # swallowed, e.g. in an at-fork hook)
            raise self._died() from None

    def map(self, function: Callable[[Any], Any], jobs: Iterable[Any], *, name: str) -> Iterator[Any]:
        """`function(job)` for every job, results in job order as soon as each is ready."""
        futures = [self.submit(function, job, name=name) for job in jobs]
        for future in futures:
            yield self.result(future)

    def __enter__(self) -> Workers:
        self._restore = _kill_on_interrupt(self)
        return self

    def __exit__(self, kind, error, traceback) -> None:
        try:
            if kind is None:
                self._pool.shutdown(wait=True)
                return
            self.kill()  # Ctrl-C, a bad file under --strict, a dead worker: nothing more is wanted
            # Then wait for the executor's thread, which ends as soon as it sees them dead: left
            # running, it races Python's exit (an "Exception ignored ... Bad file descriptor").
            self._pool.shutdown(wait=True, cancel_futures=True)
        finally:
            self._restore()
            _ON.pop(self._key, None)

    def kill(self) -> None:
        """Kill every worker now (their results are no longer wanted)."""
        for process in list(self._processes.values()):
            try:
                process.kill()
            except (OSError, ValueError, AttributeError):  # already gone
                pass

    def _died(self) -> WorkerDied:
        """What a broken pool says: which worker died how, and the file it was reading."""
        # A process's exit code is known once it is reaped: wait a moment for the dead one (the
        # executor ends the others as soon as it sees the pool broken), never for long.
        codes = _exit_codes(self._processes, time.monotonic() + REAP_SECONDS)
        # The executor terminates (SIGTERM) the others once one dies: the first to die did not.
        dead = {pid: code for pid, code in codes.items() if code not in (None, -signal.SIGTERM)}
        dead = dead or {pid: code for pid, code in codes.items() if code is not None}
        files = [self._names[slot] for slot in range(len(self._names)) if self._on[slot] in dead]
        code = next(iter(dead.values()), None)
        how = _how(code)
        if not files:
            return WorkerDied(f"a worker process died ({how}); run again, or with --jobs 1")
        return WorkerDied(
            f"{' and '.join(dict.fromkeys(files))}: the worker process reading it died ({how}); "
            "nothing was written. Read it alone with --jobs 1 to see why"
        )


def _exit_codes(processes: MutableMapping[int, Process], deadline: float) -> dict[int, int | None]:
    """Each process's exit code, waiting until `deadline` for those not yet reaped."""
    while True:
        for process in list(processes.values()):
            process.join(max(0.0, deadline - time.monotonic()))
        codes = {pid: process.exitcode for pid, process in list(processes.items())}
        if None not in codes.values() or time.monotonic() >= deadline:
            return codes
        # The executor's thread reaps them too: a join that lost that race says nothing (its
        # waitpid fails) until the winner has stored the code, a moment later.
        time.sleep(0.005)


def _how(code: int | None) -> str:
    if code is None or code >= 0:
        return f"exit code {code}"
    name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else f"signal {-code}"
    if -code == signal.SIGKILL:
        return f"killed by {name}, perhaps by the kernel for lack of memory"
    return f"killed by {name}"


#: Each open pool's task slots, by pool (`Workers._on`): module state, so that workers inherit it.
_ON: dict[int, Any] = {}


def _tracked(key: int, slot: int, function: Callable[..., Any], args: tuple) -> Any:
    """In a worker: `function(*args)`, with this worker's pid on the task's slot while it runs."""
    on = _ON[key]
    on[slot] = os.getpid()
    result = function(*args)
    on[slot] = -os.getpid()
    return result


@contextmanager
def _held(number: int) -> Iterator[None]:
    """Signal `number` is delivered only after the block (in this thread; children forked in
    it are born with it blocked)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {number})
    try:
        yield
    finally:
        if number not in before:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})


def _start_worker(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process decides (module docstring)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # (born with it held: `submit`)
    _die_with_parent(parent)


def _kill_on_interrupt(workers: Workers) -> Callable[[], object]:
    """Make Ctrl-C kill `workers` before it interrupts the main process, wherever that is
    (a generator suspended between results included). Returns what restores the handler."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None  # only the main thread takes signals
    previous = signal.getsignal(signal.SIGINT)
    if previous in (signal.SIG_IGN, None):
        return lambda: None  # (run in the background with Ctrl-C ignored: keep it so)
    owner = os.getpid()

    def interrupted(number: int, frame: Any) -> None:
        if os.getpid() != owner:
            return  # a worker forked before it ignores SIGINT: the main process decides
        workers.interrupted = True
        workers.kill()
        if callable(previous):
            previous(number, frame)  # Python's default: KeyboardInterrupt; an outer pool's: the same
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupted)
    return lambda: signal.signal(signal.SIGINT, previous)


def _die_with_parent(parent: int) -> None:
    """A worker ends when ctxfit does. Killing only the main process (what `timeout` and
    `subprocess.run(timeout=...)` do) would otherwise leave workers blocked on a full pipe."""
    try:  # Linux: the kernel kills the worker when its parent dies
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # elsewhere: a thread that watches for the parent
        import time

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)
