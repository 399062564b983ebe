"""Qwen Code (QwenLM/qwen-code, the fork of Gemini CLI): one JSON Lines file per session,
`<runtime>/projects/<project>/chats/<sessionId>.jsonl`.

Its own format, not Gemini CLI's recording (`packages/core/src/services/chatRecordingService.ts`,
`ChatRecord`): each line is a record `{uuid, parentUuid, sessionId, timestamp, type, subtype?,
cwd, version, gitBranch?, message?, usageMetadata?, model?, toolCallResult?, systemPayload?, ...}`
appended as the session goes, forming a tree by `parentUuid` (a rewind starts a new branch from
an earlier record; title and source anchors hang off the tail without moving it).

- `type: "user"`: `message` is the Gemini content sent (`{role: "user", parts}`, text parts);
- `type: "assistant"`: one model call: `message` its reply (`{role: "model", parts}`: text,
  `thought` text, `functionCall {id, name, args}`), `model`, and `usageMetadata`, the API's
  usage converted to Gemini's names (`promptTokenCount`: the whole prompt, cached tokens
  included; `cachedContentTokenCount`; `candidatesTokenCount`; `thoughtsTokenCount`;
  `totalTokenCount`);
- `type: "tool_result"`: `message` the results sent back (`functionResponse {id, name,
  response}` parts);
- `type: "system"`: bookkeeping by `subtype` (titles, telemetry, slash commands, ...), none sent;
  `chat_compression` replaces the history the model sees with `systemPayload.compressedHistory`.

The conversation is the branch that ends at the last record of the main agent (sub-agents'
records, `isSidechain`, are not its request but their calls are the session's cost), read from
its root; each compression starts a new conversation (one transcript each) that opens with the
history it was given. Qwen Code sends it in its model's API: Qwen models (and most others) through
OpenAI-compatible Chat Completions, so it is read as OpenAI messages, Anthropic ones for a Claude
model; `thought` parts are not sent back.

**Usage.** Each assistant record is one call (`RecordedCall`), its prompt `promptTokenCount`;
its output `totalTokenCount - promptTokenCount` (Qwen's OpenAI converter counts reasoning inside
`candidatesTokenCount`, Gemini's API outside it: the total covers both), else
`candidatesTokenCount`. Spend: the uncached prompt, `cachedContentTokenCount` as cache reads, the
output. Models with no price in ctxfit's table (qwen3-coder-plus) are reported unpriced.

**Where.** `$QWEN_RUNTIME_DIR`, else `$QWEN_HOME`, else `~/.qwen` (`Storage.getRuntimeBaseDir`,
`getGlobalQwenDir`), then `projects/*/chats`. Schema from QwenLM/qwen-code at commit
015346f1d5d7312fddaf84a7ef1f83c7d217d389 (chatRecordingService.ts) and 013e660f5799186a369c737aea6b4bcb9ca0ef47
(config/storage.ts). The tests use a log built from that schema, and read the one the real Qwen
Code 0.24.4 writes when it runs through `ctxfit wrap` (`tests/test_real_agents.py`).

**Wrap** (0.24.4): with its `openai` auth type Qwen Code reads its endpoint from
`OPENAI_BASE_URL` (ending in `/v1`), its key from `OPENAI_API_KEY` and its model from
`OPENAI_MODEL`; wrap points the variable at the proxy and forwards to where it pointed.
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
    from ..core.model import RecordedCall, Transcript
    from ..formats.built import Piece, Turn
    from ..formats.common import Where
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "qwen-code"
#: The record types Qwen Code writes (`ChatRecord.type`); a record of another is skipped and counted.
TYPES = frozenset(("user", "assistant", "tool_result", "system"))
#: The types whose `message` the model sees.
SENT = frozenset(("user", "assistant", "tool_result"))
#: The keys of a record (`ChatRecord`); others are counted, never fatal.
KEYS = frozenset(
    (
        "uuid", "parentUuid", "sessionId", "timestamp", "type", "subtype", "cwd", "version", "gitBranch",
        "message", "usageMetadata", "model", "contextWindowSize", "toolCallResult", "systemPayload", "agentId",
        "agentName", "agentColor", "isSidechain", "agentRunId", "agentRound", "externalInputKind", "forkedFrom",
        "provenance", "goalContext", "backgroundTurn", "deliveredTurn", "promptId", "daemonPromptId",
    )
)  # fmt: skip
#: The `system` subtypes Qwen Code writes: none is sent but `chat_compression`.
SUBTYPES = frozenset(
    (
        "session_notes", "chat_compression", "slash_command", "ui_telemetry", "at_command", "attribution_snapshot",
        "notification", "background_task_completed", "cron", "mid_turn_user_message", "custom_title",
        "parent_session", "session_source", "session_execution_engine", "omni_recall", "session_model",
        "session_approval_mode", "rewind", "agent_bootstrap", "agent_launch_prompt", "agent_retry",
        "agent_session_ready", "file_history_snapshot", "user_text_elements", "session_artifact_event",
        "session_artifact_snapshot", "session_sources_snapshot", "branch_checkpoint", "goal_state", "goal_runtime",
        "goal_turn_end", "realtime_message", "turn_result", "managed_session_header_v1", "managed_session_event_v1",
        "managed_session_commit_v1",
    )
)  # fmt: skip
COMPRESSION = "chat_compression"


def compaction_at(window: int) -> int | None:
    """Where Qwen Code compacts on its own (`computeThresholds(window).auto` of
    `chatCompressionService.ts`, commit 573dc5b7ef1aff1fcc011f25cfd14885a171950b): 85% of the
    window, but no later than 20,000 tokens (the summary's) plus 13,000 below it."""
    proportional, ceiling = int(window * 0.85), window - 20_000 - 13_000
    return min(proportional, ceiling) if ceiling > 0 else proportional


def recognise(value: object) -> bool:
    """A record of a session: Claude Code's records share `uuid`/`parentUuid`/`sessionId`, but
    never hold a Gemini content (`parts`), `usageMetadata` or a `systemPayload`."""
    if not isinstance(value, dict) or _kind(value.get("type")) not in TYPES:
        return False
    if not isinstance(value.get("sessionId"), str):
        return False
    if "parentUuid" not in value or not isinstance(value.get("uuid"), str):
        return False
    message = value.get("message")
    return (isinstance(message, dict) and isinstance(message.get("parts"), list)) or any(
        key in value for key in ("usageMetadata", "systemPayload")
    )


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    """Each project's `chats` folder under the runtime folder Qwen Code writes to."""
    base = environ.get("QWEN_RUNTIME_DIR") or environ.get("QWEN_HOME")
    root = Path(base).expanduser() if base else home / ".qwen"
    return sorted((root / "projects").glob("*/chats"))


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    session = SessionMeta("", "Qwen Code")
    spend = Spend()
    for record in records:
        value = record.value
        if not recognise(value):
            continue
        session.id = session.id or value["sessionId"]
        session.project = session.project or str(value.get("cwd") or "")
        session.saw(value.get("timestamp"))
        if value["type"] == "system" and value.get("subtype") == COMPRESSION:
            session.compactions += 1
        if value["type"] != "assistant":
            continue
        model = value.get("model") if isinstance(value.get("model"), str) else ""
        if not value.get("isSidechain"):
            session.model(model)
            session.message_ids.append(value["uuid"])
        prompt, cached, output = _usage(value.get("usageMetadata"))
        if prompt is not None:
            spend.call(model, prompt - cached, 0, cached, output or 0)
    session.spend = spend.totals()
    for model, _ in session.spend:
        session.model(model)
    return [session]


def _usage(usage: object) -> tuple[int | None, int, int | None]:
    """(prompt, cached part of it, output) of a call's `usageMetadata`."""
    if not isinstance(usage, dict):
        return None, 0, None
    prompt, cached = _count(usage.get("promptTokenCount")), _count(usage.get("cachedContentTokenCount")) or 0
    candidates, total = _count(usage.get("candidatesTokenCount")), _count(usage.get("totalTokenCount"))
    output = candidates
    if prompt is not None and total is not None and total - prompt >= (candidates or 0):
        output = total - prompt  # reasoning counted outside the candidates (Gemini's API)
    return prompt, min(cached, prompt or 0), output


def _kind(value: object) -> str | None:
    """A record's `type` or `subtype` when it is a string (a set is never asked of anything else)."""
    return value if isinstance(value, str) else None


def _subtype(value: dict) -> str | None:
    return _kind(value.get("subtype"))


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    """The conversations of the session's active branch, one per compression."""
    from ..formats.built import Shape, dialect_of, sends, transcript
    from ..formats.common import Where

    chain = _active_branch(records, skipped)
    model = next((str(v.get("model") or "") for v, _ in chain if v["type"] == "assistant"), "")
    dialect, shape = dialect_of(model), Shape(user_parts=True, result_text=True)
    turns: list[Turn] = []
    line, given = 1, 0
    for value, at in chain:
        where = Where(name, at)
        if value["type"] == "system":
            if sends(turns, dialect):
                yield transcript(name, NAME, dialect, turns, [], line, given=given, shape=shape)
            payload = value.get("systemPayload")
            history = payload.get("compressedHistory") if isinstance(payload, dict) else None
            turns, line = [], at
            for content in history if isinstance(history, list) else ():
                turns += _content(content, where, None, skipped)
            given = len(turns)
            continue
        turns += _content(value.get("message"), where, _call(value) if value["type"] == "assistant" else None, skipped)
    if sends(turns, dialect):
        yield transcript(name, NAME, dialect, turns, [], line, given=given, shape=shape)


def _active_branch(records: Iterator[Record], skipped: Skipped) -> list[tuple[dict, int]]:
    """The main agent's records from the root to its last one, following `parentUuid` back (a
    rewind's abandoned branch and the anchors off the tail are left out)."""
    by_uuid: dict[str, tuple[dict, int]] = {}
    last = None
    for record in records:
        value = record.value
        if not isinstance(value, dict) or _kind(value.get("type")) not in TYPES:
            skipped.record(value.get("type") if isinstance(value, dict) else None)
            continue
        skipped.keys(value, KEYS)
        subtype = _kind(value.get("subtype"))
        if value["type"] == "system" and subtype not in SUBTYPES:
            skipped.record(f"system/{subtype}")
        if not isinstance(value.get("uuid"), str):
            continue
        by_uuid[value["uuid"]] = (value, record.line)
        kept = value["type"] in SENT or subtype == COMPRESSION
        if kept and not value.get("isSidechain"):
            last = value["uuid"]
    chain: list[tuple[dict, int]] = []
    seen: set[str] = set()
    while last is not None and last in by_uuid and last not in seen:
        seen.add(last)
        value, line = by_uuid[last]
        if value["type"] in SENT or _subtype(value) == COMPRESSION:
            chain.append((value, line))
        last = value.get("parentUuid") if isinstance(value.get("parentUuid"), str) else None
    chain.reverse()
    return chain


def _call(value: dict) -> RecordedCall:
    from ..core.model import RecordedCall

    prompt, _, output = _usage(value.get("usageMetadata"))
    return RecordedCall(0, "", str(value.get("model") or ""), prompt, output)


def _content(content: object, where: Where, call: RecordedCall | None, skipped: Skipped) -> list[Turn]:
    """One Gemini content of the session as the turns it is: a model reply, or the results and
    text of a user turn."""
    from ..formats.built import Call, Turn
    from ..formats.common import json_text

    if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
        return [Turn("assistant", where, recorded=call)] if call is not None else []
    texts: list[Piece] = []
    calls: list[Call] = []
    results: list[Turn] = []
    for k, part in enumerate(content["parts"]):
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("functionCall"), dict):
            fc = part["functionCall"]
            call_id = str(fc.get("id") or f"{fc.get('name')}-{where.line}-{k}")
            calls.append(Call(call_id, str(fc.get("name") or ""), fc.get("args") or {}))
        elif isinstance(part.get("functionResponse"), dict):
            fr = part["functionResponse"]
            response = fr.get("response")
            output = response.get("output") if isinstance(response, dict) else None
            failed = isinstance(response, dict) and "error" in response
            text = output if isinstance(output, str) else json_text(response if response is not None else {})
            call_id = str(fr.get("id") or f"{fr.get('name')}-{where.line}-{k}")
            results.append(Turn("result", where, [text], call_id=call_id, error=failed))
        elif isinstance(part.get("text"), str):
            if not part.get("thought"):
                texts.append(part["text"])
        else:
            skipped.keys(part, frozenset(("text", "thought", "thoughtSignature", "functionCall", "functionResponse")))
    if content.get("role") == "model":
        return [Turn("assistant", where, texts, calls, recorded=call)]
    return [*results, Turn("user", where, texts)]


WRAP = Wrap("qwen", "OPENAI_BASE_URL", "https://api.openai.com", suffix="/v1", key="OPENAI_API_KEY")

AGENT = Agent(
    name=NAME,
    title="Qwen Code",
    looks_like="a Qwen Code session (~/.qwen/projects/*/chats/*.jsonl)",
    recognise=recognise,
    describe=describe,
    read=read,
    folders=folders,
    compaction_at=compaction_at,
    wrap=WRAP,
)
