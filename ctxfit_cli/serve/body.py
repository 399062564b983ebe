"""Reading the request bodies of one conversation, re-reading only the bytes that changed.

An agent resends its whole history at every step, so the body of a 400,000-token conversation
is ~2 MB of JSON, almost all of it the same bytes as last time. `BodyReader` keeps the last body,
where each of its messages sits in it, and the messages as parsed. For the next body it finds
how many leading bytes are unchanged (a memcmp), keeps the messages that lie wholly inside them
(the very same dicts, so the `Session` recognises them by identity), and parses only the rest:
the messages that changed or are new, and the fields after the `messages` array.

It also writes a fitted body back: the agent's own bytes, with the bytes of each message the
fitting left alone spliced in unchanged (DESIGN §4: unchanged messages leave byte for byte) and
only the changed ones serialized.

A body with several top-level `messages` keys is read as the provider reads it, the last one
winning: that array is the one fitted and written back (the earlier ones go on as sent).

>>> reader = BodyReader()
>>> reader.read(b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}')["messages"]
[{'role': 'user', 'content': 'hi'}]
>>> first = reader.messages[0]
>>> grown = reader.read(b'{"model": "m", "messages": [{"role": "user", "content": "hi"}, '
...                     b'{"role": "assistant", "content": "yo"}], "stream": true}')
>>> grown["messages"][0] is first, grown["stream"]
(True, True)
"""

from __future__ import annotations

import bisect
import threading
from typing import Any, NamedTuple

import orjson

from ..core.growing import same_objects
from ..formats.spans import WHITESPACE, Offsets, SpanError, elements, object_members
from .bases import common_prefix

_SYSTEM = ("system", "developer")


#: The body is not a JSON object with a `messages` list.
BodyError = SpanError


class Written:
    """The messages a reader's layout last wrote back, and their bytes: the next body is written
    again only from the first message that is not the same object as then (an agent's step sends
    the same fitted history and a few messages more; the bytes of a message kept by the reader
    are the same bytes at every step, and a changed one is the same object while it is sent)."""

    __slots__ = ("messages", "head", "content", "ends", "sources")

    def __init__(self) -> None:
        self.messages: list = []
        self.head = b""  # the body's bytes up to the array's "["
        self.content = b""  # the messages' bytes, joined by commas
        self.ends: list[int] = []  # where each message's bytes end in `content`
        self.sources: list[int] = []  # which message of the body read each one is (-1: serialized)


class Known(NamedTuple):
    """`body` begins with the first `shared` bytes of `previous` and differs right after them
    (the worker put it together so, `bases.py`)."""

    body: bytes
    previous: bytes
    shared: int


class Layout(NamedTuple):
    """Where the messages of one body are, to write it back with some of them changed."""

    raw: bytes
    messages: list
    spans: list[tuple[int, int]]
    open: int
    close: int
    #: What the reader that read this body wrote back last (None: written whole).
    written: Written | None = None

    def write(self, messages: list) -> bytes:
        """This body with `messages`: the bytes of each one read from it (the same object) are
        spliced in as they were; any other is serialized."""
        raw, spans, written = self.raw, self.spans, self.written
        head = raw[: self.open + 1]
        kept = 0
        if written is not None and written.head == head:
            kept = same_objects(messages, written.messages)
        content = memoryview(written.content)[: written.ends[kept - 1]] if kept and written else b""
        ends = written.ends[:kept] if kept and written else []
        sources = written.sources[:kept] if kept and written else []
        # The messages read from the body after those kept (the rule: the new ones at its end).
        after = max(sources, default=-1) + 1
        where = {id(m): i for i, m in enumerate(self.messages[after:], after)}
        parts: list[bytes] = []
        length = len(content)
        for message in messages[kept:]:
            i = where.get(id(message))
            if i is None and after:
                after, where = 0, {id(m): i for i, m in enumerate(self.messages)}
                i = where.get(id(message))
            if i is not None and message is self.messages[i]:
                part = raw[spans[i][0] : spans[i][1]]
            else:
                part, i = orjson.dumps(message), -1
            length += len(part) + (1 if length or parts else 0)
            parts.append(part)
            ends.append(length)
            sources.append(i)
        joined = b",".join(parts)
        content = b",".join((content, joined)) if len(content) and parts else bytes(content) + joined
        if written is not None:
            written.messages, written.head, written.content = list(messages), head, content
            written.ends, written.sources = ends, sources
        return head + content + raw[self.close :]


