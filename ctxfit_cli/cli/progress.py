"""A progress bar on stderr for work that takes a while: only on a terminal, only after ~1 s.

Never shown when stderr is not a terminal (a pipe, a file, CI logs) or with `--json`, so no
output that a script reads ever carries it. `CTXFIT_PROGRESS_AFTER` (seconds) changes the delay;
tests set it to 0.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress

#: Work that finishes sooner shows nothing.
DELAY = 1.0


class FileProgress:
    """Counts files done; draws a transient bar once the work has run for `DELAY` seconds."""

    def __init__(self, total: int, *, enabled: bool, what: str = "reading") -> None:
        self.enabled = enabled and sys.stderr is not None and sys.stderr.isatty()
        self.done = 0
        self._lock = threading.Lock()
        self._bar: Progress | None = None
        self._timer: threading.Timer | None = None
        if not self.enabled:
            return
        # Only on a terminal: rich's progress machinery costs ~5 ms to import.
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        from .render import stderr_console

        self._bar = Progress(
            SpinnerColumn(),
            TextColumn(what),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("files"),
            TimeElapsedColumn(),
            console=stderr_console(),
            transient=True,
        )
        self._task = self._bar.add_task(what, total=total)
        self._shown = False
        self._timer = threading.Timer(_delay(), self._show)
        self._timer.daemon = True
        self._timer.start()

    def _show(self) -> None:
        with self._lock:
            if self._bar is not None and not self._shown:
                self._bar.start()
                self._shown = True

    def advance(self) -> None:
        self.done += 1
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self._bar is not None and self._shown:
                self._bar.stop()
            self._bar = None

    def __enter__(self) -> FileProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _delay() -> float:
    try:
        return float(os.environ.get("CTXFIT_PROGRESS_AFTER", DELAY))
    except ValueError:
        return DELAY
