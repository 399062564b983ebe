"""What a reader of an agent's log passed over: records of a type it does not know, and keys it
does not know on the records it reads (issue #34: agents add both every week; neither stops a
read). Counted per kind, as plain data for the CLI to report once per kind.

Each agent's reader names the record types it knows (read, or known and ignored: bookkeeping)
and the keys it knows on them, as constants in its own module; anything else is counted here.

>>> skipped = Skipped()
>>> skipped.record("last-prompt"); skipped.record("last-prompt"); skipped.record("mode")
>>> skipped.keys({"type": "user", "uuid": "u", "shiny": 1}, frozenset(("type", "uuid")))
>>> skipped.as_dict()
{'records': {'last-prompt': 2, 'mode': 1}, 'keys': {'shiny': 1}}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .reading import Record

#: The name counted for a record with no type at all (or one that is not a string).
UNNAMED = "(no type)"


class Skipped:
    """Counts of skipped record types and unknown keys, for one input."""

    __slots__ = ("_keys", "_records")

    def __init__(self) -> None:
        self._records: dict[str, int] = {}
        self._keys: dict[str, int] = {}

    def record(self, kind: object) -> None:
        """A record of type `kind` that the reader does not know was passed over."""
        name = kind if isinstance(kind, str) and kind else UNNAMED
        self._records[name] = self._records.get(name, 0) + 1

    def keys(self, value: dict, known: frozenset[str]) -> None:
        """The keys of a record the reader reads that are not in `known`."""
        if len(value) <= len(known) and value.keys() <= known:  # (the common case, at C speed)
            return
        for key in value.keys() - known:
            self._keys[key] = self._keys.get(key, 0) + 1

    def documents(
        self, records: Iterable[Record], recognise: Callable[[object], bool], known: frozenset[str]
    ) -> Iterator[tuple[Record, dict]]:
        """The records of a log of whole documents (one session each) that `recognise` takes,
        each with its value, its keys not in `known` counted; any other record counted as
        skipped by its type."""
        for record in records:
            value = record.value
            if not recognise(value) or not isinstance(value, dict):
                self.record(value.get("type") if isinstance(value, dict) else type(value).__name__)
                continue
            self.keys(value, known)
            yield record, value

    def merge(self, other: dict[str, dict[str, int]]) -> None:
        """Add counts given as `as_dict` gives them (a piece of a log read by another process)."""
        for mine, theirs in ((self._records, other.get("records", {})), (self._keys, other.get("keys", {}))):
            for name, count in theirs.items():
                mine[name] = mine.get(name, 0) + count

    def __bool__(self) -> bool:
        return bool(self._records or self._keys)

    def as_dict(self) -> dict[str, dict[str, int]]:
        """`{"records": {type: count}, "keys": {key: count}}`, most frequent first."""
        return {"records": _by_count(self._records.items()), "keys": _by_count(self._keys.items())}


def _by_count(counts: Iterable[tuple[str, int]]) -> dict[str, int]:
    return dict(sorted(counts, key=lambda item: (-item[1], item[0])))


def summary(skipped: dict[str, dict[str, int]], *, every: bool = False, shown: int = 5) -> list[str]:
    """One line per kind of thing skipped, as `estimate` and `fit` say it on stderr: the most
    frequent `shown` names and "…", or `every` name.

    >>> summary({"records": {"last-prompt": 75, "mode": 75, "x": 1}, "keys": {}}, shown=2)
    ['skipped 151 records ctxfit does not read: last-prompt 75, mode 75, …']
    """
    lines = []
    for what, counts in (("records", skipped.get("records", {})), ("keys", skipped.get("keys", {}))):
        if not counts:
            continue
        names = list(counts.items())
        listed = ", ".join(f"{name} {count:,}" for name, count in (names if every else names[:shown]))
        more = "" if every or len(names) <= shown else ", …"
        noun = "records" if what == "records" else "keys on records"
        lines.append(f"skipped {sum(counts.values()):,} {noun} ctxfit does not read: {listed}{more}")
    return lines
