"""Cline and Roo Code task histories (`tasks/<id>/api_conversation_history.json`).

The file is one JSON list of Anthropic-style messages, each with the agent's own keys beside
`role` and `content`: `ts` (every message), and on each reply `modelInfo` (`modelId`,
`providerId`, `mode`) and `metrics` (`tokens.prompt`, `.completion`, `.cached`, `cost`); Roo
Code adds `isSummary`, `condenseId`, `condenseParent`, `truncationParent`, ... It is read into
the request the agent sends, as its own source builds it:

- **Only `role` and `content` are sent.** Cline removes its keys before any provider sees a
  message (`convertClineStorageToAnthropicMessage`, `src/shared/messages/content.ts`), and
  from each block its `call_id`, `reasoning_details` and `summary` (and `signature` from any
  block but `thinking`); a `thinking` block without a signature is dropped.
- **Tool results.** With native tool calls, Cline answers a call with a `tool_result` block
  when it knows the call's API id, and otherwise writes the result as user text (`[read_file
  for 'x'] Result: ...`, `ToolResultUtils.pushToolResult`). Before each request its
  `ContextManager.ensureToolResultsFollowToolUse` gives every call that the next user message
  does not answer a `tool_result` whose content is `"result missing"`, puts the results first
  in call order, and keeps the rest of the message (those text results included) after them.
  That is what is sent, so that is what is read: the text stays where it is, right after the
  results, and nothing is moved into a result that Cline does not move there.
- **Roo Code's condensing** hides the messages whose `condenseParent` names a summary still in
  the history (`isSummary` with that `condenseId`), and those whose `truncationParent` names a
  truncation marker still there (`getEffectiveApiHistory`); hidden messages are not sent.
- **Calls.** Each reply is one model call: `modelInfo.modelId` is its model, `metrics.tokens.
  prompt` (input tokens, cache reads included) its whole prompt, `.completion` its output.

The system prompt and tool definitions are not in the file (their size is inferred from the
recorded usage). The result is Anthropic Messages: sent as `anthropic`.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..agents.cline import FILE_NAME, NAME  # noqa: F401 (FILE_NAME re-exported)
from ..core.model import Message, RecordedCall, Transcript
from ..core.repair import repair
from ..errors import NoConversation
from .anthropic import parse_message
from .common import Where, dumps, expect_dict, json_object, type_name
from .reading import Record
from .repair_writers import WRITERS

FORMAT = NAME
#: The content Cline gives a call whose result it did not write as a `tool_result` block.
RESULT_MISSING = "result missing"
#: Block keys Cline removes before sending (`cleanContentBlock`).
_BLOCK_KEYS = ("call_id", "reasoning_details", "summary")


def read(name: str, records: Iterator[Record]) -> Iterator[Transcript]:
    """The transcript of each history in the input (one per document)."""
    for record in records:
        yield transcript(name, record)


def transcript(name: str, record: Record) -> Transcript:
    where = Where(name, record.line)
    history = record.value
    if not isinstance(history, list):
        raise where.fail(f"a Cline task history must be a list of messages, got {type_name(history)}")
    if not history:
        raise NoConversation(name, record.line, "has no messages yet")
    stored = [expect_dict(m, where.at(i), "a Cline message") for i, m in enumerate(history)]
    kept = [(i, m) for i, m in enumerate(stored) if not _hidden(m, stored)]
    sent = _with_results([(i, _as_sent(m, where.at(i))) for i, m in kept])
    replies: dict[int, RecordedCall] = {}  # id(Message) -> its call (index filled in below)
    messages: list[Message] = []
    for (i, message), (_, original) in zip(sent, kept):
        parsed = parse_message(message, dumps(message), where.at(i))
        if message["role"] == "assistant":
            replies[id(parsed)] = _call(original)
        messages.append(parsed)
    result = Transcript(name, FORMAT, "anthropic", (), line=record.line)
    repaired = list(repair(messages, WRITERS["anthropic"], name, result.repairs, result.open_end))
    result.messages = tuple(repaired)
    result.calls = [replies[id(m)]._replace(message=k) for k, m in enumerate(repaired) if id(m) in replies]
    return result


def _hidden(message: dict, history: list[dict]) -> bool:
    """Whether Roo Code's condensing or truncation hides this message from the model."""
    parent = message.get("condenseParent")
    if parent and any(m.get("isSummary") and m.get("condenseId") == parent for m in history):
        return True
    parent = message.get("truncationParent")
    return bool(parent) and any(m.get("isTruncationMarker") and m.get("truncationId") == parent for m in history)


def _as_sent(message: dict, where: Where) -> dict:
    """`role` and `content` only, each block without the keys Cline removes."""
    role, content = message.get("role"), message.get("content")
    if role not in ("user", "assistant"):
        raise where.fail(f"a Cline message's role must be user or assistant, got {role!r}")
    if isinstance(content, list):
        content = [_clean(b) for b in content if not _unsigned_thinking(b)]
    return {"role": role, "content": content}


def _unsigned_thinking(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") == "thinking" and not block.get("signature")


def _clean(block: object) -> object:
    if not isinstance(block, dict):
        return block  # the Anthropic reader says what is wrong with it
    drop = _BLOCK_KEYS + (("signature",) if block.get("type") != "thinking" else ())
    return {k: v for k, v in block.items() if k not in drop} if any(k in block for k in drop) else block


def _with_results(messages: list[tuple[int, dict]]) -> list[tuple[int, dict]]:
    """Every call of a reply answered at the start of the next user message, as Cline does
    before each request: its own `tool_result` blocks in call order, a `"result missing"`
    one for each call without, then the rest of the message as it was."""
    out = list(messages)
    for k in range(len(out) - 1):
        (_, reply), (at, after) = out[k], out[k + 1]
        calls = [b["id"] for b in _blocks(reply) if b.get("type") == "tool_use" and isinstance(b.get("id"), str)]
        if reply["role"] != "assistant" or not calls or after["role"] != "user":
            continue
        blocks = _blocks(after)
        results = {
            b["tool_use_id"]: b for b in blocks if b.get("type") == "tool_result" and b.get("tool_use_id") in calls
        }
        others = [b for b in blocks if b.get("tool_use_id") not in results]  # (orphans: the repair reports them)
        leading = [b.get("tool_use_id") for b in blocks[: len(calls)]]
        if leading == calls and len(results) == len(calls):
            continue  # already what the API expects
        answered = [
            results.get(c) or {"type": "tool_result", "tool_use_id": c, "content": RESULT_MISSING} for c in calls
        ]
        out[k + 1] = (at, {"role": "user", "content": answered + others})
    return out


def _blocks(message: dict) -> list[dict]:
    content = message["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _call(message: dict) -> RecordedCall:
    """What Cline recorded about the call that produced this reply (index set by the caller)."""
    info = json_object(message, "modelInfo")
    metrics = json_object(message, "metrics")
    tokens = json_object(metrics, "tokens")
    model = info.get("modelId")
    return RecordedCall(
        0,
        str(message.get("id") or ""),
        model if isinstance(model, str) else "",
        _count(tokens.get("prompt")),
        _count(tokens.get("completion")),
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
