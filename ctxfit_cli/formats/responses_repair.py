"""How the Responses dialect writes the items `core.repair` makes.

An open call is answered by a `function_call_output` carrying the constant aborted note (what
Codex itself records for a call that never finished). Outputs are items of their own, never
parts of a user message, and the API takes an `input` that starts with the model's items, so
nothing is reordered or put first.
"""

from __future__ import annotations

from ..core.model import Message
from ..core.notes import ABORTED_CALL
from .common import Where, dumps
from .responses import parse_message

_MADE = Where("<repair>", 0)


class ResponsesWriter:
    user_first = results_in_user = False
    combines_turns = False  # the Responses API takes consecutive items of one role as they are
    pairs_by_id = True  # an output answers its call by `call_id` wherever it stands after it

    def answers(self, call_ids: list[str], line: int) -> list[Message]:
        items = [{"type": "function_call_output", "call_id": c, "output": ABORTED_CALL} for c in call_ids]
        return [parse_message(item, dumps(item), _MADE._replace(line=line)) for item in items]

    def reorder(self, message: Message, order: list[int | str]) -> Message | None:
        raise AssertionError("Responses outputs are items of their own, never reordered inside a message")

    def opener(self, line: int) -> Message:
        raise AssertionError("the Responses API accepts an input that starts with the model's items")
