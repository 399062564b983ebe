"""The prompt size a provider reported, read from its reply on the way to the agent (DESIGN §11).

The reply's bytes go to the agent exactly as they came; this reads a copy of them, as they pass:

- a stream (`text/event-stream`): each event that mentions `usage` is parsed — Anthropic's
  `message_start` (the prompt's input, cache read and cache write tokens), OpenAI's last chunk
  when the client asked for it with `stream_options.include_usage` (the proxy never adds that
  option: a client that did not ask would get a chunk it does not expect, so such a stream is
  simply not anchored, and the next request is estimated as before); Gemini's chunks
  (`streamGenerateContent?alt=sse`), whose `usageMetadata` the last one carries whole;
- a JSON body: its `usage` object (Gemini's `usageMetadata`, then only `modelVersion` and
  `responseId` after it), which the providers put at the end (the last `USAGE_WINDOW` bytes
  are kept; a Gemini stream without `alt=sse` is a JSON array, its last element read so).

A compressed reply (gzip, deflate) is inflated on the side; another encoding is not read. What
is found is a `core.reported.Reported`; the proxy anchors the conversation's next request on it.
"""

from __future__ import annotations

import json
import zlib

import orjson

from ..core.reported import Reported, reported_prompt

#: How much of the end of a JSON reply is kept to find its `usage` (the providers put it last).
USAGE_WINDOW = 64 * 1024
#: A stream's line longer than this is no usage event (a long text delta): not kept.
LONGEST_EVENT = 256 * 1024
_DECODER = json.JSONDecoder()
#: The keys a reply reports its usage under: every API's `usage`, Gemini's `usageMetadata`.
USAGE_KEYS = ('"usage"', '"usageMetadata"')
_USAGE_BYTES = tuple(key.encode() for key in USAGE_KEYS)


class ReplyUsage:
    """Fed every chunk of one reply as it passes; `reported()` at the end."""

    def __init__(self, content_type: str, encoding: str) -> None:
        self.stream = content_type.split(";")[0].strip().lower() == "text/event-stream"
        encoding = (encoding or "identity").lower()
        self.inflate = (
            zlib.decompressobj(16 + zlib.MAX_WBITS)
            if encoding in ("gzip", "x-gzip")
            else zlib.decompressobj()
            if encoding == "deflate"
            else None
        )
        self.readable = self.inflate is not None or encoding == "identity"
        self.pending = b""  # the stream's unfinished line, or the JSON body's last bytes
        self.found: Reported | None = None

    def feed(self, chunk: bytes) -> None:
        if not self.readable:
            return
        if self.inflate is not None:
            try:
                chunk = self.inflate.decompress(chunk)
            except zlib.error:
                self.readable = False
                return
        if self.stream:
            self._lines(chunk)
            return
        self.pending = (self.pending + chunk)[-USAGE_WINDOW:]
        if self.found is None and chunk.rstrip().endswith((b"}", b"]")):  # maybe the end of the usage
            self.found = _json_usage(self.pending)

    def reported(self) -> Reported | None:
        """The prompt size the reply reported, or None (none reported, or not readable).
        `found` has it as soon as the chunk that completes it was fed, before that chunk is
        passed on: the agent's next request never comes before its count."""
        if self.readable and self.stream:
            self._lines(b"\n")
        return self.found if self.readable else None

    def _lines(self, chunk: bytes) -> None:
        lines = (self.pending + chunk).split(b"\n")
        self.pending = lines.pop()
        if len(self.pending) > LONGEST_EVENT:
            self.pending = b""  # a long text delta, never a usage event; the line ends later
        for line in lines:
            if line.startswith(b"data:") and any(key in line for key in _USAGE_BYTES):
                try:
                    found = reported_prompt(orjson.loads(line[5:]))
                except orjson.JSONDecodeError:
                    continue
                if found is not None:
                    self.found = found


def _json_usage(tail: bytes) -> Reported | None:
    """The usage object of a JSON reply, from the reply's last bytes."""
    text = tail.decode("utf-8", "replace")
    for key in USAGE_KEYS:
        found = _json_usage_at(text, key)
        if found is not None:
            return found
    return None


def _json_usage_at(text: str, key: str) -> Reported | None:
    """The last object under `key` in `text` that reports a prompt size."""
    at = text.rfind(key)
    while at >= 0:
        colon = text.find(":", at + len(key))
        if colon >= 0 and not text[at + len(key) : colon].strip():
            start = colon + 1
            while start < len(text) and text[start] in " \t\r\n":
                start += 1
            try:
                usage, _ = _DECODER.raw_decode(text, start)
            except ValueError:
                usage = None
            found = reported_prompt(usage) if isinstance(usage, dict) else None
            if found is not None:
                return found
        at = text.rfind(key, 0, at)
    return None
