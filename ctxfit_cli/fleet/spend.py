"""A log's recorded spend read on its own, or added up while its messages are read (the tally
itself: `agents/spend.py`; what each agent's records bill: `Agent.billed`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..agents import BY_NAME
from ..agents.spend import FAST, LONG_CONTEXT, SUBAGENT, Call, Parts, Spend, Tally  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from ..formats.reading import Record


def billing(format: str) -> Callable[[Spend, object], None] | None:
    """What adds one record of a log of `format` to a `Spend`; None for a log that records no bill."""
    agent = BY_NAME.get(format)
    return agent.billed if agent is not None else None


def spend_of_file(path: str, format: str) -> Tally:
    """The tally of one log file that records its bill, read on its own (`estimate` of one file,
    which does not describe its session, and whose reading did not add it up: `Watch`); empty
    for other formats."""
    from ..formats.reading import open_input, read_records

    spend = Spend()
    add = billing(format)
    if add is None or path == "-":
        return {}
    with open_input(path) as stream:
        for record in read_records(path, stream):
            add(spend, record.value)
    return spend.totals()


class Watch:
    """The spend of a log added up as its records are read for its messages
    (`formats.read_transcripts(watch=...)`), so that `estimate` of one log reads it once."""

    def __init__(self) -> None:
        self._spend = Spend()
        self._whole = False

    def __call__(self, format: str, records: Iterator[Record]) -> Iterator[Record]:
        add = billing(format)
        return self._added(add, records) if add is not None else records

    def _added(self, add: Callable[[Spend, object], None], records: Iterator[Record]) -> Iterator[Record]:
        spend = self._spend
        for record in records:
            add(spend, record.value)
            yield record
        self._whole = True

    def totals(self) -> Tally | None:
        """The log's tally once every record was read, else None (and for a format that records none)."""
        return self._spend.totals() if self._whole else None
