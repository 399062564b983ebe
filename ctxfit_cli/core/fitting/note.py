"""What the trimmed-history note costs the first message it is added to (stages 2 and 3)."""

from __future__ import annotations

from ...counters.seed import SEED, Counter
from ..costs import MessageCost, merged_cost, message_cost, parts_cost
from ..model import Message, Part, PartKind, Role
from ..notes import TRIMMED_HISTORY

#: The trimmed-history note as a part of the first message.
TRIM_NOTE_PART = Part(PartKind.TEXT, TRIMMED_HISTORY)
#: Where a message keeps its estimate with the note added, by counter name (`Message.memo`).
_NOTED = "note.noted_cost"


def noted_cost(first: Message, counter: Counter = SEED) -> MessageCost:
    """The estimate of the first message once it carries the note, from its own estimate (a
    big transcript's messages may be held without their text)."""
    cost = message_cost(first, counter)
    if has_trim_note(first):
        return cost
    key = (_NOTED, counter.name)  # kept on the message: a replay asks at every call, of few firsts
    noted = first.memo.get(key)
    if noted is None:
        noted = first.memo[key] = merged_cost([cost, _note_cost(first.role, counter)], counter)
    return noted


#: The note's own estimate by (role, counter name): a replay asks for it at every call.
_NOTE_COSTS: dict[tuple[Role, str], MessageCost] = {}


def _note_cost(role: Role, counter: Counter) -> MessageCost:
    key = (role, counter.name)  # (a counter's name says what it counts: `Message.memo` keys by it)
    cost = _NOTE_COSTS.get(key)
    if cost is None:
        cost = _NOTE_COSTS[key] = parts_cost(role, (TRIM_NOTE_PART,), counter)
    return cost


def note_cost(first: Message, counter: Counter = SEED) -> int:
    """What adding the trimmed-history note to the first message costs (0 if it has it)."""
    return noted_cost(first, counter).tokens - message_cost(first, counter).tokens


def has_trim_note(message: Message) -> bool:
    """Whether a first message already carries the note (a payload fitted before)."""
    return any(p.kind is PartKind.TEXT and p.text == TRIMMED_HISTORY for p in message.parts)