class BodyReader:
    def __init__(self, key: str = "messages") -> None:
        self.key = key  # the array of the conversation: "messages", or the Responses API's "input"
        self.raw = b""
        self.head: dict[str, Any] = {}  # the fields before "messages"
        self.messages: list[Any] = []
        self.spans: list[tuple[int, int]] = []  # byte range of each message in `raw`
        self.ends: list[int] = []  # the span ends, for bisect
        self.open = -1  # byte offset of the messages array's "["
        self.close = -1  # ... and of its "]"
        self.reused = 0  # messages taken from the previous body by the last `read`
        self.written = Written()  # what its layouts last wrote back
        self.own = 1  # messages up to the first that is not a system one

    def read(self, body: bytes, common: int | None = None) -> dict:
        """The request in `body` as JSON values (raises `BodyError`). `common` is
        `self.common(body)` when the caller has it already."""
        common = self.common(body) if common is None else common
        if common:
            try:
                return self._read_after(body, bisect.bisect_right(self.ends, common))
            except (ValueError, IndexError):
                pass  # not the shape expected after the unchanged part: read it all
        return self._read_all(body)

    @property
    def layout(self) -> Layout:
        """Where the messages of the last body read are."""
        return Layout(self.raw, self.messages, self.spans, self.open, self.close, self.written)

    def common(self, body: bytes, known: Known | None = None) -> int:
        """How much of `body` this reader would not read again (0: it reads it all). `known`:
        what `body` is known to share with the body it was made from (`Readers.expect`)."""
        if self.open < 0:
            return 0
        if known is not None and known.body is body and known.previous is self.raw:
            common = known.shared
        else:
            common = common_prefix(body, self.raw)
        return common if common > self.open else 0

    def continues(self, body: bytes) -> bool:
        """Whether `body` continues the conversation of the last body read: its bytes are the
        same up to the end of the first message that is not a system one (what tells a
        conversation, `conversations.conversation_key`). One memcmp: a body of another
        conversation, even one whose first message only starts the same (a team's agents told
        apart by a number), is read by a reader of its own, so that each keeps its own."""
        if self.open < 0 or len(self.ends) < self.own:
            return False
        return body.startswith(memoryview(self.raw)[: self.ends[self.own - 1]])

    # --- reading ------------------------------------------------------------------------------

    def _read_all(self, body: bytes) -> dict:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise BodyError(f"not UTF-8 ({error.reason} at byte {error.start})") from None
        members = list(object_members(text, split=self.key))
        # A repeated key: the provider reads the last one, so that is the one fitted and written.
        last = next((i for i in range(len(members) - 1, -1, -1) if members[i].key == self.key), None)
        if last is None or members[last].elements is None:
            raise BodyError(f'no "{self.key}" list')
        found = members[last]
        assert found.elements is not None  # (checked above)
        head = {m.key: m.value for m in members[:last]}
        fields = {m.key: m.value for m in members[last + 1 :]}
        self._keep(body, head, found.value, found.elements, 0, found.start, found.end - 1)
        return {**head, self.key: found.value, **fields}

    def _read_after(self, body: bytes, kept: int) -> dict:
        """Keep the first `kept` messages (their bytes are unchanged) and read the rest."""
        start = self.spans[kept - 1][1] if kept else self.open + 1
        text = body[start:].decode("utf-8")
        byte = Offsets(text, start)
        new, spans, i = elements(text, 0, byte, first=kept == 0)
        rest = text[i:].strip(WHITESPACE)
        closed = byte.at(i - 1)
        if rest == "}":
            fields = {}
        elif rest.startswith(","):
            fields = orjson.loads("{" + rest[1:])
            if self.key in fields:
                raise ValueError(f"a later {self.key!r} key: the provider reads that one")
        else:
            raise ValueError("unexpected bytes after the messages")
        head = self.head
        ends = self.ends[:kept] + [end for _, end in spans]
        self._keep(body, head, self.messages[:kept] + new, self.spans[:kept] + spans, kept, self.open, closed, ends)
        return {**head, self.key: self.messages, **fields}

    def _keep(
        self,
        body: bytes,
        head: dict,
        messages: list,
        spans: list,
        reused: int,
        opened: int,
        closed: int,
        ends: list[int] | None = None,
    ) -> None:
        """`ends`: where the spans end, when the caller has them (the kept ones' are kept: the
        history's whole list of spans is not read again at every step)."""
        self.raw, self.head, self.messages, self.spans, self.reused = body, head, messages, spans, reused
        self.open, self.close = opened, closed
        self.ends = [end for _, end in spans] if ends is None else ends
        #: The messages up to the first that is not a system one (past the end: none is).
        self.own = next(
            (i + 1 for i, m in enumerate(messages) if not (isinstance(m, dict) and m.get("role") in _SYSTEM)),
            len(messages) + 1,
        )


