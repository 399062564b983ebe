"""What a proxy is told when it starts (`Settings`: the command's options), and what it counts
over its life (`Totals`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .limits import LimitRule
from .spawning import default_workers


@dataclass
class Settings:
    upstream: str
    limits: LimitRule
    max_body: int = 32 * 1024 * 1024
    #: Conversation state kept in memory (sessions and parsed bodies, least recently used
    #: dropped first): at most this many bytes, as estimated, shared by the workers, and at
    #: most this many conversations per worker.
    memory: int = 512 * 1024 * 1024
    conversations: int = 256
    #: Fitting worker processes (`pool.py`).
    workers: int = field(default_factory=lambda: default_workers())
    upstream_timeout: float = 600.0
    #: Seconds a fitting worker may take over one request before it is replaced (`pool.py`).
    fit_timeout: float = 30.0
    #: On SIGTERM or SIGINT, how long requests in flight may take to finish before they are cut.
    shutdown_grace: float = 5.0
    #: Seconds a client gets to send a request's headers, and again its body (`clients.py`).
    client_timeout: float = 30.0
    max_connections: int = 512
    log: Callable[[str], None] = print


@dataclass
class Totals:
    requests: int = 0
    fitted: int = 0
    passed_through: int = 0  # not a fitted path
    failed_open: int = 0
    rejected: int = 0
    fitted_in_worker: int = 0  # bodies a worker process answered for before they went on
    fast_path: int = 0  # bodies that provably needed no fitting: sent on without a worker (`bypass.py`, `opening.py`)
    upstream_errors: int = 0
    #: Requests whose client went away before its reply was complete.
    client_gone: int = 0
    #: WebSocket upgrades refused (426: the agent goes on over HTTPS), not counted as requests.
    websockets_refused: int = 0
    #: Why requests of a fitted path went on unfitted, by kind (`log_lines.kind_of`): how many.
    not_fitted: dict[str, int] = field(default_factory=dict)
    #: Why the provider could not be reached (`upstream.why_unreachable`): how many.
    unreachable: dict[str, int] = field(default_factory=dict)
    #: What the provider refused fitted requests with ("400 prompt is too long: N tokens …"): how many.
    refused: dict[str, int] = field(default_factory=dict)
    started: float = field(default_factory=time.time)

    def tally(self, kinds: dict[str, int], kind: str, limit: int = 100) -> None:
        """One more of `kind`; past `limit` kinds, new ones are counted under "other"."""
        key = kind if kind in kinds or len(kinds) < limit else "other"
        kinds[key] = kinds.get(key, 0) + 1
