"""Cline's `ui_messages.json` (and its forks', Roo Code's and Kilo Code's): what the task's
chat panel shows, one JSON list beside `api_conversation_history.json` in the task's folder.

    [{"ts": <ms>, "type": "say" | "ask", "say" | "ask": <kind>, "text": …, "conversationHistoryIndex", …}]

It holds usage, not the conversation: each `say: api_req_started` message is one model call,
its `text` a JSON object with `tokensIn` (uncached input), `cacheWrites`, `cacheReads`,
`tokensOut` and `cost` (dollars, as Cline's provider priced the call; `cancelReason` when the
user stopped it). A call's whole prompt is `tokensIn + cacheWrites + cacheReads`. The model is
not recorded (Cline keeps it in the history's `modelInfo`). So:

- `fit`, `estimate`, `plan` and `replay` say where the conversation is (exit 3);
- `sessions` reports it: one session per file (the task folder's name is its id, as for the
  history), its dates, its calls and their largest prompt as recorded, and its cost as recorded
  (the `cost` of every call, summed; the tokens too).
- In a task folder holding both files, they are one session (same agent, same id): the
  history's row is kept, with this file's cost where the history records none
  (`fleet/combine.py`).

Seen: Cline 3.x, 2025 (`../shared/realworld/cline-ui/`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePath
from typing import TYPE_CHECKING

import orjson

from .agent import Agent
from .cline import FILE_NAME as HISTORY_FILE
from .cline import UI_FILE_NAME, agent_of
from .session import SessionMeta, from_epoch_ms
from .spend import Spend, count

if TYPE_CHECKING:
    from ..formats.reading import Record

NAME = "cline-ui"
FILE_NAME = UI_FILE_NAME
HISTORY = HISTORY_FILE
#: The `say` kind whose text records one model call's usage.
API_REQUEST = "api_req_started"


def recognise(value: object) -> bool:
    """The whole file: a list of UI messages (`ts`, `type` say/ask)."""
    return (
        isinstance(value, list)
        and bool(value)
        and isinstance(value[0], dict)
        and "ts" in value[0]
        and value[0].get("type") in ("say", "ask")
        and "role" not in value[0]
    )


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    folder = PurePath(path).parent.name if path not in ("-", "<stdin>") else ""
    session = SessionMeta(folder, agent_of(path))
    spend = Spend()
    for record in records:
        for message in record.value if isinstance(record.value, list) else ():
            if not isinstance(message, dict):
                continue
            session.saw(from_epoch_ms(message.get("ts")))
            usage = _usage(message)
            if usage is None:
                continue
            counts = [usage.get(k) for k in ("tokensIn", "cacheWrites", "cacheReads", "tokensOut")]
            spend.call("", counts[0], counts[1], counts[2], counts[3])
            session.prompts.append(sum(count(c) for c in counts[:3]))
            cost = usage.get("cost")
            if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
                session.usd = (session.usd or 0.0) + cost
    session.spend = spend.totals()
    return [session]


def _usage(message: dict) -> dict | None:
    """The usage an `api_req_started` message records, or None."""
    if message.get("say") != API_REQUEST or not isinstance(message.get("text"), str):
        return None
    try:
        usage = orjson.loads(message["text"])
    except orjson.JSONDecodeError:
        return None
    return usage if isinstance(usage, dict) else None


AGENT = Agent(
    name=NAME,
    title="Cline",
    looks_like="Cline's UI messages (ui_messages.json, in a task's folder)",
    recognise=recognise,
    describe=describe,
    conversation_elsewhere=f"it records usage only; the conversation is in {HISTORY} beside it",
    document=True,
)
