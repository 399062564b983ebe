"""`validate.scan` of a growing request, read again only from near where it changed.

Each step of an agent loop is checked whole before it leaves (DESIGN §8), and the checks of its
sequence (roles alternate, every call answered once, ids unique) walk every message: 7 ms of a
step of a 3,200-message history. The walk's state is noted every `validate.MARK_EVERY` messages
while the request holds no problem, so the next step starts from the last note before the first
message whose checks differ from last time's (they are kept with each message: the same message
has the very same checks; a result cleared since has checks of its own, most often equal).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from .growing import common_prefix
from .validate import Checked, scan, scan_from

#: The dialects whose sequence checks can be resumed.
RESUMABLE = ("anthropic", "openai")


class ScanSteps:
    """The last request's checks and the notes of its scan."""

    def __init__(self) -> None:
        self._dialect = ""
        self._checked: Sequence[Checked] = ()
        self._marks: list[tuple[int, Any]] = []

    def problems(self, checked: Sequence[Checked], dialect: str) -> list[str]:
        """`scan(checked, dialect)`."""
        if dialect not in RESUMABLE:
            return scan(checked, dialect)
        marks: list[tuple[int, Any]] = []
        start, state = 0, None
        if dialect == self._dialect and self._checked:
            # The messages from the first changed one, and the last one checked before (an
            # empty last reply is allowed only last), are checked again.
            last = self._checked
            equal = common_prefix(min(len(checked), len(last)), lambda n: checked[:n] == last[:n])
            unchanged = min(equal, len(last) - 1)
            marks = self._marks[: bisect.bisect_right(self._marks, unchanged, key=lambda mark: mark[0])]
            if marks:
                start, state = marks[-1]
                marks.pop()  # (noted again as the walk passes it)
        problems = scan_from(checked, dialect, start, state, marks)
        self._dialect, self._checked, self._marks = dialect, checked, marks
        return problems
