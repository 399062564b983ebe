"""Writing the files a command names (`-o`, `--report`): all or nothing, and never over an input.

A regular file (or one still to be made) is written through a temporary file renamed into
place, so a failure or Ctrl-C leaves the old file or none, never a partial one; an existing
file keeps its mode, a new one gets the umask's. A symlink is followed to its target, so the
link stays a link. A special file (`/dev/null`, `/dev/stdout`, a FIFO) cannot be replaced and is
written through. A directory, or a file that is also an input, is refused before anything is
read or written.
"""

from __future__ import annotations

import errno
import os
import stat
import sys

from ..errors import OutputFailed, UsageProblem


def check_outputs(outputs: dict[str, str | None], inputs: list[str]) -> None:
    """Refuse outputs that would destroy an input or cannot be files; `outputs` maps each option
    (`--output`) to the path it names. Called before any input is read."""
    seen: dict[tuple[int, int], str] = {}
    for source in inputs:
        if source != "-" and (identity := _identity(source)) is not None:
            seen[identity] = f"the input {source}"
    for option, path in outputs.items():
        if path is None:
            continue
        if os.path.isdir(path):
            raise UsageProblem(f"{option} {path} is a directory; name a file to write")
        identity = _identity(path)
        if identity is not None and identity in seen and not _is_special(path):
            raise UsageProblem(f"{option} {path} is {seen[identity]}: writing it would destroy it; "
                               "name another file")
        if identity is not None:
            seen[identity] = "also named by another option"


def _through(path: str) -> bool:
    """Paths under /dev and /proc (`/dev/stdout`, `/dev/fd/3`) are written through even when they
    lead to a regular file: the caller means the stream, not the file behind it."""
    return os.path.abspath(path).startswith(("/dev/", "/proc/"))


def _identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of what `path` names after following links; None if it does not exist."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _is_special(path: str) -> bool:
    """A character device or FIFO (`/dev/null`, `/dev/stdout` on a terminal): writing one twice
    destroys nothing."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def atomic_write(path: str, data: bytes) -> None:
    """Write `data` to `path`: a regular file atomically, a special file through.

    Raises `UsageProblem` for a directory and `OutputFailed` when the system refuses (disk
    full, permission, a read-only file system); the temporary file is gone either way.
    """
    if _through(path):
        return _write_through(path, path, data)
    target = os.path.realpath(path)  # a symlink is followed: the link stays, its target changes
    try:
        status = os.stat(target)
    except FileNotFoundError:
        status = None
    except OSError as error:
        raise _failed(path, error) from None
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise UsageProblem(f"{path} is a directory; name a file to write")
    if (status is not None and not stat.S_ISREG(status.st_mode)) or _through(path):
        _write_through(path, target, data)
    else:
        _replace(path, target, data, None if status is None else stat.S_IMODE(status.st_mode))


def _write_through(path: str, target: str, data: bytes) -> None:
    try:
        with open(target, "wb", buffering=0) as file:
            view = memoryview(data)
            while view:
                view = view[file.write(view):]
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
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise _failed("standard output", error, atomic=False) from None


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
