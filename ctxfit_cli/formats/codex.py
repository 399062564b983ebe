"""Codex CLI rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

Each line is `{"timestamp", "type", "payload"}`. `response_item` records are the conversation
the model saw; `event_msg` records repeat it for the UI (their `token_count` events are read
for usage, see `usage.py`); `turn_context`, `world_state` and other bookkeeping are skipped.
The log is read back into the request the model received, as OpenAI Chat Completions:

- **System prompt.** The first `session_meta` record's `base_instructions` (current rollouts:
  a string or `{"text": ...}`) or `instructions` (older ones). Later `session_meta` records
  describe forked or parent threads and are not this conversation's prompt.
- `message` → a message of its role (`input_text` / `output_text` parts become text,
  `input_image` an image; `developer` counts as system). An `input_image` whose `image_url`
  is null carries no image to send and is left out.
- `function_call`, `custom_tool_call`, `local_shell_call`, `tool_search_call` → tool calls;
  consecutive calls join the assistant message before them, as parallel calls do.
- `function_call_output`, `custom_tool_call_output`, `tool_search_output` → `role: "tool"`
  results. An output given as a list of content items is sent as its text (and its images as
  `image_url` parts), not as JSON text.
- **A message written between a call and its output** (Codex writes developer or user
  messages there; the Responses API accepts it, Chat Completions does not) is moved after
  the outputs of the open calls, as Codex does when it builds a request.
- **One model call, one assistant message.** The items of one model response (its reasoning,
  text and calls: a *run*, ended by the next input item or `turn_context`) become one assistant
  message, whose line is the run's first item; its `token_count` event is the call's usage
  (`usage.py` ties the two). Codex 0.40 writes that event before the run's items, later
  versions after them: the first event that carries usage says which (`Runs`).
- **Compaction.** A `compacted` record with `replacement_history` replaces what the model
  sees: it starts a new conversation made of that history (and the system prompt), exactly
  like a Claude Code compaction (the CLI fits only the last one). The history is given, not
  made by a model call of the new conversation: its messages all carry the compaction's line,
  and no call is ever tied to them. A `compacted` record without one (older Codex) starts a
  new conversation with its summary as a user message.
- Not sent, so skipped: `reasoning` (encrypted; Chat Completions has no place for it),
  server-side `web_search_call` and `image_generation_call`, `ghost_snapshot` (Codex's undo
  snapshot). An `agent_message` (a message from another agent of a collaboration) is sent
  to the model as a user message with its text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..agents.codex import ITEM_TYPES
from ..agents.session import record_type
from .common import COMPACTED, Where, dumps, json_text
from .reading import Record
from .skipped import Skipped

#: Record types Codex writes that say nothing of the request (skipped without a count). A record
#: of a type in neither list is skipped and counted (`Skipped`), never fatal: Codex adds them.
#: (`token_usage_record`, 0.171: each response's usage, which its `token_count` event also holds.)
BOOKKEEPING = frozenset(("world_state", "inter_agent_communication_metadata", "token_usage_record"))
#: The keys ctxfit knows on a record (`metadata`, 0.171: where an item stands in the history);
#: others are counted.
RECORD_KEYS = frozenset(("timestamp", "type", "payload", "ordinal", "metadata"))
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")
#: Response items that only the model writes: a run of them is one model response.
_REPLY_ITEMS = (
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "tool_search_call",
    "reasoning",
    "web_search_call",
    "image_generation_call",
)
#: Called with (line of a model call's first item, its `token_count` info, the model then in use).
OnUsage = Callable[[int, dict, str], None]


def to_openai(
    records: Iterator[Record], path: str, on_usage: OnUsage | None = None, skipped: Skipped | None = None
) -> Iterator[Record | object]:
    """Records of a rollout as OpenAI message records, with `COMPACTED` between the
    conversations of a compacted rollout (each of which starts with the system prompt).
    `on_usage` hears each model call's usage, by the line of the call's first item; what the
    reader does not know is counted in `skipped`."""
    system: list[Record] = []
    compacted = False
    known = _known(records, skipped if skipped is not None else Skipped())
    for item in _items(known, path, system, Runs(on_usage)):
        if item is COMPACTED:
            compacted = True
            continue
        if compacted:  # only when a message follows: a compaction at the end starts nothing
            compacted = False
            yield COMPACTED
            assert isinstance(item, Record)  # (the only other item is COMPACTED, passed above)
            yield from (Record(item.line, r.value, r.raw) for r in system)  # named by the compaction
        yield item


def _known(records: Iterator[Record], skipped: Skipped) -> Iterator[Record]:
    """The records of the types the reader reads; the others skipped, those it does not know
    counted, as are the keys it does not know."""
    for record in records:
        value = record.value
        kind = record_type(value)
        if kind in ITEM_TYPES or not isinstance(value, dict):  # (not an object: refused by `_items`)
            if isinstance(value, dict):
                skipped.keys(value, RECORD_KEYS)
            yield record
        elif kind not in BOOKKEEPING:
            skipped.record(kind)


def _items(records: Iterator[Record], path: str, system: list[Record], runs: Runs) -> Iterator[Record | object]:
    order = _Order(runs)
    for record in records:
        value = record.value
        if not isinstance(value, dict) or not isinstance(value.get("payload"), dict):
            raise Where(path, record.line).fail('a Codex record must be an object with a "payload" object')
        payload, kind = value["payload"], value.get("type")
        if kind == "session_meta":
            prompt = instructions(payload)
            if prompt and not system:
                system.append(_record(record.line, {"role": "system", "content": prompt}))
                yield system[0]
            continue
        if kind == "turn_context":
            runs.context(payload)
            continue
        if kind == "event_msg":
            if payload.get("type") == "token_count":
                runs.usage(payload.get("info"))
            continue
        if kind == "compacted":
            yield from order.flush()
            runs.compacted()
            yield COMPACTED
            history = payload.get("replacement_history")
            if isinstance(history, list):
                for item in history:  # given, not made by a call: no run
                    if isinstance(item, dict):
                        yield from order.item(record.line, item, Where(path, record.line), given=True)
                yield from order.flush()
            elif isinstance(payload.get("message"), str) and payload["message"]:
                yield _record(record.line, {"role": "user", "content": payload["message"]})
            continue
        if kind == "response_item":
            yield from order.item(record.line, payload, Where(path, record.line))
    yield from order.flush()


class Runs:
    """The model calls of a rollout as its items are read: a run of reply items is one call,
    ended by an input item or a `turn_context`, and each call's `token_count` event is given
    to `on_usage` with the line of the run's first item.

    Which run an event belongs to depends on the version that wrote it: Codex 0.40 writes it
    before the run, later versions after (right after its items, or after its outputs). The
    first event with usage decides: written after a run, events follow their runs; written
    before any, they precede them. An event repeated
    after a `turn_context` (same `total_token_usage`) is read once; an event of no tokens
    (written at a compaction) is no call.
    """

    def __init__(self, on_usage: OnUsage | None) -> None:
        self.on_usage = on_usage
        self.model = ""
        self.run_line = 0  # the open run's first line, 0 when no run is open
        self.last_run = 0  # the latest run's first line, while it may still take its event
        self.after: bool | None = None  # events follow their runs; None until the first event
        self.pending: dict | None = None  # an event waiting for its run (0.40 order)
        self._last_total: object = None

    def context(self, payload: dict) -> None:
        if isinstance(payload.get("model"), str):
            self.model = payload["model"]
        self.end()

    def reply(self, line: int) -> int:
        """A reply item at `line`: the first line of its run."""
        if not self.run_line:
            self.run_line = self.last_run = line
            if self.pending is not None:
                self._give(line, self.pending)
                self.pending = None
        return self.run_line

    def end(self) -> None:
        """An input item or a new turn context: the open run is over."""
        self.run_line = 0

    def compacted(self) -> None:
        """A compaction: no call before it takes an event after it."""
        self.run_line = self.last_run = 0

    def usage(self, info: object) -> None:
        if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            return
        total = info.get("total_token_usage")
        if total is not None and total == self._last_total:
            return  # the same event again, written after a turn context
        self._last_total = total
        if not info["last_token_usage"].get("input_tokens"):
            return  # nothing was sent: no call (Codex writes one at a compaction)
        if self.after is None:
            self.after = bool(self.last_run)
        if self.after:
            if self.last_run:
                self._give(self.last_run, info)
        else:
            self.pending = info

    def _give(self, line: int, info: dict) -> None:
        self.last_run = 0  # a run takes one event
        if self.on_usage is not None:
            self.on_usage(line, info, self.model)


def instructions(payload: dict) -> str:
    for key in ("base_instructions", "instructions"):
        value = payload.get(key)
        if isinstance(value, dict):
            value = value.get("text")
        if isinstance(value, str) and value:
            return value
    return ""


class _Order:
    """Response items into messages in the order a request sends them: the items of one model
    call make one assistant message, a reply whose calls are not all answered stays open
    (outputs wait with it), and messages written meanwhile wait until its outputs are all in."""

    def __init__(self, runs: Runs) -> None:
        self.runs = runs
        self.assistant: dict | None = None
        self.assistant_line = 0
        self.run = -1  # the first line of the run that made `assistant` (-1: given history)
        self.open: list[str] = []  # calls of the assistant message not yet answered
        self.outputs: list[Record] = []  # their outputs so far
        self.deferred: list[Record] = []  # messages written while calls were open

    def item(self, line: int, payload: dict, where: Where, *, given: bool = False) -> Iterator[Record]:
        kind = payload.get("type")
        if is_reply_item(payload):
            run = line if given else self.runs.reply(line)
            if self.assistant is not None and (given or run != self.run):
                yield from self.flush()  # another call's reply (or another message of the history)
            if self.assistant is None:
                self.assistant, self.assistant_line, self.run = {"role": "assistant", "content": None}, run, run
            self._reply(payload)
            return
        if not given:
            self.runs.end()
        if kind in _OUTPUTS:
            call_id = str(payload.get("call_id", ""))
            self.outputs.append(_record(line, {"role": "tool", "tool_call_id": call_id, "content": _output(payload)}))
            if call_id in self.open:
                self.open.remove(call_id)
            if not self.open:
                yield from self.flush()
            return
        if kind not in ("message", "agent_message"):
            return  # server-side items, snapshots: not sent
        if not isinstance(payload.get("content", []), (list, type(None))):
            raise where.fail("payload.content: a Codex message's content must be a list")
        message = _message(payload) if kind == "message" else {**_message(payload), "role": "user"}
        if self.open:
            self.deferred.append(_record(line, message))
        else:
            yield from self.flush()
            yield _record(line, message)

    def _reply(self, payload: dict) -> None:
        """One item of the model's reply, into the assistant message of its call."""
        assert self.assistant is not None  # (opened by `item` before every reply item)
        call = _tool_call(payload)
        if call is not None:
            self.assistant.setdefault("tool_calls", []).append(call)
            self.open.append(call["id"])
        elif payload.get("type") == "message":
            self.assistant["content"] = _joined(self.assistant.get("content"), _message(payload)["content"])

    def flush(self) -> Iterator[Record]:
        """The open reply, its outputs and the messages that waited for them (calls still
        unanswered are left for the repair to answer). A reply with nothing to send (only
        reasoning or server-side items) is left out."""
        if self.assistant is not None and (self.assistant.get("content") or self.assistant.get("tool_calls")):
            yield _record(self.assistant_line, self.assistant)
        yield from self.outputs
        yield from self.deferred
        self.assistant, self.open, self.outputs, self.deferred = None, [], [], []


