"""Claude Code session logs (`~/.claude/projects/<project>/<session>.jsonl`).

Each line is a record. Conversation records are `{"type": "user" | "assistant", "message":
{...}, "uuid", "parentUuid", "isSidechain", "sessionId", ...}`; bookkeeping records (`BOOKKEEPING`:
`summary`, `system`, `progress`, `attachment`, `file-history-snapshot`, `queue-operation`, and
Claude Code 2.1's `permission-mode`, `mode`, `last-prompt`, `ai-title`, `custom-title`,
`agent-name`, ...) are not sent to the model and are skipped; a record of a type in neither list
is skipped too, and counted (`Skipped`), as is a key of a conversation record not in
`RECORD_KEYS`: Claude Code adds both every few weeks, and neither stops the read. The log is
read back into the conversation the model received:

- **One reply, one message.** Claude Code writes one record per content block of a reply, all
  with the reply's `message.id`, and writes each tool result as soon as its tool finishes — so
  the records of one reply can be separated by results of its earlier calls (a reply with nine
  calls run one after another is nine `tool_use` records, each followed by its result). Records
  are grouped by `message.id` wherever they sit, until a record of another reply starts. (A
  record without an id joins the reply before it only if nothing came between them.)
- **Results right after their call.** Every `tool_result` block is moved to the user message
  that follows the reply that made the call (matched by `tool_use_id`), first in that message
  and in the order of the calls, as the API requires. Anything else a user record carries —
  "[Request interrupted by user]" written beside or after the results, text typed while a tool
  ran, `isMeta` text (caveats, skill text, command output, which the model is sent) — follows
  the results in that user message. So a user record that holds results *and* text gives a
  message whose results answer the reply before it.
- **Calls.** Each distinct `message.id` of the conversation's assistant records is one model
  call: `Transcript.calls` gets its message index, id, model, `prompt_tokens` = `input_tokens +
  cache_creation_input_tokens + cache_read_input_tokens` and `output_tokens` (the largest any
  record of the reply logged: the last record carries the final count).
- **`<synthetic>` replies** (model `"<synthetic>"`) are written by Claude Code itself — an API
  error shown as a reply, "No response requested." — not by the model: no API call made them,
  so they are not calls and are left out of the conversation.
- **Sidechains.** `isSidechain: true` records belong to a sub-agent's conversation and are
  skipped in a main log; a sub-agent's own log (its first conversation record is a sidechain)
  is read whole, sidechain records only.
- **Compaction.** `/compact` (manual, or automatic near the context limit) writes a `system`
  record with `subtype: "compact_boundary"`; the model then sees only the compact summary and
  what follows. Each compaction starts a new conversation: one transcript per segment. A
  `microcompact_boundary` (2.1: old tool results cleared in place, `compactedToolIds`) does not
  start one: the results stay as the log wrote them, so the next request is over- rather than
  under-estimated (by the cleared results at most; `fit` clears results itself).
- **Sub-agents inline** (2.1): a `progress` record with `data.type: "agent_progress"` carries
  one record of a sub-agent's conversation (`data.message`). It is not the main conversation's
  request, so it is skipped here; its usage is the session's cost (`fleet.spend`).
- **Images in tool results** (`tool_result` content holding `image` blocks) are kept as the
  Anthropic reader reads them: sent, and counted as images.
- Only `message.role` and `message.content` are sent, so each message is rebuilt from those.
  Results whose call is nowhere in the conversation, a second result for one call, and calls
  never answered (a live log) are left for `core.repair`, which repairs and reports them.

The result is Anthropic Messages: a Claude Code log is fitted into an Anthropic request.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from ..agents.claude_code import BOOKKEEPING, COMPACT_BOUNDARY, CONVERSATION
from ..agents.session import record_type
from .common import COMPACTED, Where, as_blocks, dumps, expect_dict
from .reading import Record
from .skipped import Skipped
from .usage import PROMPT_FIELDS, token_count

#: The keys ctxfit knows on a conversation record (it reads `type`, `message`, `isSidechain`
#: and `requestId`; the rest is Claude Code's bookkeeping). Others are counted, never fatal.
RECORD_KEYS = frozenset(
    (
        "type",
        "message",
        "uuid",
        "parentUuid",
        "logicalParentUuid",
        "isSidechain",
        "sessionId",
        "agentId",
        "requestId",
        "timestamp",
        "userType",
        "entrypoint",
        "cwd",
        "gitBranch",
        "version",
        "slug",
        "isMeta",
        "isCompactSummary",
        "isVisibleInTranscriptOnly",
        "isApiErrorMessage",
        "error",
        "apiError",
        "toolUseResult",
        "sourceToolUseID",
        "sourceToolAssistantUUID",
        "thinkingMetadata",
        "todos",
        "imagePasteIds",
        "permissionMode",
        "promptId",
        "planContent",
        "mcpMeta",
        "origin",
        "teamName",
        # 2.1.3xx: per-turn effort and the request a reply answered; how a turn or result came in.
        "effort",
        "perTurnEffort",
        "requestedModel",
        "madeBy",
        "promptCacheRequested",
        "apiBlockIndex",
        "requestRef",
        "toolInputStreamMs",
        "toolResultScreened",
        "permissionDecision",
        "turnPromptId",
        "promptSource",
        "sentAtMs",
        "turnOrigin",
        "rowSource",
        "turnPosition",
    )
)
#: The model name Claude Code logs on replies it wrote itself (errors, placeholders).
SYNTHETIC = "<synthetic>"


class Reply(NamedTuple):
    """What the log recorded about the model call behind one assistant message."""

    id: str
    model: str
    prompt_tokens: int | None
    output_tokens: int | None


class Built(NamedTuple):
    """One rebuilt message: its record, and the call that produced it (assistant only)."""

    record: Record
    reply: Reply | None


def to_anthropic(records: Iterator[Record], path: str, skipped: Skipped | None = None) -> Iterator[Built | object]:
    """Messages of a Claude Code log as Anthropic message records, with `COMPACTED` between
    the conversations of a compacted log; what it does not know is counted in `skipped`."""
    skipped = skipped if skipped is not None else Skipped()
    sidechain: bool | None = None
    builder = _Builder()
    for record in records:
        value = record.value
        if not isinstance(value, dict):
            raise Where(path, record.line).fail("a Claude Code record must be a JSON object")
        kind = record_type(value)
        if kind not in CONVERSATION:
            if kind == "system" and value.get("subtype") == COMPACT_BOUNDARY:
                yield from builder.flush()
                yield COMPACTED
            elif kind not in BOOKKEEPING:
                skipped.record(kind)
            continue
        skipped.keys(value, RECORD_KEYS)
        if sidechain is None:
            sidechain = bool(value.get("isSidechain"))
        if bool(value.get("isSidechain")) != sidechain:
            continue
        where = Where(path, record.line)
        message = expect_dict(value.get("message"), where, '"message"')
        if "content" not in message:
            raise where.fail('"message" has no "content"')
        if kind == "assistant":
            if message.get("model") == SYNTHETIC:
                continue
            yield from builder.assistant(record.line, message)
        else:
            builder.user(record.line, message["content"])
    yield from builder.flush()


def _usage(message: dict) -> tuple[int | None, int | None]:
    """The prompt and output tokens one record of a reply logged, as `usage.claude_code_call`
    reads them (inline: it runs for every record of every reply)."""
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None, None
    counts = [token_count(usage.get(k)) for k in PROMPT_FIELDS]
    prompt = sum(c or 0 for c in counts) if any(c is not None for c in counts) else None
    return prompt, token_count(usage.get("output_tokens"))


def _is_result(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


class _Builder:
    """The reply being rebuilt, its results, and the user content written after it."""

    def __init__(self) -> None:
        self.reply_id: str | None = None  # None: no reply yet in this conversation
        self.reply_line = 0
        self.blocks: list = []
        self.model = ""
        self.prompt: int | None = None
        self.output: int | None = None
        self.calls: list[str] = []
        self.results: list = []  # result blocks answering this reply's calls, as written
        self.after: list = []  # other user content written after the reply
        self.after_line = 0
        self.text: str | None = None  # the one user record's string content, if that is all
        self.bare = False  # the reply's records carry no message.id

    def assistant(self, line: int, message: dict) -> Iterator[Built]:
        reply_id = message.get("id")
        same = (
            (reply_id == self.reply_id)
            if isinstance(reply_id, str)
            else (self.bare and not self.results and not self.after)
        )
        if self.reply_id is None or not same:
            yield from self.flush()
            self.reply_id, self.reply_line = (reply_id if isinstance(reply_id, str) else ""), line
            self.bare = not isinstance(reply_id, str)
        blocks = as_blocks(message["content"])
        self.blocks.extend(blocks)
        # Only string ids can be answered (the Anthropic reader reports any other).
        self.calls.extend(
            b["id"]
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)
        )
        self.model = message.get("model") or self.model
        prompt, output = _usage(message)
        self.prompt = prompt if prompt is not None else self.prompt
        if output is not None:
            self.output = output if self.output is None else max(self.output, output)

    def user(self, line: int, content: object) -> None:
        # A prompt written as a string is sent as that string unless other content joins it.
        self.text = content if isinstance(content, str) and not (self.results or self.after) else None
        for block in as_blocks(content):
            if _is_result(block) and isinstance(block.get("tool_use_id"), str) and block["tool_use_id"] in self.calls:
                self.results.append(block)
                self.after_line = self.after_line or line
            else:  # results of unknown calls stay here, for the repair to report and drop
                self.after.append(block)
                self.after_line = self.after_line or line

    def flush(self) -> Iterator[Built]:
        if self.reply_id is not None and self.blocks:
            message = {"role": "assistant", "content": self.blocks}
            reply = Reply(self.reply_id, self.model, self.prompt, self.output)
            yield Built(Record(self.reply_line, message, dumps(message)), reply)
        rank = {call_id: i for i, call_id in enumerate(self.calls)}
        content: list[Any] | str = sorted(self.results, key=lambda b: rank[b.get("tool_use_id")]) + self.after
        if content and self.text is not None:
            content = self.text
        if content:
            message = {"role": "user", "content": content}
            yield Built(Record(self.after_line, message, dumps(message)), None)
        self.__init__()  # type: ignore[misc]  # (starts the next reply afresh; nothing subclasses it)
