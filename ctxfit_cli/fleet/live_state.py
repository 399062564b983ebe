"""A followed log's state kept between runs, so that a status line (a new `ctxfit watch --once
--statusline` process after every reply) reads only what the log wrote since the last run, not
the whole log again.

The state of one log (`LiveSession`: where its follower stopped, the line being written, the
running counts) is kept in the user's cache folder (`$XDG_CACHE_HOME/ctxfit/watch`, else
`~/.cache/ctxfit/watch`, created private to the user), one file per log, named by a digest of
the log's path and ctxfit's version (a new version starts afresh). It is written atomically (two
status lines at once leave one whole state). A state that cannot be read is dropped: the log is
then read from its start, which gives the same sizes. A log replaced or shrunk since is read
again from its start too (`follow.py`).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Mapping
from pathlib import Path

from .live import LiveSession


def cache_folder(environ: Mapping[str, str] | None = None) -> Path:
    """Where the states are kept.

    >>> str(cache_folder({"XDG_CACHE_HOME": "/c", "HOME": "/h"})), str(cache_folder({"HOME": "/h"}))
    ('/c/ctxfit/watch', '/h/.cache/ctxfit/watch')
    """
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or os.path.join(environ.get("HOME") or str(Path.home()), ".cache")
    return Path(base) / "ctxfit" / "watch"


def _state_file(path: str, folder: Path) -> Path:
    from .. import __version__

    digest = hashlib.blake2b(f"{__version__}\0{os.path.abspath(path)}".encode(), digest_size=16).hexdigest()
    return folder / f"{digest}.state"


def load(path: str, folder: Path | None = None) -> LiveSession:
    """The log's session as the last run left it, or a new one."""
    try:
        with open(_state_file(path, folder or cache_folder()), "rb") as stream:
            session = pickle.load(stream)
    except Exception:  # none yet, or one this version cannot read: start from the log's beginning
        return LiveSession(path)
    return session if isinstance(session, LiveSession) and session.path == path else LiveSession(path)


def save(session: LiveSession, folder: Path | None = None) -> None:
    """Keep the session's state for the next run (quietly not, when the folder cannot be written)."""
    folder = folder or cache_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(handle, "wb") as stream:
            pickle.dump(session, stream, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, _state_file(session.path, folder))
    except OSError:
        return
