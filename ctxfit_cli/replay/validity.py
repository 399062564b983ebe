"""Every simulated request passes the validator (DESIGN §8), without building it.

A replay makes one request per model call, thousands per log; building and validating each
would cost as much as the history is long, every time. Instead the history is validated once,
as one request, and each simulated request only where it differs from the history:

- a request that keeps the whole history before its call is a prefix of the history that ends
  where no call is open (right before an assistant message), with some results cleared (same
  calls, same results, same breakpoints): valid when the history is;
- a trimmed request (stages 2 and 3, the old turn trimming) is the messages up to the first
  message, which gains the note, then an anchor and the kept history from `start`. Its own
  junctions are new: the messages up to the first, the noted (for Anthropic and Gemini: merged) first
  message, the anchor and the kept history up to the first place no call is open are scanned
  again with the same rules; past that place the request is the history's own. Those
  junctions depend on where the request ends only until that place: once a cut's junctions
  passed, every later request with the same cut sends the same junctions, so each cut is
  scanned once, not once per request.

>>> import io
>>> from ctxfit_cli.formats import read_transcripts
>>> log = b'{"role":"user","content":"hi"}\\n{"role":"assistant","content":"hello"}\\n'
>>> [t] = read_transcripts("log.jsonl", io.BytesIO(log))
>>> check = RequestCheck(t.materialize())
>>> check.trimmed(call=1, first=0, anchor=None, start=1, end=1)
"""

from __future__ import annotations

import orjson

from ..core.model import ALTERNATING, Message, Transcript
from ..core.validate import Checked, check_message, first_problem, memo_key, scan
from ..errors import BadInput, InvalidRequest


def checked(message: Message, dialect: str) -> Checked:
    """The validator's checks of one message, made once and kept with it."""
    key = memo_key(dialect)
    found = message.memo.get(key)
    if found is None:
        found = message.memo[key] = check_message(orjson.loads(message.raw), dialect)
    return found


class RequestCheck:
    """The validity of every request of one replayed transcript.

    A held transcript (its messages a tuple) is checked whole at once: a history that is not a
    valid request as read is `BadInput` before any request is made. A streamed one (a big file
    read on several cores while the walk goes on) is checked as its messages come (`add`), and
    whole once they are all read (`finish`); a trimmed request can only be checked once the
    messages it sends were added, which they are: it is made before the next message.
    """

    def __init__(self, transcript: Transcript) -> None:
        self.path, self.dialect = transcript.path, transcript.dialect
        self.items: list[Checked] = []
        #: Cuts (first, anchor, start) whose junctions were scanned up to a place where no call
        #: is open, and passed: later requests with that cut send the same junctions.
        self._passed: set[tuple[int, int | None, int]] = set()
        #: The messages come one by one (`add` each, then `finish`); else they were all checked now.
        self.streamed = not isinstance(transcript.messages, tuple)
        if not self.streamed:
            for message in transcript.messages:
                self.add(message)
            self.finish()

    def add(self, message: Message) -> None:
        """The next message of a streamed history."""
        self.items.append(checked(message, self.dialect))

    def finish(self) -> None:
        """Check the whole history as read: `BadInput` naming its first problem."""
        problems = scan(self.items, self.dialect) if self.items else []
        if problems:
            raise BadInput(self.path, None, f"not a valid {self.dialect} request as read: {first_problem(problems)}")

    def trimmed(self, *, call: int, first: int, anchor: int | None, start: int, end: int) -> None:
        """Check the request of model call `call` that sends messages[:first + 1] (the first
        with the note), then `anchor`, then messages[start:end]."""
        cut = (first, anchor, start)
        if cut in self._passed:
            return
        items = self.items
        head = list(items[:first])
        noted = items[first]._replace(empty=False)
        kept = [anchor] if anchor is not None else []
        junction, closed = self._until_closed(start, end)
        kept += junction
        sequence = [*head, noted]
        for position, index in enumerate(kept):
            item = items[index]
            if position == 0 and self.dialect in ALTERNATING and item.role == "user":
                sequence[-1] = _merged(sequence[-1], item)  # as payload.sent_messages merges them
            else:
                sequence.append(item)
        problems = scan(sequence, self.dialect)
        if problems:
            raise InvalidRequest(self.path, self.dialect, f"replayed call {call}: {first_problem(problems)}")
        if closed:  # a later request with this cut scans exactly this sequence again
            self._passed.add(cut)

    def _until_closed(self, start: int, end: int) -> tuple[list[int], bool]:
        """Indices from `start` up to the first message after which no call is open, and
        whether that place was reached before `end`."""
        indices, open_calls = [], set()
        for index in range(start, end):
            item = self.items[index]
            indices.append(index)
            if item.role == "assistant":
                open_calls = set(item.calls)
            else:
                open_calls.difference_update(item.results)
            if not open_calls:
                return indices, True
        return indices, False


def _merged(head: Checked, following: Checked) -> Checked:
    """Two user messages as one: the head's content, then the following message's."""
    return Checked(
        head.role,
        head.calls + following.calls,
        head.results + following.results,
        head.results_first and not following.results,  # the head has text
        head.breakpoints + following.breakpoints,
        head.problems + following.problems,
        False,
    )
