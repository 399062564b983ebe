"""Writing the files a command names (`-o`, `--report`): all or nothing, and never over an input.

A regular file (or one still to be made), wherever it is (`/dev/shm` included), is written
through a temporary file renamed into place, so a failure or Ctrl-C leaves the old file or none,
never a partial one; an existing file keeps its mode, a new one gets the umask's. A symlink is
followed to its target, so the link stays a link. Only a stream — a character device
(`/dev/null`, a terminal), a FIFO or a socket, as `/dev/stdout` often is — is written in place:
it cannot be replaced. A directory, a file that is also an input (standard input's file
included: `fit - -o F < F`), or one file named by two options is refused before anything is
read or written. (`cat F | ctxfit fit - -o F` cannot be caught: through a pipe, standard input
is not a file any tool can compare.)
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import OutputFailed, UsageProblem


def check_outputs(outputs: dict[str, str | None], inputs: list[str]) -> None:
    """Refuse outputs that would destroy an input or cannot be files; `outputs` maps each option
    (`--output`) to the path it names, `inputs` are the paths read (`-`: standard input, whose
    file counts when it is one). Called before any input is read."""
    seen: dict[object, str] = {}
    for read in inputs:
        identity = _stdin_identity() if read == "-" else _identity(read)
        if identity is not None:
            what = "standard input's file" if read == "-" else f"the input {read}"
            seen[identity] = f"{what}: writing it would destroy it"
    for option, path in outputs.items():
        if path is None:
            continue
        if os.path.isdir(path):
            raise UsageProblem(f"{option} {path} is a directory; name a file to write")
        if _is_stream(path):
            continue  # written through: writing a stream twice destroys nothing
        # By inode (links, a file also read) and by resolved name (a file not made yet).
        keys = [key for key in (_identity(path), os.path.realpath(path)) if key is not None]
        for key in keys:
            if key in seen:
                raise UsageProblem(f"{option} {path} is {seen[key]}; name another file")
        seen.update(dict.fromkeys(keys, f"also named by {option}: one write would destroy the other"))


def _identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of what `path` names after following links; None if it does not exist."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _stdin_identity() -> tuple[int, int] | None:
    """(device, inode) of standard input when it is a regular file (`< F`), else None: a pipe
    or a terminal is no file that an output could overwrite."""
    try:
        status = os.fstat(0)
    except OSError:
        return None
    return (status.st_dev, status.st_ino) if stat.S_ISREG(status.st_mode) else None


def _is_stream(path: str) -> bool:
    """A character device, FIFO or socket (`/dev/null`, `/dev/stdout` on a pipe or terminal):
    written in place, since it cannot be replaced and nothing in it can be lost."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def atomic_write(path: str, data: bytes) -> None:
    """Write `data` to `path`: a stream in place, anything else atomically.

    Raises `UsageProblem` for a directory and `OutputFailed` when the system refuses (disk
    full, permission, a read-only file system); the temporary file is gone either way.
    """
    try:
        status = os.stat(path)
    except FileNotFoundError:
        status = None
    except OSError as error:
        raise _failed(path, error) from None
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise UsageProblem(f"{path} is a directory; name a file to write")
    if status is not None and not stat.S_ISREG(status.st_mode):
        return _write_through(path, path, data)  # a stream (or a block device): cannot be replaced
    target = os.path.realpath(path)  # a symlink is followed: the link stays, its target changes
    if status is not None and _identity(target) != (status.st_dev, status.st_ino):
        # A file reached through /proc that no name leads to any more (deleted, say): there is
        # nothing to rename over, so it is written in place.
        return _write_through(path, path, data)
    _replace(path, target, data, None if status is None else stat.S_IMODE(status.st_mode))


def _write_through(path: str, target: str, data: bytes) -> None:
    try:
        with open(target, "wb", buffering=0) as file:
            _write_all(file, data)
    except OSError as error:
        raise _failed(path, error, atomic=False) from None


def _replace(path: str, target: str, data: bytes, mode: int | None) -> None:
    import tempfile  # only -o and --report need it

    folder = os.path.dirname(target)
    try:
        handle, temporary = tempfile.mkstemp(prefix=".ctxfit-", suffix=".tmp", dir=folder)
    except OSError as error:
        raise _failed(path, error) from None
    try:
        # mkstemp makes 0600 files; a new file gets what open() would give it.
        os.fchmod(handle, _umask_mode() if mode is None else mode)
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(error, OSError):
            raise _failed(path, error) from None
        raise


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _failed(path: str, error: OSError, *, atomic: bool = True) -> OutputFailed:
    reason = error.strerror or str(error)
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        reason += "; free some space and run again"
    elif error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        reason += "; choose a file you may write"
    left = "it was left as it was" if atomic else "what was written may be incomplete"
    return OutputFailed(f"cannot write {path}: {reason} ({left})")


# --- standard output -------------------------------------------------------------------------


def write_stdout(data: bytes) -> None:
    """The product on stdout, as bytes, flushed now so that a failure is reported here.

    A broken pipe propagates (the reader went away: not an error); any other failure (`> /dev/full`,
    a closed stdout) is an `OutputFailed`."""
    if sys.stdout is None:
        raise OutputFailed("cannot write to standard output: it is closed")
    try:
        with _whole_on_interrupt():
            _write_all(sys.stdout.buffer, data)
            sys.stdout.buffer.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise _failed("standard output", error, atomic=False) from None


def _write_all(stream, data: bytes) -> None:
    """All of `data`: an unbuffered stream (`python -u`, PYTHONUNBUFFERED) writes what one
    system call took, which a signal can cut short."""
    view = memoryview(data)
    while view:
        view = view[stream.write(view) or 0 :]  # (None: a non-blocking stream took nothing yet)


@contextmanager
def _whole_on_interrupt() -> Iterator[None]:
    """A Ctrl-C during the write is held until the write ends, so stdout carries whole documents
    or nothing (a script reading `--json` never gets half of one). A second Ctrl-C gives the
    write up (a reader that never reads would otherwise hold ctxfit forever)."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) in (
        signal.SIG_IGN,
        None,
    ):
        yield  # signals reach only the main thread; an ignored Ctrl-C stays ignored
        return
    held: list[int] = []

    def hold(number: int, frame: object) -> None:
        if held:
            raise KeyboardInterrupt
        held.append(number)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt


class StdoutText:
    """Standard output as a text file for rich, with write failures reported as `OutputFailed`."""

    def write(self, text: str) -> int:
        if sys.stdout is None:
            raise OutputFailed("cannot write to standard output: it is closed")
        try:
            return sys.stdout.write(text)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise _failed("standard output", error, atomic=False) from None

    def flush(self) -> None:
        if sys.stdout is None:
            return
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise _failed("standard output", error, atomic=False) from None

    def isatty(self) -> bool:
        return sys.stdout is not None and sys.stdout.isatty()

    def __getattr__(self, name: str):
        return getattr(sys.stdout, name)


def discard_stdout() -> None:
    """Point stdout at /dev/null, so that what is still buffered does not fail again (with a
    second message) when Python flushes it on exit. After a broken pipe or a failed write."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
