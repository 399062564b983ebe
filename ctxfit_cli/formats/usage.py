"""Reading the usage that agent logs record, into `Transcript.calls` (`RecordedCall`).

- **Claude Code**: every assistant record carries `message.usage`; the prompt of that call is
  ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens`` (a missing field
  counts 0; no usage at all: unknown). All records of one reply share `message.id` and the same
  usage, so one call per id. `claude_code_call` reads one record.
- **Codex**: an `event_msg` of type `token_count` goes with each model response (after its
  items; before them in Codex 0.40); its `info.last_token_usage.input_tokens` is the whole
  prompt of that call (OpenAI counts cached input inside `input_tokens`),
  `reasoning_output_tokens` the reasoning it produced, `info.model_context_window` the window
  the client assumed, and the model is the one of the latest `turn_context`. Codex re-emits
  the same event (same `total_token_usage`) after a turn context; repeats are dropped. The
  reader (`codex.Runs`) says which call each event belongs to; `CodexCalls` puts it on the
  assistant message that call made.

>>> claude_code_call({"message": {"id": "m1", "model": "claude-opus-4-6", "usage": {
...     "input_tokens": 3, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 20000,
...     "output_tokens": 5}}}, 7)  # doctest: +NORMALIZE_WHITESPACE
RecordedCall(message=7, id='m1', model='claude-opus-4-6', prompt_tokens=20013, output_tokens=5, window=None,
             reasoning_tokens=None)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..core.model import Message, RecordedCall, Role

#: Claude Code usage fields whose sum is the whole prompt of a call.
PROMPT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def token_count(value: object) -> int | None:
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
        counts = [token_count(usage.get(k)) for k in PROMPT_FIELDS]
        if any(c is not None for c in counts):
            prompt = sum(c or 0 for c in counts)
        output = token_count(usage.get("output_tokens"))
    model = body.get("model")
    return RecordedCall(message, str(body.get("id") or ""), model if isinstance(model, str) else "", prompt, output)


class CodexCalls:
    """Fills `calls` from a Codex rollout while it is read.

    Give `on_usage` to the reader (`codex.to_openai`: it knows which model call each
    `token_count` event belongs to, by the line of the call's first item) and wrap the
    messages coming out of it (`messages`): the assistant message made by a call carries that
    line, so it gets the call. The calls are known once the messages are exhausted.
    """

    def __init__(self, calls: list[RecordedCall]) -> None:
        self.calls = calls
        #: Each model named by a call's usage, as it is read (`Transcript.named_models`).
        self.models: list[str] = []
        #: The call of each run, by the line of its first item.
        self._by_line: dict[int, tuple[int | None, int | None, str, int | None, int | None]] = {}

    def on_usage(self, line: int, info: dict, model: str) -> None:
        last = info["last_token_usage"]
        if model:
            self.models.append(model)
        self._by_line[line] = (
            token_count(last.get("input_tokens")),
            token_count(last.get("output_tokens")),
            model,
            token_count(info.get("model_context_window")) or None,
            token_count(last.get("reasoning_output_tokens")),
        )

    def messages(self, messages: Iterable[Message]) -> Iterator[Message]:
        replies: list[tuple[int, int]] = []  # (line, index) of each assistant message
        for index, message in enumerate(messages):
            if message.role is Role.ASSISTANT:
                replies.append((message.line, index))
            yield message
        for line, index in replies:
            found = self._by_line.pop(line, None)
            if found is not None:
                prompt, output, model, window, reasoning = found
                self.calls.append(RecordedCall(index, "", model, prompt, output, window, reasoning))
