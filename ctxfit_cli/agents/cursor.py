"""Cursor's agent transcripts (the editor's agent and the `cursor-agent` CLI):
`~/.cursor/projects/<workspace>/agent-transcripts/<id>/<id>.jsonl` (a sub-agent's in
`<id>/subagents/`), `~/.cursor` being `$CURSOR_CONFIG_DIR` where that is set.

One line per message, `{role, message: {content: [...]}}`, and `{type: "turn_ended", ...}`
markers between turns. What Cursor writes there is the text of the conversation only: the
user's messages (with the context Cursor adds, `<user_query>` around what was typed), and the
model's text, often one line per step. Calls are written by newer versions (`tool_use` blocks
without ids) but never their results, so they cannot be sent as calls: they are skipped and
counted. There is no model, no usage and no time in it: a transcript's sessions have no model,
dates or cost, and its calls are not known (replay counts one per run of replies).

Read as OpenAI Chat Completions (its model is not recorded).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from .agent import Agent
from .session import SessionMeta, record_type

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.built import Turn
    from ..formats.common import Where
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "cursor"
TITLE = "Cursor"
FOLDER = "agent-transcripts"
#: Records known to hold nothing of the conversation.
BOOKKEEPING = frozenset(("turn_ended",))
ROLES = ("user", "assistant")
LINE_KEYS = frozenset(("role", "message"))


def recognise(value: object) -> bool:
    """A message line: `role` beside a `message` whose `content` is a list (no `content` of its
    own, as a chat message has)."""
    if not isinstance(value, dict) or "content" in value or value.get("role") not in ROLES:
        return False
    message = value.get("message")
    return isinstance(message, dict) and isinstance(message.get("content"), list)


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    """Each workspace's transcripts (only those: a workspace's folder holds its terminals' output
    and tool descriptions beside them)."""
    root = Path(environ["CURSOR_CONFIG_DIR"]).expanduser() if environ.get("CURSOR_CONFIG_DIR") else home / ".cursor"
    return sorted((root / "projects").glob(f"*/{FOLDER}"))


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    """A transcript's id and workspace, from where Cursor keeps it (its records name neither)."""
    session = SessionMeta("", TITLE)
    parts = PurePath(path).parts
    if FOLDER in parts[:-1]:
        at = len(parts) - 1 - parts[::-1].index(FOLDER)
        session.project = parts[at - 1] if at > 0 else ""
        rest = parts[at + 1 :]  # <id>/<id>.jsonl, <id>/subagents/<sub>.jsonl, or <id>.jsonl
        session.id = PurePath(rest[0]).stem
        if "subagents" in rest[1:-1]:
            session.id += "/" + PurePath(rest[-1]).stem
    return [session]


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats.built import transcript
    from ..formats.common import Where

    turns: list[Turn] = []
    for record in records:
        value = record.value
        if not recognise(value):
            kind = record_type(value)
            if kind not in BOOKKEEPING:
                skipped.record(kind)
            continue
        skipped.keys(value, LINE_KEYS)
        turns.append(_turn(value, Where(name, record.line), skipped))
    yield transcript(name, NAME, "openai", turns, [])


def _turn(value: dict, where: Where, skipped: Skipped) -> Turn:
    from ..formats.built import Turn

    texts: list = []
    for block in value["message"]["content"]:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        else:  # a call without its result, or a block of a kind not known
            skipped.record(block.get("type") if isinstance(block, dict) else None)
    return Turn(value["role"], where, texts)


AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like="a Cursor agent transcript (~/.cursor/projects/*/agent-transcripts/)",
    recognise=recognise,
    describe=describe,
    read=read,
    folders=folders,
)
