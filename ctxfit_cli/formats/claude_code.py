"""Claude Code session logs (`~/.claude/projects/<project>/<session>.jsonl`).

Each line is a record. Conversation records are `{"type": "user" | "assistant", "message":
{...}, "uuid", "parentUuid", "isSidechain", "sessionId", ...}`; bookkeeping records (`summary`,
`system`, `file-history-snapshot`, `queue-operation`, ...) are skipped. How the log is read:

- Claude Code writes one record per content block, so an assistant reply with thinking, text and
  two tool calls is four records sharing `message.id`; consecutive siblings are merged back into
  one assistant message.
- Each tool result is its own user record. The results that answer one assistant message are
  merged into the one user message the API expects, ordered as the calls were (matched by
  `tool_use_id`, so results that were written out of order are put back in order).
- `isSidechain: true` records belong to a sub-agent's conversation, not the main one, and are
  skipped — unless the file is a sub-agent's own log (its first record is a sidechain), in which
  case only sidechain records are read.
- `isMeta: true` user records (caveats, slash-command output, skill text) are sent to the model,
  so they are kept and counted.
- Records are read in file order; only `message.role` and `message.content` are sent, so the
  output message is rebuilt from those two fields.

The result is Anthropic Messages: a Claude Code log is fitted into an Anthropic request.
"""

from __future__ import annotations

from typing import Iterator

from ..reading import Record
from .common import Where, dumps, expect_dict

CONVERSATION = ("user", "assistant")


def sniff(value: object) -> bool:
    return isinstance(value, dict) and "role" not in value and value.get("type") in (
        "user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation",
    ) and ("uuid" in value or "sessionId" in value or "leafUuid" in value or "messageId" in value)


def to_anthropic(records: Iterator[Record], path: str) -> Iterator[Record]:
    """Records of a Claude Code log as Anthropic message records (JSON bytes rebuilt)."""
    sidechain: bool | None = None
    assistant: _Pending | None = None
    results: _Pending | None = None
    call_order: list[str] = []
    for record in records:
        value = record.value
        if not isinstance(value, dict):
            raise Where(path, record.line).fail(f"a Claude Code record must be a JSON object")
        if value.get("type") not in CONVERSATION:
            continue
        if sidechain is None:
            sidechain = bool(value.get("isSidechain"))
        if bool(value.get("isSidechain")) != sidechain:
            continue
        where = Where(path, record.line)
        message = expect_dict(value.get("message"), where, '"message"')
        content = message.get("content")
        if value["type"] == "assistant":
            if results:
                yield results.flush(call_order)
                results = None
            message_id = message.get("id")
            if assistant and message_id and assistant.key == message_id:
                assistant.extend(content, where)
                continue
            if assistant:
                yield assistant.flush()
            assistant = _Pending("assistant", message_id, record.line, content, where)
            call_order = []
        else:
            if assistant:
                call_order = assistant.call_ids()
                yield assistant.flush()
                assistant = None
            if _only_results(content):
                if results is None:
                    results = _Pending("user", None, record.line, content, where)
                else:
                    results.extend(content, where)
                continue
            if results:
                yield results.flush(call_order)
                results = None
            yield _Pending("user", None, record.line, content, where).flush()
    if assistant:
        yield assistant.flush()
    if results:
        yield results.flush(call_order)


def _only_results(content: object) -> bool:
    return isinstance(content, list) and bool(content) and all(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


class _Pending:
    """A message being assembled from several records."""

    def __init__(self, role: str, key: object, line: int, content: object, where: Where) -> None:
        self.role, self.key, self.line = role, key, line
        self.content: object = content
        self.where = where

    def extend(self, content: object, where: Where) -> None:
        self.content = _as_blocks(self.content) + _as_blocks(content)

    def call_ids(self) -> list[str]:
        return [b.get("id") for b in _as_blocks(self.content)
                if isinstance(b, dict) and b.get("type") == "tool_use"]

    def flush(self, call_order: list[str] | None = None) -> Record:
        content = self.content
        if call_order and isinstance(content, list):
            rank = {call_id: i for i, call_id in enumerate(call_order)}
            content = sorted(content, key=lambda b: rank.get(b.get("tool_use_id"), len(rank)))
        message = {"role": self.role, "content": content}
        return Record(self.line, message, dumps(message))


def _as_blocks(content: object) -> list:
    if isinstance(content, list):
        return content
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return []
