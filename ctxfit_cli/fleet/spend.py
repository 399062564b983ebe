"""A log's recorded spend read on its own, or added up while its messages are read (the tally
itself, per agent: `formats/spend.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..agents.spend import FAST, LONG_CONTEXT, SUBAGENT, Call, Parts, Spend, Tally  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from ..formats.reading import Record


#: The formats whose logs record what each call was billed.
BILLED_FORMATS = ("claude-code", "codex")


def spend_of_file(path: str, format: str) -> Tally:
    """The tally of one Claude Code or Codex log file, read on its own (`estimate` of one file,
    which does not describe its session, and whose reading did not add it up: `Watch`); empty
    for other formats."""
    from ..formats.reading import open_input, read_records

    spend = Spend()
    if format not in BILLED_FORMATS or path == "-":
        return {}
    with open_input(path) as stream:
        for record in read_records(path, stream):
            spend.record(format, record.value)
    return spend.totals()


class Watch:
    """The spend of a log added up as its records are read for its messages
    (`formats.read_transcripts(watch=...)`), so that `estimate` of one log reads it once."""

    def __init__(self) -> None:
        self._spend = Spend()
        self._whole = False

    def __call__(self, format: str, records: Iterator[Record]) -> Iterator[Record]:
        return self._added(format, records) if format in BILLED_FORMATS else records

    def _added(self, format: str, records: Iterator[Record]) -> Iterator[Record]:
        add = self._spend.record
        for record in records:
            add(format, record.value)
            yield record
        self._whole = True

    def totals(self) -> Tally | None:
        """The log's tally once every record was read, else None (and for a format that records none)."""
        return self._spend.totals() if self._whole else None