def is_reply_item(payload: dict) -> bool:
    """Whether a response item is written by the model (one run of them is one model call)."""
    kind = payload.get("type")
    return kind in _REPLY_ITEMS or (kind == "message" and payload.get("role") == "assistant")


def item_message(payload: dict) -> dict | None:
    """The Chat Completions message one response item amounts to on its own, or None for an
    item that is not sent (reasoning, server-side items, snapshots): what a follower of a
    rollout being written estimates item by item (`fleet/live_records.py`), without the
    grouping of `_Order`."""
    call = _tool_call(payload)
    if call is not None:
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    kind = payload.get("type")
    if kind in _OUTPUTS:
        return {"role": "tool", "tool_call_id": str(payload.get("call_id", "")), "content": _output(payload)}
    if kind == "message" and isinstance(payload.get("content", []), (list, type(None))):
        return _message(payload)
    if kind == "agent_message":
        return {**_message(payload), "role": "user"}
    return None


def _joined(first: object, second: object) -> object:
    if not first:
        return second
    if isinstance(first, str) and isinstance(second, str):
        return first + "\n" + second
    as_parts = lambda c: [{"type": "text", "text": c}] if isinstance(c, str) else list(c or [])
    return as_parts(first) + as_parts(second)


def _record(line: int, message: dict) -> Record:
    return Record(line, message, dumps(message))


