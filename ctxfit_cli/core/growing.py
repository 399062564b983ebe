"""How much of a growing history is what it was at the last step (a `Session`, a proxy request).

An agent resends its whole history at every step, so each step of the work on it (the repair,
the checks, the objects given back) keeps what it made for the part that did not change and
makes the rest: these find that part, at C speed (identity, not equality: a message that is the
very object it was is unchanged; an equal new object is read again).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence


def common_prefix(limit: int, same: Callable[[int], bool]) -> int:
    """The largest n ≤ `limit` with `same(n)`, for a `same` that holds up to some n and not after
    (tried whole first: a step that sends what the last one sent and more is the rule).

    >>> common_prefix(10, lambda n: n <= 7), common_prefix(10, lambda n: True)
    (7, 10)
    """
    if same(limit):
        return limit
    low, high = 0, limit - 1  # same(low) holds; the answer is below limit
    while low < high:
        middle = (low + high + 1) // 2
        if same(middle):
            low = middle
        else:
            high = middle - 1
    return low


def same_objects(new: Sequence[object], old: Sequence[object]) -> int:
    """How many leading items of `new` are the very objects of `old`.

    >>> a, b = object(), object()
    >>> same_objects([a, b, a], [a, b]), same_objects([b], [a])
    (2, 0)
    """
    return common_prefix(min(len(new), len(old)), lambda n: all(map(operator.is_, new[:n], old[:n])))
