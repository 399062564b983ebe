"""Claude Code (Anthropic's coding agent): its session logs, `~/.claude/projects/<project>/<session>.jsonl`.

- **Recognised** by a record of a type it writes (`RECORD_TYPES`) carrying a session's mark
  (`uuid`, `sessionId`, `leafUuid` or `messageId`) and no `role`.
- **Folders**: `$CLAUDE_CONFIG_DIR/projects` for each entry of the comma list; otherwise
  `~/.claude/projects` and `~/.config/claude/projects`.
- **Read** by `formats/claude_code.py` (its dialect: records into Anthropic messages) and
  `formats/claude_code_transcripts.py` (one transcript per compaction, calls filled in).
- **Session**: `sessionId` (+ `agentId` of a sub-agent's log), project `cwd`, models
  `message.model`, dates `timestamp`; compactions are `compact_boundary` system records.
- **Billed**: `message.usage` of each reply, and of a sub-agent's replies written inline
  (`progress` records of `agent_progress`): `spend.py`.
- **Compacts** (`services/compact/autoCompact.ts`) at the effective window minus
  `AUTOCOMPACT_BUFFER_TOKENS` = 13,000, where the effective window is the model's window minus
  what it keeps for the summary, `min(max output tokens, 20,000)`. On a 200,000 window: 167,000
  tokens, 83.5%. (`CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` can only lower it.)
- **Wrap** (2.1.197, 2.1.337): `ANTHROPIC_BASE_URL`, with an API key or its own login.

>>> AGENT.compaction_at(200_000)
167000
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .agent import Agent
from .session import SessionMeta
from .spend import Spend
from .wrap import Wrap

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "claude-code"
TITLE = "Claude Code"
LOOKS_LIKE = "a Claude Code session log (~/.claude/projects/*/*.jsonl)"
CONFIG_VARIABLE = "CLAUDE_CONFIG_DIR"

#: The record types that hold the conversation.
CONVERSATION = ("user", "assistant")
#: Record types Claude Code writes that are not sent to the model (skipped without a count).
BOOKKEEPING = frozenset(
    (
        "summary",
        "system",
        "progress",
        "attachment",
        "file-history-snapshot",
        "queue-operation",
        "permission-mode",
        "mode",
        "last-prompt",
        "ai-title",
        "custom-title",
        "agent-name",
        "tag",
        "pr-link",
        "worktree-state",
        "bridge-session",
        # 2.1.3xx: what each API request was (its shape, route, blobs), tools used, the cost so far.
        "api-request",
        "api-request-route",
        "api-request-blob",
        "api-request-shape",
        "atis-latch",
        "tools-used",
        "cost-state",
    )
)
#: Every record type ctxfit knows in a Claude Code log (what detection recognises one by).
RECORD_TYPES = BOOKKEEPING | frozenset(CONVERSATION)
#: The `system` record that starts a new conversation.
COMPACT_BOUNDARY = "compact_boundary"

BUFFER = 13_000
SUMMARY_RESERVE = 20_000


def recognise(value: object) -> bool:
    """Whether a record is one of a Claude Code log: a type it writes, and a session's mark."""
    return (
        isinstance(value, dict)
        and "role" not in value
        and isinstance(value.get("type"), str)
        and value["type"] in RECORD_TYPES
        and ("uuid" in value or "sessionId" in value or "leafUuid" in value or "messageId" in value)
    )


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    given = [Path(p.strip()).expanduser() for p in environ.get(CONFIG_VARIABLE, "").split(",") if p.strip()]
    return [config / "projects" for config in given or [home / ".claude", home / ".config" / "claude"]]


def compaction_at(window: int) -> int:
    return max(window - min(SUMMARY_RESERVE, window // 4) - BUFFER, window // 2)


def billed(spend: Spend, value: object) -> None:
    """One record's billed usage: a reply's, or a sub-agent's reply written inline."""
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "assistant":
        spend.claude_code(value)  # type: ignore[arg-type]
    elif kind == "progress":
        spend.claude_code_subagent(value)  # type: ignore[arg-type]


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    described = Describing(path)
    for record in records:
        described.add(record)
    return described.sessions()


class Describing:
    """The session of a log described one record at a time (`describe`; `Agent.describing`:
    as the records are read for the messages, so that `sessions` reads a log once)."""

    def __init__(self, path: str) -> None:
        self.session = SessionMeta("", TITLE)
        self.spend = Spend()
        self.inline: dict[str, Spend] = {}  # each sub-agent's replies written inline, by its id
        self.sidechain: bool | None = None

    def add(self, record: Record) -> None:
        value = record.value
        if not isinstance(value, dict):
            return
        session, spend = self.session, self.spend
        session.saw(value.get("timestamp"))
        kind = value.get("type")
        if kind == "system" and value.get("subtype") == COMPACT_BOUNDARY:
            session.compactions += 1
        if kind == "progress":  # a sub-agent's traffic written inline: its usage is the session's cost
            spend.claude_code_subagent(value)
            data = value.get("data")
            agent = data.get("agentId") if isinstance(data, dict) else None
            if isinstance(agent, str) and agent:
                self.inline.setdefault(agent, Spend()).claude_code_subagent(value)
        if kind not in CONVERSATION:
            return
        if self.sidechain is None:
            self.sidechain = bool(value.get("isSidechain"))
            agent_id = value.get("agentId") if self.sidechain else None
            session.id = str(value.get("sessionId") or "") + (f"/{agent_id}" if agent_id else "")
            session.project = str(value.get("cwd") or "")
        message = value.get("message")
        if kind == "assistant" and isinstance(message, dict):
            spend.claude_code(value)
            session.model(message.get("model"))
            reply = message.get("id")
            if isinstance(reply, str) and (not session.message_ids or session.message_ids[-1] != reply):
                session.message_ids.append(reply)

    def sessions(self) -> list[SessionMeta]:
        session = self.session
        session.spend = self.spend.totals()
        session.inline_agents = {agent: replies.totals() for agent, replies in self.inline.items()}
        for model, _ in session.spend:  # (a sub-agent's, or a model's fast mode: its cost is grouped by it)
            session.model(model)
        return [session]


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats.claude_code_transcripts import transcripts

    return transcripts(name, records, skipped)


AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like=LOOKS_LIKE,
    recognise=recognise,
    describe=describe,
    describing=Describing,
    read=read,
    folders=folders,
    compaction_at=compaction_at,
    variables=(CONFIG_VARIABLE,),
    where="~/.claude/projects, ~/.config/claude/projects or $CLAUDE_CONFIG_DIR/projects",
    billed=billed,
    streamed=True,
    short="claude",
    wrap=Wrap("claude", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
)
