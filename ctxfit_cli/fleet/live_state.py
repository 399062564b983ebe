"""A followed log's state kept between runs, so that a status line (a new `ctxfit watch --once
--statusline` process after every reply) reads only what the log wrote since the last run, not
the whole log again.

The state of one log (`LiveSession`: where its follower stopped, the line being written, the
running counts) is kept in the user's cache folder (`summary_cache.py`: `<cache>/ctxfit/watch`,
private to the user, written atomically, an entry not whole ignored), one file per log, named by
a digest of the log's path and ctxfit's version (a new version starts afresh). A state that
cannot be read is dropped: the log is then read from its start, which gives the same sizes. A
log replaced or shrunk since is read again from its start too (`follow.py`).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from . import summary_cache
from .live import LiveSession


def cache_folder(environ: dict[str, str] | None = None) -> Path:
    """Where the states are kept.

    >>> str(cache_folder({"XDG_CACHE_HOME": "/c", "HOME": "/h"})), str(cache_folder({"HOME": "/h"}))
    ('/c/ctxfit/watch', '/h/.cache/ctxfit/watch')
    """
    return summary_cache.folder(environ) / "watch"


def _state_file(path: str, folder: Path) -> Path:
    from .. import __version__

    digest = hashlib.blake2b(f"{__version__}\0{os.path.abspath(path)}".encode(), digest_size=16).hexdigest()
    return folder / f"{digest}.state"


def load(path: str, folder: Path | None = None) -> LiveSession:
    """The log's session as the last run left it, or a new one."""
    session = summary_cache.read(_state_file(path, folder or cache_folder()))
    return session if isinstance(session, LiveSession) and session.path == path else LiveSession(path)


def save(session: LiveSession, folder: Path | None = None) -> None:
    """Keep the session's state for the next run (quietly not, when the folder cannot be written)."""
    summary_cache.write(_state_file(session.path, folder or cache_folder()), session)
