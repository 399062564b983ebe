"""Gemini CLI chat recordings (`~/.gemini/tmp/<project>/chats/session-*.json` or `.jsonl`).

Two layouts, read the way Gemini CLI itself reads them (`chatRecordingService.ts`,
`loadConversationRecord`):

- **JSON** (before 0.40): one document `{sessionId, projectHash, startTime, lastUpdated,
  messages: [...]}`.
- **JSON Lines** (0.40 on): a first line of metadata (`sessionId`, `projectHash`, ...), then
  records appended as the session goes: a message (`id`, `type`, ...) — written again, whole,
  each time its tool calls, results or tokens change, so the last record of an id wins and keeps
  the id's first place; `{"$set": {...}}` metadata patches, where `$set.messages` replaces the
  whole list (a compression, a rollback); `{"$rewindTo": id}`, which drops that message and
  every later one (an id not found drops them all). A line that is not JSON is skipped.

A message is `{id, timestamp, type: "user" | "gemini" | "info" | "error" | "warning", content}`;
a `gemini` message adds `toolCalls` (each `{id, name, args, result, status}`, `result` being
the parts sent back: `functionResponse` parts, maybe an image), `thoughts` (summaries), `model`
and `tokens {input, output, cached, thoughts, tool, total}`.

The request the agent sends is rebuilt as Gemini CLI rebuilds it on resume
(`convertSessionToClientHistory`): `info`/`error`/`warning` messages and slash commands (`/...`,
`?`) are not sent; a user message is a user content; a gemini message is a model content — its
`content` parts as they are when they hold the calls or thoughts (newer versions), else its text
and one `functionCall` per tool call, with its id — followed by a user content of the calls'
results. Thought summaries of older recordings are not sent: the recorded prompt sizes say the
agent did not send them (on the real recording, the prompt grows by the call and its result
alone). Calls left without a result (a recording still being written, a cancelled call) are
answered by `core.repair`, reported.

**Usage.** `tokens` is the API's `usageMetadata` of the reply: `input` (`promptTokenCount`,
cached tokens included) is the whole prompt of that call, so each gemini message with tokens is
a `RecordedCall` at its model content (`output_tokens`: output plus thinking, both billed as
output). A reply merged with the model content before it records no call.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

from ..agents.gemini_cli import NAME, recognise
from ..agents.session import record_type
from ..core.model import Message, RecordedCall, Transcript
from . import gemini
from .common import Where, dumps
from .gemini_reading import conversation
from .reading import Record
from .skipped import Skipped

#: Message types that Gemini CLI shows but never sends to the model.
NOT_SENT = ("info", "error", "warning")
#: Every message type ctxfit knows; a message of another type is skipped and counted (`Skipped`).
MESSAGE_TYPES = frozenset(("user", "gemini", *NOT_SENT))
#: The keys ctxfit knows on a message record; others are counted, never fatal.
MESSAGE_KEYS = frozenset(
    ("id", "timestamp", "type", "content", "displayContent", "toolCalls", "thoughts", "tokens", "model")
)


class Recording(NamedTuple):
    """A recording as Gemini CLI loads it: its metadata and its messages, each with the line
    of the record it was last written by."""

    metadata: dict
    messages: list[tuple[dict, int]]


def recording(records: Iterable[Record], skipped: Skipped | None = None) -> Recording:
    """Replay the records of a recording (either layout) into its final state; a record of no
    shape it knows is counted in `skipped`."""
    skipped = skipped if skipped is not None else Skipped()
    metadata: dict = {}
    messages: dict[str, tuple[dict, int]] = {}
    for record in records:
        value = record.value
        if not isinstance(value, dict):
            continue
        if isinstance(value.get("$rewindTo"), str):
            _rewind(messages, value["$rewindTo"])
        elif isinstance(value.get("id"), str):
            messages[value["id"]] = (value, record.line)
        elif isinstance(value.get("$set"), dict):
            patch = value["$set"]
            if isinstance(patch.get("messages"), list):
                messages.clear()
                _add(messages, patch["messages"], record.line)
            metadata.update(patch)
        elif recognise(value):
            metadata.update(value)
            if isinstance(value.get("messages"), list):
                _add(messages, value["messages"], record.line)
        else:
            skipped.record(value.get("type"))
    metadata.pop("messages", None)
    return Recording(metadata, list(messages.values()))


def _add(messages: dict, values: list, line: int) -> None:
    for value in values:
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            messages[value["id"]] = (value, line)


def _rewind(messages: dict, message_id: str) -> None:
    ids = list(messages)
    at = ids.index(message_id) if message_id in messages else 0
    for key in ids[at:]:
        del messages[key]


def read(name: str, records: Iterable[Record], skipped: Skipped | None = None) -> Iterator[Transcript]:
    """The conversation a recording holds, as the Gemini request its agent sends next; what it
    does not know is counted in `skipped`."""
    skipped = skipped if skipped is not None else Skipped()
    transcript = Transcript(name, NAME, "gemini", ())
    replies: dict[Message, tuple] = {}  # model contents -> what the recording says of their call
    parsed = []
    for value, line, reply in _contents(recording(records, skipped).messages, skipped):
        message = gemini.parse_content(value, dumps(value), Where(name, line))
        if reply is not None:
            replies[message] = reply
        parsed.append(message)
    messages = []
    for index, message in enumerate(conversation(parsed, name, transcript.repairs, transcript.open_end)):
        reply = replies.pop(message, None)
        if reply is not None:
            transcript.calls.append(RecordedCall(index, *reply))
        messages.append(message)
    transcript.messages = tuple(messages)
    yield transcript


def _contents(messages: list[tuple[dict, int]], skipped: Skipped) -> Iterator[tuple[dict, int, tuple | None]]:
    """(content, line, the reply's (id, model, prompt, output) or None) for what is sent.

    Gemini CLI 0.61 records each tool result twice: in its call (`toolCalls[].result`) and
    again as the user message it sends next. The results a reply's calls hold are sent once:
    a user message's `functionResponse` parts that answer them are left out (and a message of
    nothing else), as Gemini CLI leaves them out when it resumes a session."""
    answered: set[str] = set()  # call ids whose results the last reply's calls hold
    for message, line in messages:
        kind = record_type(message)
        if kind not in MESSAGE_TYPES:
            skipped.record(kind)
            continue
        skipped.keys(message, MESSAGE_KEYS)
        if kind == "user":
            parts = [p for p in _parts(message.get("content")) if _response_id(p) not in answered]
            if parts and not _is_command(parts):
                yield {"role": "user", "parts": parts}, line, None
            answered = set()
        elif kind == "gemini":
            calls = [c for c in message.get("toolCalls") or [] if isinstance(c, dict)]
            parts = _model_parts(message, calls)
            if parts:
                yield {"role": "model", "parts": parts}, line, _reply(message)
            results = [part for call in calls for part in _result_parts(call)] if parts else []
            if results:
                yield {"role": "user", "parts": results}, line, None
            answered = {i for i in map(_response_id, results) if i is not None}


def _response_id(part: object) -> str | None:
    """The call id a `functionResponse` part answers, or None (any other part, or no id)."""
    response = gemini.field(part, "functionResponse", "function_response") if isinstance(part, dict) else None
    call_id = response.get("id") if isinstance(response, dict) else None
    return call_id if isinstance(call_id, str) and call_id else None


def _parts(content: object) -> list:
    """A `PartListUnion` (a string, a part, or a list of either) as a list of parts."""
    if isinstance(content, str):
        return [{"text": content}] if content else []
    if isinstance(content, list):
        return [{"text": p} if isinstance(p, str) else p for p in content if p not in ("", None)]
    return [content] if isinstance(content, dict) else []


def _is_command(parts: list) -> bool:
    """A slash command or `?` (handled by the CLI, not sent), or only blank text."""
    if not all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in parts):
        return False  # an image, a file: something is sent
    stripped = "".join(p["text"] for p in parts).strip()
    return not stripped or stripped.startswith(("/", "?"))


def _model_parts(message: dict, calls: list[dict]) -> list:
    parts = _parts(message.get("content"))
    if any(
        isinstance(p, dict) and (gemini.field(p, "functionCall", "function_call") is not None or p.get("thought"))
        for p in parts
    ):
        return parts  # a newer recording: its content is what the model sent, calls included
    parts = [p for p in parts if not (isinstance(p, dict) and isinstance(p.get("text"), str) and not p["text"].strip())]
    for call in calls:
        function_call = {"name": call.get("name"), "args": call.get("args") or {}}
        if isinstance(call.get("id"), str) and call["id"]:
            function_call = {"id": call["id"], **function_call}
        parts.append({"functionCall": function_call})
    return parts


def _result_parts(call: dict) -> list:
    """The parts a tool call's result sends (none while it has no result)."""
    result = call.get("result")
    if isinstance(result, str):
        response: dict = {"name": call.get("name"), "response": {"output": result}}
        if isinstance(call.get("id"), str) and call["id"]:
            response = {"id": call["id"], **response}
        return [{"functionResponse": response}]
    return _parts(result) if result else []


def _reply(message: dict) -> tuple | None:
    tokens = message.get("tokens")
    model = message.get("model") if isinstance(message.get("model"), str) else ""
    if not isinstance(tokens, dict):
        return (str(message.get("id") or ""), model, None, None)
    prompt, output, thoughts = (_count(tokens.get(k)) for k in ("input", "output", "thoughts"))
    total_output = None if output is None else output + (thoughts or 0)
    return (str(message.get("id") or ""), model, prompt, total_output)


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
