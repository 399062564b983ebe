"""Pi (the pi coding agent): a session is a JSON Lines file,
`<sessions>/--<cwd, / as ->--/<time>_<id>.jsonl`, where `<sessions>` is
`$PI_CODING_AGENT_SESSION_DIR`, else `$PI_CODING_AGENT_DIR/sessions`, else `~/.pi/agent/sessions`.

Its first line is the header (`type: session`, `version`, `id`, `cwd`); every other record is an
entry of a tree (`id`, `parentId`): `message` (`message.role` `user`, `assistant`, `toolResult`,
`bashExecution`, `custom`), `model_change`, `thinking_level_change`, `compaction`,
`branch_summary`, `custom_message`, `custom`, `label`, `session_info`. Going back to an earlier
entry and going on from there starts a branch; the conversation is the path from the root to
the last entry written (the current leaf), as Pi's `buildSessionContext` builds it: a branch
left behind is not sent (its calls were billed all the same: `describe` counts them).

What is sent (Pi's `convertToLlm`):

- `user` and `custom` messages, and `custom_message` entries: user text and images;
  `bashExecution` (the user's `!` command): user text, `Ran \\`cmd\\`` and its output, unless
  `excludeFromContext`; a `branch_summary`: user text, the summary in Pi's own wrapping;
- `assistant`: one model call: text, `thinking` (sent back with its signature to a Claude
  model) and `toolCall` blocks; `usage` is the call's (`input` + `cacheRead` + `cacheWrite` is
  its prompt); one that ended in an error or was aborted is not sent again;
- `toolResult`: the result of `toolCallId` (`isError`), text and images;
- `compaction`: the conversation starts anew (one transcript each): Pi's wrapping of `summary`,
  then the entries from `firstKeptEntryId` on.

Sent as the model's dialect (`formats/built.py`): Anthropic Messages for a Claude model (or the
`anthropic` provider), else OpenAI Chat Completions. The system prompt and tools are not logged.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .agent import Agent
from .session import SessionMeta, member, record_type
from .spend import Spend, count

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.built import Piece, Turn
    from ..formats.common import Where
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "pi"
TITLE = "Pi"
#: The entry types of a session (`custom`, `label`, `session_info` are the agent's bookkeeping).
ENTRIES = frozenset(
    (
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom_message",
        "custom",
        "label",
        "session_info",
    )
)
#: Pi's wrapping of a summary sent as user text (`core/messages.ts`).
COMPACTION_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUFFIX = "\n</summary>"
BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUFFIX = "</summary>"
#: What Pi keeps free of a model's window: it compacts on its own past the rest
#: (`DEFAULT_COMPACTION_SETTINGS.reserveTokens`; `shouldCompact`).
RESERVE = 16_384
#: A reply Pi does not send again (`transformMessages` drops it).
UNSENT_STOPS = ("error", "aborted")


def recognise(value: object) -> bool:
    """The header, or an entry of the tree (`parentId` beside a Pi entry type)."""
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    if kind == "session":
        return "version" in value and isinstance(value.get("id"), str)
    if not isinstance(kind, str) or kind not in ENTRIES:
        return False
    if "parentId" not in value or not isinstance(value.get("id"), str):
        return False
    return kind != "message" or isinstance(value.get("message"), dict)


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    if environ.get("PI_CODING_AGENT_SESSION_DIR"):
        return [Path(environ["PI_CODING_AGENT_SESSION_DIR"]).expanduser()]
    agent = Path(environ["PI_CODING_AGENT_DIR"]).expanduser() if environ.get("PI_CODING_AGENT_DIR") else None
    return [(agent or home / ".pi" / "agent") / "sessions"]


def compaction_at(window: int) -> int | None:
    """Pi compacts once a call's prompt is over its window less the reserve."""
    return window - RESERVE if window > RESERVE else None


def _message(value: dict) -> dict:
    return member(value, "message")


def _model(message: dict) -> str:
    """A reply's model, a Claude model's version with dashes (as the price table names it)."""
    from ..counters.catalog import claude_dashes

    return claude_dashes(str(message.get("model") or ""))


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    session = SessionMeta("", TITLE)
    spend = Spend()
    for record in records:
        value = record.value
        if not isinstance(value, dict):
            continue
        session.saw(value.get("timestamp"))
        kind = value.get("type")
        if kind == "session" and not session.id:
            session.id, session.project = str(value.get("id") or ""), str(value.get("cwd") or "")
        elif kind == "compaction":
            session.compactions += 1
        elif kind == "message" and _message(value).get("role") == "assistant":
            message = _message(value)
            model = _model(message)
            session.model(model)
            usage = member(message, "usage")
            spend.call(model, usage.get("input"), usage.get("cacheWrite"), usage.get("cacheRead"), usage.get("output"))
            if isinstance(message.get("responseId"), str):
                session.message_ids.append(message["responseId"])
    session.spend = spend.totals()
    return [session]


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats.built import dialect_of, transcript
    from ..formats.common import Where

    entries: dict[str, dict] = {}
    places: dict[str, Where] = {}
    leaf = None
    model = provider = ""
    for record in records:
        value = record.value
        kind = record_type(value)
        if kind == "session":
            continue
        if kind not in ENTRIES or not isinstance(value, dict) or not isinstance(value.get("id"), str):
            skipped.record(kind)
            continue
        entries[value["id"]], places[value["id"]] = value, Where(name, record.line)
        leaf = value["id"]
        message = _message(value)
        if not model and kind == "model_change":
            model, provider = str(value.get("modelId") or ""), str(value.get("provider") or "")
        elif not model and message.get("role") == "assistant":
            model, provider = str(message.get("model") or ""), str(message.get("provider") or "")
    path = _path(entries, leaf)
    dialect = dialect_of(model, provider)
    segments = [segment for segment in _segments(path, places) if segment]
    for number, segment in enumerate(segments or [[]]):  # (none: refused, as a log with no conversation)
        yield transcript(name, NAME, dialect, segment, [], line=1 if number == 0 else segment[0].where.line)


