"""Claude Code session logs (`~/.claude/projects/<project>/<session>.jsonl`).

Each line is a record. Conversation records are `{"type": "user" | "assistant", "message":
{...}, "uuid", "parentUuid", "isSidechain", "sessionId", ...}`; bookkeeping records (`summary`,
`system`, `file-history-snapshot`, `queue-operation`, ...) are skipped. How the log is read:

- Claude Code writes one record per content block, so an assistant reply with thinking, text and
  two tool calls is four records sharing `message.id`; they are merged back into one message.
- Each tool result is its own user record. The results that answer one assistant message are
  merged into the one user message the API expects, ordered as the calls were (matched by
  `tool_use_id`, so results that were written out of order are put back in order), before any
  other content of that message.
- More generally, consecutive records of one role become one message, as Claude Code does before
  it sends a request (meta text next to a prompt, say): the API needs alternating roles.
- `isSidechain: true` records belong to a sub-agent's conversation, not the main one, and are
  skipped — unless the file is a sub-agent's own log (its first record is a sidechain), in which
  case only sidechain records are read.
- `isMeta: true` user records (caveats, slash-command output, skill text) are sent to the model,
  so they are kept and counted.
- Records are read in file order; only `message.role` and `message.content` are sent, so the
  output message is rebuilt from those two fields.
- `/compact` (manual, or automatic near the context limit) writes a `system` record with
  `subtype: "compact_boundary"`; the model then sees only the compact summary and what follows.
  So each compaction starts a new conversation: the log is read as one transcript per segment.

The result is Anthropic Messages: a Claude Code log is fitted into an Anthropic request.
"""

from __future__ import annotations

from typing import Iterator

from .reading import Record
from .common import Where, as_blocks, dumps, expect_dict

CONVERSATION = ("user", "assistant")
#: Stands in the record stream where the log was compacted: what follows is a new conversation.
COMPACTED = object()


def sniff(value: object) -> bool:
    return isinstance(value, dict) and "role" not in value and value.get("type") in (
        "user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation",
    ) and ("uuid" in value or "sessionId" in value or "leafUuid" in value or "messageId" in value)


def to_anthropic(records: Iterator[Record], path: str) -> Iterator[Record]:
    """Records of a Claude Code log as Anthropic message records (JSON bytes rebuilt).

    Consecutive records of one role become one message, as Claude Code merges them before it
    sends a request (the API needs alternating roles): sibling blocks of one assistant reply,
    the results of parallel calls, meta text next to a prompt.
    """
    sidechain: bool | None = None
    pending: _Pending | None = None
    call_order: list[str] = []
    for record in records:
        value = record.value
        if not isinstance(value, dict):
            raise Where(path, record.line).fail("a Claude Code record must be a JSON object")
        role = value.get("type")
        if role == "system" and value.get("subtype") == "compact_boundary":
            if pending is not None:
                yield pending.flush(call_order)
                pending, call_order = None, []
            yield Record(record.line, COMPACTED, b"")
            continue
        if role not in CONVERSATION:
            continue
        if sidechain is None:
            sidechain = bool(value.get("isSidechain"))
        if bool(value.get("isSidechain")) != sidechain:
            continue
        where = Where(path, record.line)
        message = expect_dict(value.get("message"), where, '"message"')
        if "content" not in message:
            raise where.fail('"message" has no "content"')
        if pending is not None and pending.role == role:
            pending.extend(message["content"])
            continue
        if pending is not None:
            if pending.role == "assistant":
                call_order = pending.call_ids()
            yield pending.flush(call_order)
        pending = _Pending(role, record.line, message["content"])
    if pending is not None:
        yield pending.flush(call_order)


class _Pending:
    """A message being assembled from consecutive records of one role."""

    def __init__(self, role: str, line: int, content: object) -> None:
        self.role, self.line = role, line
        self.content: object = content

    def extend(self, content: object) -> None:
        self.content = as_blocks(self.content) + as_blocks(content)

    def call_ids(self) -> list[str]:
        return [b.get("id") for b in as_blocks(self.content)
                if isinstance(b, dict) and b.get("type") == "tool_use"]

    def flush(self, call_order: list[str]) -> Record:
        """The message; a user message's tool results come first, in the order of the calls."""
        content = self.content
        if self.role == "user" and isinstance(content, list):
            rank = {call_id: i for i, call_id in enumerate(call_order) if isinstance(call_id, str)}
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            others = [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result")]
            # A tool_use_id that is not a string sorts last; the Anthropic reader then reports it.
            results.sort(key=lambda b: rank.get(_text_or_none(b.get("tool_use_id")), len(rank)))
            content = results + others
        message = {"role": self.role, "content": content}
        return Record(self.line, message, dumps(message))


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None
