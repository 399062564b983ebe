"""What ctxfit computed about a file, kept between runs in the user's cache folder, so that a
file that has not changed since is not read again (`sessions`, `estimate`, and `watch`'s state).

The one place that owns the cache folder (`$XDG_CACHE_HOME/ctxfit`, else `~/.cache/ctxfit`:
created private to the user, 0700, every file 0600):

- `summaries/`: one entry per (file, command, options, ctxfit's code), named by a digest of
  them, holding the file's identity when it was read and what was computed. An entry is used
  only if the file's identity now is the same: device, inode, size, modification time, and a
  digest of its first and last `EDGE` bytes. Anything else (a log that grew, shrank, or changed
  anywhere) is read again: a summary of a whole history (the sizes the policies would send, the
  fixed part inferred from every call) cannot be extended by new records without the history,
  so a grown log is re-read rather than given a wrong number. (`watch`, whose state is a
  follower's, reads a grown log on from where it stopped: `follow.py`.)
- `watch/`: `watch`'s state of each followed log (`live_state.py`), written the same way.

Never a wrong number from a bad entry: an entry is a magic line, a digest of its body and the
body; one truncated, with flipped bytes, of another version, or half written is ignored (and
rewritten by this run). Writes go to a temporary file renamed over the entry (two runs at once
leave one whole entry). The summaries are bounded (`MAX_BYTES`): when a write passes the bound,
the least recently used entries (a hit touches its entry) are dropped down to three quarters.
Nothing here raises for the cache's sake: a folder that cannot be written is a run without cache.
"""

from __future__ import annotations

import functools
import marshal
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

#: Bytes of the file's start and end digested into its identity.
EDGE = 4096
#: The summaries kept at most, in bytes of entries (least recently used dropped beyond).
MAX_BYTES = 64 << 20
_MAGIC = b"ctxfit-cache 1\n"
_DIGEST = 16
#: How a body is serialized: plain data with marshal (no import, the fastest to read back, as a
#: warm `sessions` reads it), anything else (an estimate's report objects) with pickle.
_MARSHAL, _PICKLE = b"m", b"p"

try:  # blake2b without loading OpenSSL (`hashlib` does, ~3 ms of a warm run)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover (a Python built without it)
    from hashlib import blake2b