def _path(entries: dict[str, dict], leaf: str | None) -> list[dict]:
    """The entries from the root to `leaf` (a parent named twice, or missing, ends the walk)."""
    path: list[dict] = []
    seen: set[str] = set()
    while leaf is not None and leaf in entries and leaf not in seen:
        seen.add(leaf)
        path.append(entries[leaf])
        parent = entries[leaf].get("parentId")
        leaf = parent if isinstance(parent, str) else None
    return path[::-1]


def _segments(path: list[dict], places: dict[str, Where]) -> Iterator[list[Turn]]:
    """One list of turns per conversation: a compaction starts one anew with its summary and
    the entries it kept (their calls belong to the conversation before)."""
    from ..formats.built import Turn

    turns: list[Turn] = []
    for index, entry in enumerate(path):
        if entry.get("type") != "compaction":
            turns += _turns(entry, places[entry["id"]])
            continue
        yield turns
        text = COMPACTION_PREFIX + str(entry.get("summary") or "") + COMPACTION_SUFFIX
        summary = Turn("user", places[entry["id"]], [text])
        kept_id = entry.get("firstKeptEntryId")
        start = next((k for k in range(index) if path[k].get("id") == kept_id), index)
        kept = [t for e in path[start:index] if e.get("type") != "compaction" for t in _turns(e, places[e["id"]])]
        for turn in kept:
            turn.recorded = None
        turns = [summary, *kept]
    yield turns


def _turns(entry: dict, where: Where) -> list[Turn]:
    """What one entry sends (nothing, for most that are not messages)."""
    from ..formats.built import Turn

    kind = entry.get("type")
    if kind == "custom_message":
        return [Turn("user", where, _pieces(entry.get("content")))]
    if kind == "branch_summary":
        return [Turn("user", where, [BRANCH_PREFIX + str(entry.get("summary") or "") + BRANCH_SUFFIX])]
    message = _message(entry) if kind == "message" else {}
    role = message.get("role")
    if role in ("user", "custom"):
        return [Turn("user", where, _pieces(message.get("content")))]
    if role == "bashExecution" and not message.get("excludeFromContext"):
        return [Turn("user", where, [_bash_text(message)])]
    if role == "toolResult" and isinstance(message.get("toolCallId"), str):
        error = bool(message.get("isError"))
        return [Turn("result", where, _pieces(message.get("content")), call_id=message["toolCallId"], error=error)]
    if role == "assistant" and message.get("stopReason") not in UNSENT_STOPS:
        return [_assistant(message, where)]
    return []


def _assistant(message: dict, where: Where) -> Turn:
    from ..core.model import RecordedCall
    from ..formats.built import Call, Thinking, Turn

    turn = Turn("assistant", where)
    for block in message.get("content") or ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            turn.content.append(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            turn.content.append(Thinking(block["thinking"], str(block.get("thinkingSignature") or "")))
        elif kind == "toolCall" and isinstance(block.get("id"), str):
            turn.calls.append(Call(block["id"], str(block.get("name") or ""), block.get("arguments") or {}))
    usage = member(message, "usage")
    prompt = [usage.get(k) for k in ("input", "cacheRead", "cacheWrite")]
    known = any(isinstance(p, int) for p in prompt)
    output = usage.get("output")
    turn.recorded = RecordedCall(
        0,
        str(message.get("responseId") or ""),
        _model(message),
        sum(count(p) for p in prompt) if known else None,
        output if isinstance(output, int) else None,
    )
    return turn


def _pieces(content: object) -> list[Piece]:
    """Text and images of a user message or a result (a string is one text)."""
    from ..formats.built import Image

    if isinstance(content, str):
        return [content]
    pieces: list[Piece] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            pieces.append(block["text"])
        elif block.get("type") == "image" and isinstance(block.get("data"), str):
            pieces.append(Image(str(block.get("mimeType") or "image/png"), block["data"]))
    return pieces


def _bash_text(message: dict) -> str:
    """A command the user ran (`!cmd`) as Pi sends it (`bashExecutionToText`)."""
    output = message.get("output")
    text = f"Ran `{message.get('command') or ''}`\n" + (f"```\n{output}\n```" if output else "(no output)")
    code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif isinstance(code, int) and code != 0:
        text += f"\n\nCommand exited with code {code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like="a Pi coding agent session (~/.pi/agent/sessions/*/*.jsonl)",
    recognise=recognise,
    describe=describe,
    read=read,
    folders=folders,
    compaction_at=compaction_at,
)
