"""Reading the usage that agent logs record, into `Transcript.calls` (`RecordedCall`).

- **Claude Code**: every assistant record carries `message.usage`; the prompt of that call is
  ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens`` (a missing field
  counts 0; no usage at all: unknown). All records of one reply share `message.id` and the same
  usage, so one call per id. `claude_code_call` reads one record.
- **Codex**: an `event_msg` of type `token_count` follows each model response; its
  `info.last_token_usage.input_tokens` is the whole prompt of that call (OpenAI counts cached
  input inside `input_tokens`), `info.model_context_window` the window the client assumed, and
  the model is the one of the latest `turn_context`. Codex re-emits the same event (same
  `total_token_usage`) after a turn context; repeats are dropped. `CodexCalls` watches the
  records going into the reader and the messages coming out, and ties each event to the
  assistant message holding the last reply item written before it.

>>> claude_code_call({"message": {"id": "m1", "model": "claude-opus-4-6", "usage": {
...     "input_tokens": 3, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 20000,
...     "output_tokens": 5}}}, 7)
RecordedCall(message=7, id='m1', model='claude-opus-4-6', prompt_tokens=20013, output_tokens=5, window=None)
"""

from __future__ import annotations

from typing import Iterable, Iterator

from ..core.model import Message, RecordedCall, Role
from .reading import Record

#: Claude Code usage fields whose sum is the whole prompt of a call.
PROMPT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
#: Codex response items that are the model's reply (what a `token_count` event follows).
_REPLY_ITEMS = ("function_call", "custom_tool_call", "local_shell_call", "reasoning")


def _count(value: object) -> int | None:
    """A token count as the log has it: a non-negative int, else unknown."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def claude_code_call(value: dict, message: int) -> RecordedCall | None:
    """The call a Claude Code assistant record reports, for the message at index `message`;
    None when the record has no `message` object. A record without usage gives a call whose
    prompt is unknown (None); `<synthetic>` replies (written by Claude Code itself, not the
    model) keep their model name so that readers of `calls` can leave them out."""
    body = value.get("message")
    if not isinstance(body, dict):
        return None
    usage = body.get("usage")
    prompt = output = None
    if isinstance(usage, dict):
        counts = [_count(usage.get(k)) for k in PROMPT_FIELDS]
        if any(c is not None for c in counts):
            prompt = sum(c or 0 for c in counts)
        output = _count(usage.get("output_tokens"))
    model = body.get("model")
    return RecordedCall(message, str(body.get("id") or ""), model if isinstance(model, str) else "",
                        prompt, output)


class CodexCalls:
    """Fills `calls` from a Codex rollout while it is read.

    Wrap the records before the reader (`records`) and the messages after it (`messages`); the
    calls are known once the messages are exhausted.
    """

    def __init__(self, calls: list[RecordedCall]) -> None:
        self.calls = calls
        self._model = ""
        self._reply_line = 0
        self._last_total: object = None
        #: (line of the last reply item before the event, prompt, output, model, window)
        self._events: list[tuple[int, int | None, int | None, str, int | None]] = []

    def records(self, records: Iterable[Record]) -> Iterator[Record]:
        for record in records:
            if isinstance(record.value, dict):
                self._see(record.line, record.value)
            yield record

    def _see(self, line: int, value: dict) -> None:
        kind, payload = value.get("type"), value.get("payload")
        if not isinstance(payload, dict):
            return
        if kind == "turn_context" and isinstance(payload.get("model"), str):
            self._model = payload["model"]
        elif kind == "response_item" and (payload.get("type") in _REPLY_ITEMS or (
                payload.get("type") == "message" and payload.get("role") == "assistant")):
            self._reply_line = line
        elif kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info")
            if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
                return
            total = info.get("total_token_usage")
            if total is not None and total == self._last_total:
                return  # the same event again, written after a turn context
            self._last_total = total
            last = info["last_token_usage"]
            self._events.append((self._reply_line, _count(last.get("input_tokens")),
                                 _count(last.get("output_tokens")), self._model,
                                 _count(info.get("model_context_window")) or None))

    def messages(self, messages: Iterable[Message]) -> Iterator[Message]:
        replies: list[tuple[int, int]] = []  # (line, index) of each assistant message
        index = 0
        for message in messages:
            if message.role is Role.ASSISTANT:
                replies.append((message.line, index))
            yield message
            index += 1
        self._resolve(replies)

    def _resolve(self, replies: list[tuple[int, int]]) -> None:
        """Each event belongs to the assistant message that starts last at or before the last
        reply item written before it; an event before any reply is dropped."""
        replies.sort()
        for reply_line, prompt, output, model, window in self._events:
            owner = None
            for line, index in replies:
                if line > reply_line:
                    break
                owner = index
            if owner is not None and reply_line:
                self.calls.append(RecordedCall(owner, "", model, prompt, output, window))
        self.calls.sort(key=lambda c: c.message)
        self._events.clear()
