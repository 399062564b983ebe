"""Amp (Sourcegraph): one JSON document per thread, `~/.local/share/amp/threads/T-<uuid>.json`,
rewritten whole as the thread goes.

Amp is closed source: the layout is taken from two readers of these files, ccusage
(ryoppippi/ccusage `apps/amp/src/data-loader.ts`, commit 37d6cd9580174f460714e0c819b670542ca65ec2:
the usage fields) and cross_agent_session_resumer (jonathan-kellerai/cross_agent_session_resumer
`src/providers/amp.rs`, commit ec0eab964866394f77bbd157e773656a109e7ab3: the content blocks,
`env`, `meta`), which agree on what both read:

    {v, id: "T-…", created (ms), title, env: {initial: {trees: [{uri: "file:///…"}], cwd?}},
     messages: [{role: "user" | "assistant" | "info", messageId, content: [blocks],
                 state: {type, stopReason}, meta: {sentAt (ms)},
                 usage: {model, inputTokens, outputTokens, cacheCreationInputTokens,
                         cacheReadInputTokens, totalInputTokens, credits}}],
     usageLedger: {events: [{id, timestamp, model, credits, tokens: {input, output},
                             operationType, fromMessageId, toMessageId}]}}

Blocks are Anthropic's shapes: `text`, `thinking`, `tool_use {id, name, input}`; a result is
`tool_result {toolUseID, run: {status, result | progress}}` (`status` "error", "cancelled" or
"rejected-by-user": failed). `info` messages (summaries) are Amp's own, not sent.

**Usage.** An assistant message's `usage` is its call: the prompt is `totalInputTokens` (else
input + cache writes + cache reads), Anthropic's split kept for the spend. A thread whose
messages record no usage falls back to its ledger's events (input and output only). Amp's
credits are not carried (ctxfit prices tokens).

**Where.** `$XDG_DATA_HOME/amp/threads`, else `~/.local/share/amp/threads`. Amp's newer threads
live on its server (`amp threads export`); only the local files are read. No real thread file was
available: the tests use one built from the schema above.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from .agent import Agent
from .session import SessionMeta, from_epoch_ms, member
from .spend import Spend

if TYPE_CHECKING:
    from ..core.model import RecordedCall, Transcript
    from ..formats.built import Piece, Turn
    from ..formats.common import Where
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "amp"
#: The keys of a thread and of a message ctxfit knows; others are counted, never fatal.
THREAD_KEYS = frozenset(
    ("v", "id", "created", "title", "agentMode", "env", "messages", "usageLedger", "nextMessageId", "meta")
)
MESSAGE_KEYS = frozenset(("role", "messageId", "content", "state", "usage", "meta", "userState", "fileMentions"))
#: A result whose run ended so failed.
FAILED = frozenset(("error", "cancelled", "rejected-by-user"))


def recognise(value: object) -> bool:
    """A thread: an id `T-…` with a `messages` list whose messages carry `messageId`."""
    if not isinstance(value, dict) or not str(value.get("id", "")).startswith("T-"):
        return False
    messages = value.get("messages")
    return isinstance(messages, list) and all(isinstance(m, dict) and "messageId" in m for m in messages[:3])


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    data = Path(environ["XDG_DATA_HOME"]).expanduser() if environ.get("XDG_DATA_HOME") else home / ".local" / "share"
    return [data / "amp" / "threads"]


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    sessions = []
    for record in records:
        thread = record.value
        if not recognise(thread):
            continue
        session = SessionMeta(thread["id"], "Amp", project=_project(thread))
        session.saw(from_epoch_ms(thread.get("created")))
        spend = Spend()
        for message in (m for m in thread["messages"] if isinstance(m, dict)):
            session.saw(from_epoch_ms(member(message, "meta").get("sentAt")))
            usage = member(message, "usage")
            if message.get("role") == "assistant" and usage:
                model = str(usage.get("model") or "")
                session.model(model)
                session.message_ids.append(f"{thread['id']}/{message.get('messageId')}")
                spend.call(
                    model,
                    usage.get("inputTokens"),
                    usage.get("cacheCreationInputTokens"),
                    usage.get("cacheReadInputTokens"),
                    usage.get("outputTokens"),
                )
        events = member(thread, "usageLedger").get("events")
        for event in events if isinstance(events, list) else ():
            if isinstance(event, dict):
                session.saw(event.get("timestamp"))
                if not session.message_ids:  # no message records its usage: the ledger does
                    tokens = member(event, "tokens")
                    spend.call(str(event.get("model") or ""), tokens.get("input"), 0, 0, tokens.get("output"))
        session.spend = spend.totals()
        for model, _ in session.spend:
            session.model(model)
        sessions.append(session)
    return sessions


def _project(thread: dict) -> str:
    initial = member(member(thread, "env"), "initial")
    if isinstance(initial.get("cwd"), str):
        return initial["cwd"]
    trees = initial.get("trees")
    tree = trees[0] if isinstance(trees, list) and trees and isinstance(trees[0], dict) else {}
    uri = tree.get("uri")
    return unquote(uri[len("file://") :]) if isinstance(uri, str) and uri.startswith("file://") else ""


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    """Each thread's conversation, in its model's dialect."""
    from ..formats.built import Shape, dialect_of, sends, transcript
    from ..formats.common import Where

    for record in records:
        thread = record.value
        if not recognise(thread):
            skipped.record(thread.get("type") if isinstance(thread, dict) else None)
            continue
        skipped.keys(thread, THREAD_KEYS)
        messages = [m for m in thread["messages"] if isinstance(m, dict)]
        model = next((str(member(m, "usage").get("model") or "") for m in messages if member(m, "usage")), "")
        dialect = dialect_of(model)
        where = Where(name, record.line)
        turns: list[Turn] = []
        for k, message in enumerate(messages):
            skipped.keys(message, MESSAGE_KEYS)
            turns += _turns(message, where.at("messages").at(k), skipped)
        if sends(turns, dialect):
            yield transcript(
                name, NAME, dialect, turns, [], record.line, shape=Shape(user_parts=True, result_text=True)
            )


def _turns(message: dict, where: Where, skipped: Skipped) -> list[Turn]:
    """A message as the turns it is: a reply with its calls, or the results and text of a user's."""
    from ..formats.built import Call, Turn

    role = message.get("role")
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    texts: list[Piece] = [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
    turns: list[Turn] = []
    if role == "assistant":
        calls = [
            Call(str(b.get("id") or ""), str(b.get("name") or ""), b.get("input") or {})
            for b in blocks
            if b.get("type") == "tool_use"
        ]
        turns.append(Turn("assistant", where, texts, calls, recorded=_call(message)))
    elif role == "user":
        turns += [_result(block, where) for block in blocks if block.get("type") == "tool_result"]
        turns.append(Turn("user", where, texts))
    else:
        skipped.record(f"message/{role}")
    for block in blocks:
        if block.get("type") not in ("text", "thinking", "redacted_thinking", "tool_use", "tool_result"):
            skipped.record(f"block/{block.get('type')}")
    return turns


def _result(block: dict, where: Where) -> Turn:
    """A call's result: its run's result (or progress), failed as its status says."""
    from ..formats.built import Turn
    from ..formats.common import json_text

    run = member(block, "run")
    output = run.get("result", run.get("progress"))
    text = output if isinstance(output, str) else json_text(output if output is not None else run)
    call_id = str(block.get("toolUseID") or block.get("tool_use_id") or "")
    return Turn("result", where, [text], call_id=call_id, error=str(run.get("status")) in FAILED)


def _call(message: dict) -> RecordedCall | None:
    from ..core.model import RecordedCall

    usage = member(message, "usage")
    if not usage:
        return None
    parts = [usage.get(k) for k in ("inputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")]
    counts = [v for v in parts if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
    total = usage.get("totalInputTokens")
    prompt = total if isinstance(total, int) and not isinstance(total, bool) else (sum(counts) if counts else None)
    output = usage.get("outputTokens") if isinstance(usage.get("outputTokens"), int) else None
    return RecordedCall(0, "", str(usage.get("model") or ""), prompt, output)


AGENT = Agent(
    name=NAME,
    title="Amp",
    looks_like="an Amp thread (~/.local/share/amp/threads/T-*.json)",
    recognise=recognise,
    describe=describe,
    read=read,
    folders=folders,
    document=True,
)
