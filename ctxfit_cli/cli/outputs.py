"""Writing files safely: all or nothing."""

from __future__ import annotations

import os
import tempfile

from ..errors import UsageProblem


def atomic_write(path: str, data: bytes) -> None:
    """Write `data` to `path` through a temporary file renamed into place.

    A failure or Ctrl-C leaves either the old file or none, never a partial one.
    """
    folder = os.path.dirname(os.path.abspath(path))
    try:
        handle, temporary = tempfile.mkstemp(prefix=".ctxfit-", suffix=".tmp", dir=folder)
    except OSError as error:
        raise UsageProblem(f"cannot write {path}: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