def _tool_call(payload: dict) -> dict | None:
    kind = payload.get("type")
    if kind == "function_call":
        name, arguments = payload.get("name", ""), payload.get("arguments", "")
    elif kind == "custom_tool_call":
        name, arguments = payload.get("name", ""), payload.get("input", "")
    elif kind == "local_shell_call":
        name, arguments = "local_shell", payload.get("action", {})
    elif kind == "tool_search_call":
        name, arguments = "tool_search", payload.get("arguments", {})
    else:
        return None
    if arguments is None:
        arguments = ""
    if not isinstance(arguments, str):
        arguments = json_text(arguments)
    call_id = payload.get("call_id") or payload.get("id") or ""
    return {"id": str(call_id), "type": "function", "function": {"name": str(name), "arguments": arguments}}


def _parts(items: object) -> list[dict[str, Any]]:
    """Codex content items as Chat Completions parts (text and images with a URL)."""
    parts: list[dict[str, Any]] = []
    for item in items if isinstance(items, list) else [items]:
        if not isinstance(item, dict):
            continue
        if item.get("type") in ("input_text", "output_text", "text"):
            parts.append({"type": "text", "text": str(item.get("text", ""))})
        elif item.get("type") == "input_image" and isinstance(item.get("image_url"), str):
            parts.append({"type": "image_url", "image_url": {"url": item["image_url"]}})
    return parts


def _content(parts: list[dict]) -> str | list[dict]:
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _message(payload: dict) -> dict:
    role = payload.get("role", "user")
    role = "system" if role == "developer" else role
    return {"role": role, "content": _content(_parts(payload.get("content") or []))}


def _output(payload: dict) -> str | list[dict]:
    """A tool output as sent: its text, or its text and images."""
    if payload.get("type") == "tool_search_output":
        return json_text(payload.get("tools", []))
    output = payload.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return output["content"]  # older rollouts: {"content": ..., "success": ...}
    if isinstance(output, (list, dict)) and (parts := _parts(output)):
        return _content(parts)
    return json_text(output)
