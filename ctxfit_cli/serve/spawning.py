"""Starting the fitting worker processes, light on purpose: `ctxfit proxy` starts them before
it imports its HTTP stack and the fitting side, so that the workers' own imports run alongside
(issue #33: an agent's first request through `ctxfit wrap` waits for the proxy and its worker;
one after the other they took ~1.2 s on a loaded 2-core machine). Only the standard library
here: the worker is told its settings later (`pool.py`) and meanwhile imports what it needs.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (imported where used: `ctxfit wrap` reads `default_workers` and runs no loop)
    import asyncio

try:
    import fcntl
except ImportError:  # (not on Windows)
    fcntl = None  # type: ignore[assignment]

#: A body crosses to a worker and back in a few writes, not one per 64 KB: the pipes are made
#: this large where the system allows (Linux: up to /proc/sys/fs/pipe-max-size), and a worker's
#: answer is read without pausing the pipe under this size.
PIPE_SIZE, READ_BUFFER = 1 << 20, 1 << 24
#: What a worker runs (not `-m`: its classes would be `__main__`'s, and the proxy could not read them).
#: The cyclic GC is off while it imports (`main` turns it on, then freezes what was loaded).
WORKER_CODE = "import gc; gc.disable(); from ctxfit_cli.serve.worker import main; main()"


def default_workers() -> int:
    """One fitting worker per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # (not on Linux)
        return max(1, os.cpu_count() or 1)


async def spawn_worker() -> asyncio.subprocess.Process:
    """A new worker process, its stdin and stdout the channel (`frames.py`); told nothing yet."""
    import asyncio  # (here: `ctxfit wrap` reads `default_workers` and runs no event loop)

    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        WORKER_CODE,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        start_new_session=True,  # the terminal's Ctrl-C is the proxy's to handle, not the workers'
        limit=READ_BUFFER,
    )
    _widen(process)
    return process


async def spawn_workers(count: int) -> list[asyncio.subprocess.Process]:
    """`count` workers started at once (a `Pool` takes them up; `stop_unused` ends them if not)."""
    return [await spawn_worker() for _ in range(count)]


async def stop_unused(processes: list[asyncio.subprocess.Process]) -> None:
    """End workers no pool took up (the proxy did not start, or stopped first): they hold
    nothing yet, and may still be importing, so they are killed, not asked."""
    for process in processes:
        try:
            process.kill()
        except ProcessLookupError:  # (ended already)
            pass
    for process in processes:
        await process.wait()


def _widen(process: asyncio.subprocess.Process) -> None:
    """Make the pipes to and from a worker `PIPE_SIZE` large, where the system allows."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if set_size is None:
        return
    transport = getattr(process, "_transport", None)  # (asyncio keeps the pipes' transports there)
    for fd in (0, 1):
        try:
            pipe = transport.get_pipe_transport(fd).get_extra_info("pipe")  # type: ignore[union-attr]
            fcntl.fcntl(pipe.fileno(), set_size, PIPE_SIZE)
        except (OSError, AttributeError):
            pass  # a smaller pipe: more writes, same bytes
