"""A body crosses to its fitting worker as what follows what it shares with its conversation's last.

An agent resends its whole history at every step: a 400,000-token body is ~1.7 MB, almost all of
it the bytes the worker was sent one step before. Both ends of a worker's channel keep the last
body sent for each conversation (by its route, `pool.route`), the same way: each `put` in the
order of the frames, dropped least recently used first past the same number of bytes. So the
proxy sends only the new bytes and where the shared part ends (`Base`), and the worker puts the
body back together from its own copy. A worker that does not hold the base the proxy named (it
cannot happen while both keep them alike; but never trust that) answers `BASE_LOST`, and the
proxy sends that body whole.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

#: Bodies shorter than this are sent whole (the saving does not pay for the comparison).
MIN_BYTES = 16 << 10
#: A shared part shorter than this is not worth naming: the body is sent whole.
MIN_SHARED = 4 << 10
#: Why a worker did not fit a body sent against a base it does not hold (the proxy resends it).
BASE_LOST = "the worker does not hold the body this one was sent against"


class Base(NamedTuple):
    """Which conversation a body belongs to, and what it shares with the last one sent for it."""

    route: int
    ticket: int  # the frame the shared part was sent in (0: nothing shared)
    shared: int  # bytes the body shares with that one, not sent again


class Bases:
    """The last body sent for each route, within `limit` bytes (at least the latest one)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self._last: OrderedDict[int, tuple[int, bytes]] = OrderedDict()

    def get(self, route: int) -> tuple[int, bytes] | None:
        """(ticket, body) of the last body sent for `route`, or None."""
        return self._last.get(route)

    def put(self, route: int, ticket: int, body: bytes) -> None:
        old = self._last.pop(route, None)
        if old is not None:
            self.held -= len(old[1])
        self._last[route] = (ticket, body)
        self.held += len(body)
        while self.held > self.limit and len(self._last) > 1:
            _, (_, dropped) = self._last.popitem(last=False)
            self.held -= len(dropped)

    def rebuilt(self, base: Base, rest: bytes) -> bytes | None:
        """The body sent as `rest` after what it shares with `base` (None: not held here)."""
        if not base.shared:
            return rest
        last = self._last.get(base.route)
        if last is None or last[0] != base.ticket or len(last[1]) < base.shared:
            return None
        return b"".join((memoryview(last[1])[: base.shared], rest))


#: Chunk size of the common-prefix search: equal chunks are skipped at memcmp speed.
_CHUNK = 1 << 20
_FIRST_CHUNK = 1 << 12


def common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes `a` and `b` share (memcmp over chunks, then a binary search).

    >>> common_prefix(b"abcdef", b"abcxef"), common_prefix(b"abc", b"abc")
    (3, 3)
    """
    limit = min(len(a), len(b))
    # `a.startswith(view, at)` compares in place (memcmp); slices of bytes would be copied
    # first, and memoryviews compared with each other go element by element. The chunks start
    # small and double: a body of another conversation differs within its first bytes.
    view = memoryview(b)
    low, chunk = 0, _FIRST_CHUNK
    while low + chunk <= limit and a.startswith(view[low : low + chunk], low):
        low += chunk
        chunk = min(2 * chunk, _CHUNK)
    high = min(limit, low + chunk)
    while low < high:  # a[:low] == b[:low]; the first difference is before `high`
        middle = (low + high + 1) // 2
        if a.startswith(view[low:middle], low):
            low = middle
        else:
            high = middle - 1
    return low