class Readers:
    """Body readers for the conversations seen lately, each lent to one request at a time.

    A body is read by the reader whose last body shares the most leading bytes with it, past
    its first own message (the same conversation one step earlier, as a rule:
    `BodyReader.continues`); a body no reader knows is read whole by a new one. Which reader
    reads a body never changes what is read. Idle readers are kept, least recently used
    dropped first, while there are at most `capacity` of them and they hold at most `memory`
    bytes (`READER_MEMORY` per byte of the body each last read, and what it last wrote back:
    `trim` again once a body read is written back).
    """

    def __init__(self, capacity: int | None = 32, memory: int | None = None, key: str = "messages") -> None:
        self.capacity, self.memory, self.key = capacity, memory, key
        self._shelf = _Shelf()

    def sibling(self, key: str) -> Readers:
        """Readers of another array (`input`, ...) within the same memory and count as these."""
        other = Readers(self.capacity, self.memory, key)
        other._shelf = self._shelf
        return other

    def read(self, body: bytes) -> tuple[dict, Layout]:
        """The request in `body` and where its messages are (raises `BodyError`)."""
        reader, common = self._lend(body)
        try:
            return reader.read(body, common), reader.layout
        finally:
            with self._shelf.guard:
                self._shelf.put(reader)
                self._trim()

    def expect(self, known: Known) -> None:
        """What the next body read (`known.body`) shares with the one it was made from: a reader
        that last read that one need not compare them again. (The comparison reads both bodies
        whole, the history's bytes twice, cold in cache by then: ~100 µs for 250 KB, most of
        which the proxy compared already to send only the rest, `bases.py`.)"""
        self._shelf.known = known

    def trim(self) -> None:
        """Drop the least recently used idle readers past the bounds (once a body read was
        written back: its reader holds that too now)."""
        with self._shelf.guard:
            self._shelf.recount()
            self._trim()

    def held(self) -> int:
        """The memory the idle readers hold, as estimated."""
        with self._shelf.guard:
            return self._shelf.held

    def _lend(self, body: bytes) -> tuple[BodyReader, int]:
        shelf = self._shelf
        with shelf.guard:
            best, common = None, 0
            known, shelf.known = shelf.known, None  # (told of this body, or of none: `common` checks)
            for reader in shelf.candidates(body):
                shared = reader.common(body, known) if reader.key == self.key and reader.continues(body) else 0
                if shared > common:
                    best, common = reader, shared
            if best is None:
                return BodyReader(self.key), 0
            shelf.take(best)
            return best, common

    def _trim(self) -> None:
        shelf = self._shelf
        while shelf.idle and (
            (self.capacity is not None and len(shelf.idle) > self.capacity)
            or (self.memory is not None and shelf.held > self.memory)
        ):
            shelf.take(shelf.idle[0])


#: A reader is found by this many bytes (at most) of the start of its conversation array.
KEY_BYTES = 64


class _Shelf:
    """The idle readers (of every array), least recently used first, found by where their
    conversation array starts and its first bytes: a body can only continue a reader's whose
    bytes it starts with, so the readers worth comparing with it are found in one lookup per
    distinct place, not by comparing it with each (a team's dozens of conversations)."""

    def __init__(self) -> None:
        self.idle: list[BodyReader] = []
        self.guard = threading.Lock()
        self.held = 0  # what the idle readers hold, as `_memory` counted each when put here
        self._counted: dict[int, int] = {}  # id(reader) -> its count
        self._index: dict[tuple[int, int], dict[bytes, list[BodyReader]]] = {}
        #: What the next body read is known to share with the one it was made from (`Readers.expect`).
        self.known: Known | None = None

    def put(self, reader: BodyReader) -> None:
        self.idle.append(reader)
        counted = self._counted[id(reader)] = _memory(reader)
        self.held += counted
        where = _where(reader)
        if where is not None:
            place, start = where
            self._index.setdefault(place, {}).setdefault(start, []).append(reader)

    def take(self, reader: BodyReader) -> None:
        self.idle.remove(reader)
        self.held -= self._counted.pop(id(reader))
        where = _where(reader)
        if where is not None:
            place, start = where
            table = self._index[place]
            table[start].remove(reader)
            if not table[start]:
                del table[start]
                if not table:
                    del self._index[place]

    def recount(self) -> None:
        """Count every idle reader again (one may have written a body back since)."""
        for reader in self.idle:
            self._counted[id(reader)] = _memory(reader)
        self.held = sum(self._counted.values())

    def candidates(self, body: bytes) -> list[BodyReader]:
        """The idle readers whose array starts as `body` has it at the same place."""
        found: list[BodyReader] = []
        for (opened, length), table in self._index.items():
            found += table.get(body[opened + 1 : opened + 1 + length], ())
        return found


def _where(reader: BodyReader) -> tuple[tuple[int, int], bytes] | None:
    """(where a reader's array starts and how many of its bytes find it, those bytes); None for
    a reader no body continues (nothing read, or no message of its own)."""
    if reader.open < 0 or len(reader.ends) < reader.own:
        return None
    length = min(KEY_BYTES, reader.ends[reader.own - 1] - reader.open - 1)
    return (reader.open, length), reader.raw[reader.open + 1 : reader.open + 1 + length]


#: Memory a reader holds per byte of the body it last read: the body, and its messages parsed
#: (measured at about as many bytes again in RSS for agent transcripts).
READER_MEMORY = 2


def _memory(reader: BodyReader) -> int:
    """The body and its messages, and what the reader last wrote back."""
    return READER_MEMORY * len(reader.raw) + len(reader.written.content)
