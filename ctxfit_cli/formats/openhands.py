"""OpenHands event logs: an event list (JSON array), or evaluation output (JSON Lines, one
instance per line with its `history` of events, `metadata` and `metrics`).

An event is an *action* (`"action": "run" | "edit" | "message" | "finish" | ...`) or an
*observation* (`"observation": ...`, `"cause"` = the action's id). The messages are rebuilt the
way OpenHands builds each request (`openhands/memory/conversation_memory.py`):

- the `system` action is the system prompt; its `args.tools` are the tool definitions;
- a `message` action is a user or assistant message (`args.content`);
- an action with `tool_call_metadata` is one tool call of the model response it names
  (`model_response.choices[0].message`: its text and `tool_calls`); calls of one response join
  one assistant message, sent once every call has its observation, followed by the results in
  call order; calls still open at the end are left out, as OpenHands leaves them out;
- an observation with `tool_call_metadata` is a `role: "tool"` result. A command's result
  carries the prefix and suffix OpenHands adds (`extras.metadata`); an error gets OpenHands'
  error line;
- a `finish` action is an assistant message (its thought and the response text);
- a command the user ran, and its output, are user messages;
- `recall` observations (workspace context, micro-agent knowledge) are rendered by OpenHands'
  prompt templates, which the log does not hold: they are not counted. Neither are events the
  model never sees (state changes, `null` observations).

Each model response is a recorded call (`Transcript.calls`) with its `usage.prompt_tokens`
(LiteLLM's count of the whole prompt, cache reads included) and `completion_tokens`; evaluation
output's `metrics.token_usages` fills in a response whose event carries no usage.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..agents.openhands import NAME
from ..core.model import Message, Part, PartKind, RecordedCall, Role, Transcript
from .common import Where, dumps, expect_dict, json_object, json_text, type_name
from .openai import parse_message
from .reading import Record

FORMAT = NAME
ERROR_LINE = "\n[Error occurred in processing last action]"
USER_COMMAND = "\nObserved result of command executed by user:\n"


def read(name: str, records: Iterator[Record]) -> Iterator[Transcript]:
    """One transcript per event list or evaluation instance."""
    for record in records:
        yield transcript(name, record)


def transcript(name: str, record: Record) -> Transcript:
    where = Where(name, record.line)
    value = record.value
    usages: dict[object, dict[str, Any]] = {}
    model = ""
    if isinstance(value, dict):
        events = value.get("history")
        where = where.at("history")
        metrics = json_object(value, "metrics")
        usages = {u.get("response_id"): u for u in metrics.get("token_usages") or [] if isinstance(u, dict)}
        config = (value.get("metadata") or {}).get("llm_config") if isinstance(value.get("metadata"), dict) else None
        model = str(config.get("model") or "") if isinstance(config, dict) else ""
    else:
        events = value
    if not isinstance(events, list):
        raise where.fail(f"an OpenHands log must be a list of events, got {type_name(events)}")
    builder = _Builder(name, record.line, usages, model)
    for i, event in enumerate(events):
        builder.add(expect_dict(event, where.at(i), "an event"), where.at(i))
    return builder.transcript()


class _Builder:
    """Messages rebuilt event by event, as OpenHands' conversation memory does."""

    def __init__(self, name: str, line: int, usages: dict[object, dict[str, Any]], model: str) -> None:
        self.name, self.line, self.usages, self.model = name, line, usages, model
        self.system: list[Message] = []
        self.tools: Message | None = None
        self.messages: list[Message] = []
        self.calls: list[RecordedCall] = []
        #: Responses whose calls are not all answered yet: response id -> (message, usage source).
        self.pending: dict[str, tuple[dict, dict]] = {}
        self.results: dict[str, dict] = {}

    def add(self, event: dict, where: Where) -> None:
        if "action" in event:
            self._action(event, where)
        else:
            self._observation(event, where)
        self._flush_answered(where)

    def _action(self, event: dict, where: Where) -> None:
        action, args = event.get("action"), event.get("args") or {}
        metadata = event.get("tool_call_metadata")
        if action == "system":
            self.system.append(self._parse({"role": "system", "content": str(args.get("content", ""))}, where))
            if args.get("tools") is not None:
                tools = args["tools"]
                self.tools = Message(Role.TOOLS, (Part(PartKind.TEXT, json_text(tools)),), dumps(tools), self.line)
        elif action == "message":
            role = "user" if event.get("source") == "user" else "assistant"
            self._append({"role": role, "content": str(args.get("content") or "")}, where, response=metadata)
        elif action == "finish":
            self._finish(event, args, metadata, where)
        elif isinstance(metadata, dict):
            self._tool_call(metadata, where)
        elif action == "run" and event.get("source") == "user":
            self._append({"role": "user", "content": f"User executed the command:\n{args.get('command', '')}"}, where)

    def _finish(self, event: dict, args: dict, metadata: object, where: Where) -> None:
        thought = str(args.get("thought") or "")
        if isinstance(metadata, dict):
            said = str(_response_message(metadata).get("content") or "")
            thought = said if not thought else thought if thought == said else f"{thought}\n{said}"
        role = "user" if event.get("source") == "user" else "assistant"
        self._append({"role": role, "content": thought}, where, response=metadata)

    def _tool_call(self, metadata: dict, where: Where) -> None:
        response = json_object(metadata, "model_response")
        said = _response_message(metadata)
        calls = said.get("tool_calls") or [
            {
                "id": metadata.get("tool_call_id"),
                "function": {"name": metadata.get("function_name", ""), "arguments": "{}"},
            }
        ]
        message: dict = {"role": "assistant"}
        content = said.get("content")
        message["content"] = content if isinstance(content, str) and content.strip() else None
        message["tool_calls"] = [_call(c) for c in calls if isinstance(c, dict)]
        # Later actions of the same response carry the same message: keep the first.
        self.pending.setdefault(str(response.get("id") or metadata.get("tool_call_id")), (message, metadata))

    def _observation(self, event: dict, where: Where) -> None:
        kind, content = event.get("observation"), str(event.get("content") or "")
        extras = json_object(event, "extras")
        if kind == "run":
            meta = json_object(extras, "metadata")
            content = f"{meta.get('prefix') or ''}{content}{meta.get('suffix') or ''}"
        elif kind == "error":
            content += ERROR_LINE
        metadata = event.get("tool_call_metadata")
        if isinstance(metadata, dict):
            call_id = str(metadata.get("tool_call_id") or "")
            self.results[call_id] = {
                "role": "tool",
                "tool_call_id": call_id,
                "name": str(metadata.get("function_name") or ""),
                "content": content,
            }
        elif kind == "run":
            self._append({"role": "user", "content": USER_COMMAND + content}, where)
        elif kind in ("error", "user_rejected"):
            self._append({"role": "user", "content": content}, where)

    def _flush_answered(self, where: Where) -> None:
        for response_id, (message, metadata) in list(self.pending.items()):
            ids = [c["id"] for c in message["tool_calls"]]
            if all(i in self.results for i in ids):
                del self.pending[response_id]
                self._append(message, where, response=metadata)
                for call_id in ids:
                    self._append(self.results.pop(call_id), where)

    def _append(self, value: dict, where: Where, *, response: object = None) -> None:
        if value["role"] == "assistant":
            self.calls.append(self._recorded(len(self.messages), response))
        self.messages.append(self._parse(value, where))

    def _parse(self, value: dict, where: Where) -> Message:
        return parse_message(value, dumps(value), where)

    def _recorded(self, index: int, metadata: object) -> RecordedCall:
        response = metadata.get("model_response") if isinstance(metadata, dict) else None
        if not isinstance(response, dict):
            return RecordedCall(index, model=self.model)
        response_id = str(response.get("id") or "")
        usage = json_object(response, "usage")
        logged = self.usages.get(response_id, {})
        prompt = usage.get("prompt_tokens", logged.get("prompt_tokens"))
        output = usage.get("completion_tokens", logged.get("completion_tokens"))
        return RecordedCall(
            index,
            response_id,
            str(response.get("model") or logged.get("model") or self.model),
            prompt if isinstance(prompt, int) else None,
            output if isinstance(output, int) else None,
        )

    def transcript(self) -> Transcript:
        # Calls without all their observations are left out, as OpenHands leaves them out; at
        # the end of the events, they are the ones running (the log is still being written).
        open_end = ["its last calls have no results yet"] if self.pending else []
        return Transcript(
            self.name,
            FORMAT,
            "openai",
            tuple(self.messages),
            tuple(self.system),
            self.tools,
            line=self.line,
            calls=self.calls,
            open_end=open_end,
        )


def _response_message(metadata: dict) -> dict:
    response = metadata.get("model_response")
    choices = response.get("choices") if isinstance(response, dict) else None
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = first.get("message")
    return message if isinstance(message, dict) else {}


def _call(call: dict) -> dict:
    """A tool call as Chat Completions sends it (LiteLLM adds an `index` that is not sent)."""
    function = json_object(call, "function")
    return {
        "id": str(call.get("id") or ""),
        "type": "function",
        "function": {"name": str(function.get("name") or ""), "arguments": function.get("arguments", "")},
    }
