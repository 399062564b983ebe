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
- **Compaction.** A `compacted` record with `replacement_history` replaces what the model
  sees: it starts a new conversation made of that history (and the system prompt), exactly
  like a Claude Code compaction (the CLI fits only the last one). A `compacted` record
  without one (older Codex) starts a new conversation with its summary as a user message.
- Not sent, so skipped: `reasoning` (encrypted; Chat Completions has no place for it),
  server-side `web_search_call` and `image_generation_call`, `ghost_snapshot` (Codex's undo
  snapshot). An `agent_message` (a message from another agent of a collaboration) is sent
  to the model as a user message with its text.
"""

from __future__ import annotations

from typing import Iterator

from .reading import Record
from .common import COMPACTED, Where, dumps, json_text

ITEM_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")


def sniff(value: object) -> bool:
    return isinstance(value, dict) and value.get("type") in ITEM_TYPES and "payload" in value


def to_openai(records: Iterator[Record], path: str) -> Iterator[Record | object]:
    """Records of a rollout as OpenAI message records, with `COMPACTED` between the
    conversations of a compacted rollout (each of which starts with the system prompt)."""
    system: list[Record] = []
    compacted = False
    for item in _items(records, path, system):
        if item is COMPACTED:
            compacted = True
            continue
        if compacted:  # only when a message follows: a compaction at the end starts nothing
            compacted = False
            yield COMPACTED
            yield from (Record(item.line, r.value, r.raw) for r in system)  # named by the compaction
        yield item


def _items(records: Iterator[Record], path: str, system: list[Record]) -> Iterator[Record | object]:
    order = _Order()
    for record in records:
        value = record.value
        if not isinstance(value, dict) or not isinstance(value.get("payload"), dict):
            raise Where(path, record.line).fail('a Codex record must be an object with a "payload" object')
        payload, kind = value["payload"], value.get("type")
        if kind == "session_meta":
            instructions = _instructions(payload)
            if instructions and not system:
                system.append(_record(record.line, {"role": "system", "content": instructions}))
                yield system[0]
            continue
        if kind == "compacted":
            yield from order.flush()
            yield COMPACTED
            history = payload.get("replacement_history")
            if isinstance(history, list):
                for item in history:
                    if isinstance(item, dict):
                        yield from order.item(record.line, item, Where(path, record.line))
                yield from order.flush()
            elif isinstance(payload.get("message"), str) and payload["message"]:
                yield _record(record.line, {"role": "user", "content": payload["message"]})
            continue
        if kind == "response_item":
            yield from order.item(record.line, payload, Where(path, record.line))
    yield from order.flush()


def _instructions(payload: dict) -> str:
    for key in ("base_instructions", "instructions"):
        value = payload.get(key)
        if isinstance(value, dict):
            value = value.get("text")
        if isinstance(value, str) and value:
            return value
    return ""


class _Order:
    """Response items into messages in the order a request sends them: a reply whose calls
    are not all answered stays open (later calls join it, outputs wait with it), and messages
    written meanwhile wait until its outputs are all in."""

    def __init__(self) -> None:
        self.assistant: dict | None = None
        self.assistant_line = 0
        self.open: list[str] = []  # calls of the assistant message not yet answered
        self.outputs: list[Record] = []  # their outputs so far
        self.deferred: list[Record] = []  # messages written while calls were open

    def item(self, line: int, payload: dict, where: Where) -> Iterator[Record]:
        kind = payload.get("type")
        call = _tool_call(payload)
        if call is not None:
            if self.assistant is None:
                self.assistant, self.assistant_line = {"role": "assistant", "content": None}, line
            self.assistant.setdefault("tool_calls", []).append(call)
            self.open.append(call["id"])
            return
        if kind in _OUTPUTS:
            call_id = str(payload.get("call_id", ""))
            self.outputs.append(_record(line, {"role": "tool", "tool_call_id": call_id, "content": _output(payload)}))
            if call_id in self.open:
                self.open.remove(call_id)
            if not self.open:
                yield from self.flush()
            return
        if kind not in ("message", "agent_message"):
            return  # reasoning, server-side calls, snapshots: not sent
        if not isinstance(payload.get("content", []), (list, type(None))):
            raise where.fail("payload.content: a Codex message's content must be a list")
        message = _message(payload) if kind == "message" else {**_message(payload), "role": "user"}
        if message["role"] == "assistant" and self.open:
            # text written after the reply's calls, before their outputs: the same reply
            self.assistant["content"] = _joined(self.assistant.get("content"), message["content"])
        elif self.open:
            self.deferred.append(_record(line, message))
        else:
            yield from self.flush()
            if message["role"] == "assistant":
                self.assistant, self.assistant_line = message, line
            else:
                yield _record(line, message)

    def flush(self) -> Iterator[Record]:
        """The open reply, its outputs and the messages that waited for them (calls still
        unanswered are left for the repair to answer)."""
        if self.assistant is not None:
            yield _record(self.assistant_line, self.assistant)
        yield from self.outputs
        yield from self.deferred
        self.assistant, self.open, self.outputs, self.deferred = None, [], [], []


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


def _parts(items: object) -> list[dict]:
    """Codex content items as Chat Completions parts (text and images with a URL)."""
    parts = []
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
