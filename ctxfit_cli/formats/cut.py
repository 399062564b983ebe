"""A JSON document cut short, read up to its last complete element.

Agents that keep their log as one JSON document (Cline's `api_conversation_history.json`, a
Gemini CLI `session-*.json`, an OpenHands event list, a SWE-agent `.traj`) rewrite the whole
file as they go, so a reader can find it cut anywhere. What was written before the cut is
whole up to the last complete element of the list being written; the element after it is
half written, so it is left out (a reply not yet made), and the containers still open are
closed. Nothing is invented: every value kept is one the file holds in full.

Which list: the outermost one still open (the messages, events or steps of the log); with no
list open (the cut is in a top-level object's other members), the top-level object itself, its
last complete member kept. `deep=True` cuts in the innermost container instead, keeping as much
of the beginning as can be read: what detection looks at, to say what the document is even when
its first element is not complete yet.

The document is scanned once with a regular expression that steps over whole strings, so only
its brackets and commas are looked at one by one in Python; it runs only on a document cut
short. On a 50 MB Cline history, scanning and closing it costs about 3x a bare parse of the whole
document, and reading it about 2.6x reading the whole one (`bench/cut_document.py`).

>>> complete_part(b'{"id": "s", "messages": [{"a": 1}, {"b": [2, 3')
b'{"id": "s", "messages": [{"a": 1}]}'
>>> complete_part(b'[{"text": "a, [b"}, {"text": "c')
b'[{"text": "a, [b"}]'
>>> complete_part(b'{"id": "s", "messages": [{"a": 1}, {"b": [2, 3', deep=True)
b'{"id": "s", "messages": [{"a": 1}, {"b": [2]}]}'
>>> complete_part(b'{"a": 1}') is None  # not cut: nothing to do
True
"""

from __future__ import annotations

import re

import orjson

#: The next byte that shapes the document, whole strings and the bytes between stepped over
#: inside the regular expression (possessively: a cut document never makes it backtrack); a `"`
#: found is a string the cut ends inside.
_TOKENS = re.compile(rb'(?:"[^"\\]*+(?:\\.[^"\\]*+)*+"|[^"\[\]{},]++)*+([\[\]{},"])')
_OPEN = {ord("["): b"]", ord("{"): b"}"}
_QUOTE, _COMMA, _ARRAY = ord('"'), ord(","), ord("[")


class Cut:
    """Both readings of a document cut short, from one scan (closed, not parsed: the caller
    parses what it uses; the second is made only if asked for)."""

    def __init__(self, document: bytes, stack: list[list[int]]) -> None:
        self._document, self._stack = document, stack
        outermost_list = next((k for k, c in enumerate(stack) if c[0] == _ARRAY), 0)
        #: Up to the last complete element of the list being written.
        self.kept = _closed(document, stack, outermost_list)

    def beginning(self) -> bytes:
        """As deep as it goes (`complete_part(deep=True)`)."""
        return _closed(self._document, self._stack, len(self._stack) - 1)


def cut_of(document: bytes) -> Cut | None:
    """Both readings of a document cut short; None when no container is left open."""
    stack = _open_containers(document)
    return Cut(document, stack) if stack else None


def complete_part(document: bytes, *, deep: bool = False) -> bytes | None:
    """The document up to the last complete element of the list being written, closed (see
    the module); None when no container is left open, or what is left does not parse."""
    cut = cut_of(document)
    if cut is None:
        return None
    closed = cut.beginning() if deep else cut.kept
    try:
        orjson.loads(closed)
    except orjson.JSONDecodeError:
        return None
    return closed


def _open_containers(document: bytes) -> list[list[int]] | None:
    """The containers open where the document ends, outermost first: each [its opening byte,
    where it opens, the end of its last complete element or member (-1: none yet)]; None when
    the document closes before its end (it is not cut: something else is wrong)."""
    stack: list[list[int]] = []
    for match in _TOKENS.finditer(document):
        start = match.end() - 1
        byte = document[start]
        if byte == _QUOTE:
            break  # a string the cut ends inside: nothing after it is whole
        elif byte in _OPEN:
            stack.append([byte, start, -1])
        elif byte == _COMMA:
            if stack:
                stack[-1][2] = start
        else:  # a container closes: it is a complete element (or member) of the one around it
            if len(stack) < 2:
                return None
            stack.pop()
            stack[-1][2] = start + 1
    return stack


def _closed(document: bytes, stack: list[list[int]], target: int) -> bytes:
    """The document up to the last complete element of the `target`-th open container, with it
    and the containers around it closed."""
    _, opened, last = stack[target]
    end = last if last >= 0 else opened + 1
    return document[:end] + b"".join(_OPEN[c[0]] for c in reversed(stack[: target + 1]))
