"""Reading an agent's SQLite database without touching it: opened read-only (a `mode=ro` URI, so
that an agent writing it meanwhile is never locked out or changed; `immutable` when no `-wal` file
says it is being written, so that no file is left beside it), its tables and columns listed
to tell whose it is, its rows given as plain dicts.

`sqlite3` is imported inside the functions: the registry stays light (`agents/__init__.py`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import closing
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import quote


def tables(path: str) -> dict[str, frozenset[str]]:
    """Each table of the database at `path` with its columns ({} for a file that is no database)."""
    import sqlite3

    try:
        with closing(_open(path)) as connection:
            names = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            return {
                name: frozenset(row[1] for row in connection.execute(f"PRAGMA table_info({_quoted(name)})"))
                for name in names
            }
    except sqlite3.DatabaseError:
        return {}


def holds(path: str, columns: Mapping[str, frozenset[str]]) -> bool:
    """Whether `path` is a `.db` file whose tables have (at least) these columns, table by table."""
    if PurePath(path).suffix != ".db":
        return False
    found = tables(path)
    return all(needed <= found.get(table, frozenset()) for table, needed in columns.items())


def rows(path: str, query: str, parameters: tuple = ()) -> Iterator[dict[str, Any]]:
    """The rows of a query as dicts (column -> value), read one at a time."""
    with closing(_open(path)) as connection:
        cursor = connection.execute(query, parameters)
        columns = [column[0] for column in cursor.description or ()]
        for row in cursor:
            yield dict(zip(columns, row))


def _open(path: str):
    """A read-only connection. A database in WAL mode (Goose's) with no `-wal` file beside it
    (its agent not running) is opened `immutable`: a read-only connection would otherwise
    create `-wal` and `-shm` files in the agent's folder and leave them there."""
    import sqlite3

    file = Path(path).resolve()
    live = Path(f"{file}-wal").exists()
    uri = "file:" + quote(str(file)) + ("?mode=ro" if live else "?mode=ro&immutable=1")
    return sqlite3.connect(uri, uri=True)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
