"""Inputs that are SQLite databases: the agents that keep their sessions in one (Goose's
`sessions.db`, Crush's `crush.db`) make JSON records of it (`Agent.database`, one per session),
and from there detection, reading and `sessions`' descriptions go on as for a JSON log.

A database is known here by its first bytes only; whose it is, by its name and tables, is each
agent's to say. It is read from its file (SQLite cannot read a stream), read-only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from ..errors import BadInput
from .reading import SQLITE_HEADER as HEADER
from .reading import Record


def is_database(stream: BinaryIO) -> bool:
    """Whether the stream starts as a SQLite database does (read without consuming it)."""
    try:
        if hasattr(stream, "peek"):
            return stream.peek(len(HEADER))[: len(HEADER)] == HEADER
        if stream.seekable():
            start = stream.tell()
            try:
                return stream.read(len(HEADER)) == HEADER
            finally:
                stream.seek(start)
    except (OSError, ValueError, AttributeError):
        pass
    return False


def database_records(name: str, stream: BinaryIO) -> Iterator[Record]:
    """The records the agent whose database this is makes of it, one per session."""
    import sqlite3

    from ..agents import REGISTRY

    path = getattr(stream, "name", None)
    if not isinstance(path, str) or name in ("-", "<stdin>"):
        raise BadInput(name, None, "is a SQLite database, which is read from its file: give its path, not a stream")
    readers = [agent for agent in REGISTRY if agent.database is not None]
    try:
        for agent in readers:
            records = agent.database(path) if agent.database is not None else None
            if records is not None:
                yield from records
                return
    except sqlite3.Error as error:
        raise BadInput(name, None, f"cannot read this SQLite database: {error}") from None
    known = ", ".join(agent.looks_like for agent in readers)
    raise BadInput(name, None, f"a SQLite database of no agent ctxfit reads (it reads {known})")
