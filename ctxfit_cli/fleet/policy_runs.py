"""A big log's policies replayed side by side: each walks the same held history in a process of
its own, forked with it, and the results come back in the order the policies were asked for.

A replay of one big log runs its policies one after the other on one core (the first one
while the log is still being read, `replay_file.replay`); since `estimate` reads such a log on every
core, that made `replay` over four times `estimate` (issue #24 asks for three at most). The
forked workers are `formats.workers.Workers`: Ctrl-C stops them at once, and a worker that dies
is reported by the file it was on. Where files are already spread over the cores (`--jobs`),
each file's policies stay in its one process.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..formats.parallel import cores

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..core.options import FitOptions
    from ..replay.simulation import PolicyReplay

#: A file this big has its policies replayed side by side (a smaller one: forking costs more
#: than it saves); the size from which a log is held in outline (`log_outline.MIN_BYTES`).
MIN_BYTES = 64 << 20
#: What the workers replay, set before they fork (module state: they inherit it).
_HISTORY: tuple[Any, ...] | None = None


def worth_it(path: str) -> bool:
    """Whether the policies of the file at `path` are worth replaying side by side."""
    return path != "-" and os.path.isfile(path) and os.path.getsize(path) >= MIN_BYTES


def replay_policies(
    transcript: Transcript,
    names: list[str],
    options: FitOptions,
    *,
    prices: Any,
    min_cacheable: int,
    side_by_side: bool,
) -> dict[str, PolicyReplay]:
    """Each policy of `names` over the held `transcript`, by name, in that order: on every core
    when `side_by_side` and there are cores and policies to share, else one after the other."""
    global _HISTORY
    workers = min(cores(), len(names))
    if not side_by_side or workers < 2:
        return {name: replay_one(transcript, name, options, prices, min_cacheable) for name in names}
    from ..formats.workers import Workers

    _HISTORY = (transcript, options, prices, min_cacheable)
    try:
        with Workers(workers, tasks=len(names)) as pool:
            return dict(zip(names, pool.map(_replay_held, names, name=transcript.path)))
    finally:
        _HISTORY = None


def _replay_held(name: str) -> PolicyReplay:
    """In a worker: policy `name` over the history it was forked with."""
    assert _HISTORY is not None  # (set before the workers forked)
    transcript, options, prices, min_cacheable = _HISTORY
    return replay_one(transcript, name, options, prices, min_cacheable)


def replay_one(transcript: Transcript, name: str, options: FitOptions, prices: Any, min_cacheable: int) -> PolicyReplay:
    """Policy `name` over `transcript` (held, or streamed as it is read)."""
    from ..replay.policies import POLICIES
    from ..replay.simulation import replay

    return replay(transcript, POLICIES[name], options, prices=prices, min_cacheable=min_cacheable)