class Identity(NamedTuple):
    """A file as it is now: what tells whether it changed since an entry was written."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    head: bytes
    tail: bytes


def folder(environ: Mapping[str, str] | None = None) -> Path:
    """The user's cache folder for ctxfit.

    >>> str(folder({"XDG_CACHE_HOME": "/c", "HOME": "/h"})), str(folder({"HOME": "/h"}))
    ('/c/ctxfit', '/h/.cache/ctxfit')
    """
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or os.path.join(environ.get("HOME") or str(Path.home()), ".cache")
    return Path(base) / "ctxfit"


def identity(path: str) -> Identity | None:
    """The file's identity now, or None for what is no regular file (stdin, a FIFO, a URI) or
    cannot be read: those are never cached. (Asked of the path before it is opened: opening a
    FIFO would wait for its writer, and closing it unread would break the writer's pipe.)"""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        if os.path.exists(path + "-wal"):  # an agent's SQLite database being written: its news is there
            return None
        with open(path, "rb") as stream:
            status = os.fstat(stream.fileno())
            if not stat.S_ISREG(status.st_mode):
                return None
            head, tail = _edges(stream, status.st_size)
    except (OSError, ValueError):
        return None
    return Identity(status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, head, tail)


def _edges(stream: BinaryIO, size: int) -> tuple[bytes, bytes]:
    """Digests of the file's first `EDGE` bytes and of its last (at most `EDGE`, after those)."""
    head = stream.read(min(EDGE, size))
    start = max(EDGE, size - EDGE)
    tail = b""
    if size > start:
        stream.seek(start)
        tail = stream.read(size - start)
    return _hash(head), _hash(tail)


@functools.cache
def code_identity() -> str:
    """ctxfit's version and the newest of its source files: a new version, or an edited checkout,
    starts afresh (an entry computed by other code is never used)."""
    from .. import __version__

    python = ".".join(map(str, sys.version_info[:2]))  # (marshal's format is the interpreter's)
    return f"{__version__}/{python}/{_newest(Path(__file__).resolve().parent.parent)}"


def entry_name(namespace: str, path: str, options: object) -> str:
    """The entry of `path` (as given, and where it resolves) for a command and its options."""
    text = f"{namespace}\0{code_identity()}\0{options!r}\0{path}\0{os.path.abspath(path)}"
    return blake2b(text.encode("utf-8", "surrogateescape"), digest_size=20).hexdigest()


def lookup(name: str, now: Identity, base: Path | None = None) -> Any | None:
    """The value kept for entry `name` if the file's identity is still `now`, else None."""
    entry = (base or folder()) / "summaries" / name
    kept = read(entry)
    if not isinstance(kept, tuple) or len(kept) != 2 or kept[0] != tuple(now):
        return None
    try:
        os.utime(entry)  # used: the last to be dropped
    except OSError:
        pass
    return kept[1]


def store(name: str, now: Identity, value: Any, base: Path | None = None, limit: int = MAX_BYTES) -> None:
    """Keep `value` for entry `name`, computed from the file as `now` describes it."""
    summaries = (base or folder()) / "summaries"
    if write(summaries / name, (tuple(now), value)):
        _bound(summaries, limit)


def read(entry: Path) -> Any | None:
    """An entry's value, or None if it is missing or not whole and ours."""
    try:
        with open(entry, "rb") as stream:
            data = stream.read()
    except OSError:
        return None
    start = len(_MAGIC) + 1 + _DIGEST
    kind, body = data[len(_MAGIC) : len(_MAGIC) + 1], data[start:]
    if not data.startswith(_MAGIC) or data[start - _DIGEST : start] != _hash(kind + body):
        return None
    try:
        if kind == _MARSHAL:
            return marshal.loads(body)
        import pickle

        return pickle.loads(body)
    except Exception:  # (the digest matched: only an entry written by other code gets here)
        return None


def write(entry: Path, value: Any) -> bool:
    """Write an entry atomically, private to the user; False if it could not be written."""
    import tempfile

    try:
        kind, body = _serialized(value)
        entry.parent.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # (the parents: as they are)
        entry.parent.mkdir(exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(dir=entry.parent, prefix=".", suffix=".tmp")  # 0600
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(_MAGIC + kind + _hash(kind + body) + body)
            os.replace(temporary, entry)
        except BaseException:
            os.unlink(temporary)
            raise
    except Exception:  # (cannot be written or serialized: the run goes on without it)
        return False
    return True


def _serialized(value: Any) -> tuple[bytes, bytes]:
    try:
        return _MARSHAL, marshal.dumps(value)
    except ValueError:  # not plain data
        import pickle

        return _PICKLE, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _bound(summaries: Path, limit: int) -> None:
    """Drop the least recently used entries once they pass `limit` bytes, down to 3/4 of it."""
    try:
        entries = [(e.stat().st_mtime_ns, e.stat().st_size, e.path) for e in os.scandir(summaries) if e.is_file()]
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    if total <= limit:
        return
    for _, size, path in sorted(entries):
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
        if total <= limit * 3 // 4:
            return


def _hash(data: bytes) -> bytes:
    return blake2b(data, digest_size=_DIGEST).digest()


def _newest(root: Path) -> int:
    newest = 0
    try:
        for item in os.scandir(root):
            if item.is_dir(follow_symlinks=False):
                if item.name != "__pycache__":
                    newest = max(newest, _newest(Path(item.path)))
            else:
                newest = max(newest, item.stat().st_mtime_ns)
    except OSError:
        pass
    return newest
