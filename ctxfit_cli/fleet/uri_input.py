"""Reading a URI (`s3://…`, `gs://…`, `https://…`, any scheme fsspec knows) as it downloads.

`--engine ray` reads inputs where its tasks run, and a URI is how a node reaches a log it does
not mount. The object is never copied to local disk: the readers get a stream of it, as they
get standard input, and apply the line limit to the bytes as they arrive (`reading.lines_of`
asks for at most the limit plus one byte of a line), so a one-line 3 GB object stops downloading
a read buffer (1 MiB) past the limit, plus what the protocol reads ahead (fsspec's HTTP: a 5 MiB
block), with the usual "line longer than N MiB" error: 64.4 MiB read at the default 64 MiB limit,
nothing written to disk. A reader that needs a second pass (a session's description, its
digest) opens the URI again, as it opens a file again. Like standard input, the object cannot be
scanned ahead: a chat log whose first messages fit either API keeps them until one decides.
"""

from __future__ import annotations

import io
from typing import BinaryIO

from ..errors import BadInput, MissingExtra
from ..formats.reading import BUFFER


def is_uri(path: str) -> bool:
    """Whether an input is a URI of a scheme other than `file` (a `file://` URI is a path).

    >>> is_uri("s3://bucket/a.jsonl"), is_uri("file:///tmp/a.jsonl"), is_uri("logs/a.jsonl")
    (True, False, False)
    """
    scheme, found, _ = path.partition("://")
    return bool(found) and scheme.isidentifier() and scheme.lower() != "file"


def open_uri(uri: str) -> BinaryIO:
    """The object at `uri`, opened for reading from the start, downloaded as it is read."""
    try:
        import fsspec
    except ImportError:
        raise MissingExtra(f"{uri}: reading URIs needs fsspec on every node: pip install fsspec") from None
    try:
        source = fsspec.open(uri, "rb").open()
    except ImportError as error:  # the scheme's package (s3fs, gcsfs, aiohttp, …) is not installed
        raise MissingExtra(f"{uri}: {error}") from None
    except FileNotFoundError:
        raise BadInput(uri, None, "no such file") from None
    except PermissionError:
        raise BadInput(uri, None, "permission denied") from None
    except Exception as error:  # each protocol raises its own (aiohttp's, botocore's, ValueError)
        raise BadInput(uri, None, f"cannot open: {error}") from None
    return io.BufferedReader(Download(source), BUFFER)


class Download(io.RawIOBase):
    """An fsspec file as a raw stream that cannot seek, so that the readers read it once, from
    the start, as they read standard input. Its failures are `OSError`s (the readers report
    those as "cannot read" on the line they were at); `read_bytes` counts what arrived."""

    def __init__(self, source) -> None:
        self.source = source
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            data = self.source.read(len(buffer))
        except OSError:
            raise
        except Exception as error:  # a protocol's own (aiohttp.ClientPayloadError, say)
            raise OSError(f"{type(error).__name__}: {error}") from error
        size = len(data)
        buffer[:size] = data
        self.read_bytes += size
        return size

    def close(self) -> None:
        if not self.closed:
            try:
                self.source.close()  # (over HTTP: the connection, so the download stops)
            finally:
                super().close()
