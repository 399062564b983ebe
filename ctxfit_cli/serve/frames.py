"""The frames between the proxy and its fitting workers (`pool.py`, `worker.py`).

A frame is a message and a body: an 8-byte header (the two lengths, big-endian), the message
pickled, then the body's bytes as they are (a request body of megabytes is not pickled again).
Both ends are this package's own processes, started by the proxy: nothing else writes here.
"""

from __future__ import annotations

import asyncio
import pickle
import struct
from typing import Any, BinaryIO

HEADER = struct.Struct(">II")


def frame(message: Any, body: bytes | memoryview = b"") -> list[bytes | memoryview]:
    """The pieces of one frame, to be written in order."""
    meta = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return [HEADER.pack(len(meta), len(body)), meta, body]


def write_frame(out: BinaryIO, message: Any, body: bytes = b"") -> None:
    out.write(b"".join(frame(message, body)))  # one write: the proxy's loop wakes once
    out.flush()


def read_frame(stream: BinaryIO) -> tuple[Any, bytes] | None:
    """The next frame (blocking), or None once the other end has closed the channel."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    meta_size, body_size = HEADER.unpack(header)
    meta, body = stream.read(meta_size), stream.read(body_size) if body_size else b""
    if len(meta) < meta_size or len(body) < body_size:
        return None
    return pickle.loads(meta), body


async def receive(reader: asyncio.StreamReader) -> tuple[Any, bytes]:
    """The next frame (raises `asyncio.IncompleteReadError` once the channel is closed)."""
    meta_size, body_size = HEADER.unpack(await reader.readexactly(HEADER.size))
    meta = await reader.readexactly(meta_size)
    body = await reader.readexactly(body_size) if body_size else b""
    return pickle.loads(meta), body
