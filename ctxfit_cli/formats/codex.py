"""Codex CLI rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

Each line is `{"timestamp", "type", "payload"}`. Only `response_item` records are the
conversation the model saw; `event_msg` records repeat them for the UI and `turn_context`,
`compacted` are bookkeeping, so all three are skipped. A `session_meta` record's `instructions`
(when present) is the system prompt. Response items become OpenAI Chat Completions messages:

- `message` → a message of its role (`input_text` / `output_text` parts become text,
  `input_image` an image; `developer` counts as system);
- `function_call`, `custom_tool_call`, `local_shell_call` → tool calls; consecutive calls join
  the assistant message before them, as parallel calls do;
- `function_call_output`, `custom_tool_call_output` → `role: "tool"` results;
- `reasoning` items are skipped: their content is encrypted and Chat Completions has no place
  to send it (documented limitation); `web_search_call` is server-side and skipped too.
"""

from __future__ import annotations

from typing import Iterator

from .reading import Record
from .common import Where, dumps, json_text

ITEM_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")


def sniff(value: object) -> bool:
    return isinstance(value, dict) and value.get("type") in ITEM_TYPES and "payload" in value


def to_openai(records: Iterator[Record], path: str) -> Iterator[Record]:
    """Records of a rollout as OpenAI message records."""
    assistant: dict | None = None
    assistant_line = 0
    for record in records:
        value = record.value
        if not isinstance(value, dict) or not isinstance(value.get("payload"), dict):
            raise Where(path, record.line).fail('a Codex record must be an object with a "payload" object')
        payload = value["payload"]
        if value.get("type") == "session_meta":
            instructions = payload.get("instructions")
            if isinstance(instructions, str) and instructions:
                yield _record(record.line, {"role": "system", "content": instructions})
            continue
        if value.get("type") != "response_item":
            continue
        kind = payload.get("type")
        call = _tool_call(payload)
        if call is not None:
            if assistant is None:
                assistant, assistant_line = {"role": "assistant", "content": None}, record.line
            assistant.setdefault("tool_calls", []).append(call)
            continue
        if kind not in ("message", "function_call_output", "custom_tool_call_output"):
            continue
        if assistant is not None:
            yield _record(assistant_line, assistant)
            assistant = None
        if kind == "message":
            if not isinstance(payload.get("content", []), (list, type(None))):
                raise Where(path, record.line).fail("payload.content: a Codex message's content must be a list")
            message = _message(payload)
            if message["role"] == "assistant":
                assistant, assistant_line = message, record.line
            else:
                yield _record(record.line, message)
        else:
            yield _record(record.line, {
                "role": "tool", "tool_call_id": str(payload.get("call_id", "")),
                "content": _output_text(payload.get("output")),
            })
    if assistant is not None:
        yield _record(assistant_line, assistant)


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
    else:
        return None
    if not isinstance(arguments, str):
        arguments = json_text(arguments)
    call_id = payload.get("call_id") or payload.get("id") or ""
    return {"id": str(call_id), "type": "function", "function": {"name": str(name), "arguments": arguments}}


def _message(payload: dict) -> dict:
    role = payload.get("role", "user")
    role = "system" if role == "developer" else role
    parts = []
    for item in payload.get("content") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") in ("input_text", "output_text", "text"):
            parts.append({"type": "text", "text": str(item.get("text", ""))})
        elif item.get("type") == "input_image":
            parts.append({"type": "image_url", "image_url": {"url": str(item.get("image_url", ""))}})
    if all(p["type"] == "text" for p in parts):
        return {"role": role, "content": "\n".join(p["text"] for p in parts)}
    return {"role": role, "content": parts}


def _output_text(output: object) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return output["content"]
    return json_text(output)
