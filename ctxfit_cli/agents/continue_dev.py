"""Continue (continue.dev, the VS Code and JetBrains extension and its `cn` CLI): one JSON
document per session, `<global dir>/sessions/<sessionId>.json`, the global dir being
`$CONTINUE_GLOBAL_DIR` or `~/.continue` (`core/util/paths.ts`). `sessions.json` beside the
sessions is their index (id, title, `dateCreated`, workspace): no conversation, not read as one.

    {"sessionId", "title", "workspaceDirectory": "file:///…", "mode", "chatModelTitle",
     "history": [{"message": {role, content, id, …}, "contextItems", "promptLogs", "toolCallStates", …}]}

Each `history[].message` is Continue's `ChatMessage`: `user` (text or parts: `text`,
`imageUrl`), `assistant` (`content`, OpenAI-style `toolCalls`), `tool` (`content`,
`toolCallId`), `thinking` (the model's reasoning: `content`, and Anthropic's `signature` /
`redactedThinking`, or OpenAI's encrypted `reasoning_details`), `system`. The request is built
as Continue sends it:

- **Dialect**: Anthropic Messages for a Claude model (provider `anthropic`, or a model whose
  title names Claude), OpenAI Chat Completions for every other. A `thinking` message is sent
  back only to Anthropic, as the `thinking` block (with its signature) of the reply after it;
  OpenAI's encrypted reasoning (`reasoning_details`) is opaque and not counted.
- **System prompt**: not a history item; the item of each model call keeps what was sent as
  text in `promptLogs[].prompt` (`<system>\\n…\\n\\n<user>\\n…`): its `<system>` part is read.
  The tool definitions are not in the log.
- **Calls**: a history item with `promptLogs` is one model call, its `modelTitle` (the name
  the user gave the model) its model. Continue records no token counts.
- An assistant item with neither text nor calls (the placeholder a reply starts as) is not sent.

Continue records no times: a session's dates are `dateCreated` of its entry in `sessions.json`
beside it, when there is one. Seen: the VS Code extension, agent mode, GPT-5.2 (2026,
`../shared/realworld/continue/`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

import orjson

from .agent import Agent
from .session import SessionMeta, from_epoch_ms

if TYPE_CHECKING:
    from ..core.model import Dialect, RecordedCall, Transcript
    from ..formats.common import Where
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "continue"
TITLE = "Continue"
#: Continue's index of its sessions, in the sessions folder: no conversation.
INDEX = "sessions.json"
DOCUMENT_KEYS = frozenset(
    ("sessionId", "title", "workspaceDirectory", "history", "mode", "chatModelTitle", "usage", "isRemote")
)
ITEM_KEYS = frozenset(
    (
        "message",
        "contextItems",
        "promptLogs",
        "toolCallStates",
        "editorState",
        "appliedRules",
        "isGatheringContext",
        "reasoning",
        "conversationSummary",
        "modifiers",
    )
)
ROLES = frozenset(("user", "assistant", "tool", "thinking", "system"))
SYSTEM_TAG, USER_TAG = "<system>\n", "\n\n<user>\n"


def recognise(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("history"), list) and "sessionId" in value


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    given = environ.get("CONTINUE_GLOBAL_DIR")
    return [(Path(given).expanduser() if given else home / ".continue") / "sessions"]


def is_index(folder: str, name: str) -> bool:
    """Continue's index of its sessions (no conversation), which a folder walk leaves out."""
    return name == INDEX and os.path.basename(folder) == "sessions"


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    sessions = []
    for record in records:
        value = record.value
        if not recognise(value):
            continue
        assert isinstance(value, dict)
        session = SessionMeta(str(value.get("sessionId") or ""), TITLE, _folder(value.get("workspaceDirectory")))
        for item in value["history"]:
            logs = item.get("promptLogs") if isinstance(item, dict) else None
            for log in logs if isinstance(logs, list) else ():
                session.model(log.get("modelTitle") if isinstance(log, dict) else None)
        session.model(value.get("chatModelTitle"))
        session.saw(from_epoch_ms(_created(path, session.id)))
        sessions.append(session)
    return sessions


def _folder(workspace: object) -> str:
    """The project folder from Continue's workspace URI ('file:///c%3A/www/hms' -> 'c:/www/hms')."""
    if not isinstance(workspace, str):
        return ""
    if not workspace.startswith("file://"):
        return workspace
    folder = unquote(urlparse(workspace).path)
    return folder[1:] if len(folder) > 2 and folder[0] == "/" and folder[2] == ":" else folder


def _created(path: str, session_id: str) -> object:
    """`dateCreated` (ms since 1970, written as a string) of the session in the index beside it."""
    index = os.path.join(os.path.dirname(path), INDEX)
    try:
        with open(index, "rb") as file:
            entries = orjson.loads(file.read())
    except (OSError, orjson.JSONDecodeError):
        return None
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict) and entry.get("sessionId") == session_id:
            created = entry.get("dateCreated")
            try:
                return float(created) if isinstance(created, (str, int, float)) else None
            except ValueError:
                return None
    return None


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats.common import Where

    for record, value in skipped.documents(records, recognise, DOCUMENT_KEYS):
        yield _Session(name, value["history"], Where(name, record.line).at("history"), skipped).transcript()


class _Session:
    """The request of one session's history, in its model's dialect, with one call per model call."""

    def __init__(self, name: str, history: list, where: Where, skipped: Skipped) -> None:
        self.name, self.where, self.skipped = name, where, skipped
        self.items = [item for item in history if isinstance(item, dict) and isinstance(item.get("message"), dict)]
        self.dialect: Dialect = _dialect(self.items)
        self.sent: list[tuple[dict, Where, RecordedCall | None]] = []
        self.thinking: list[dict] = []  # Anthropic thinking blocks for the next reply

    def transcript(self) -> Transcript:
        from ..core.model import Transcript

        transcript = Transcript(self.name, NAME, self.dialect, ())
        system = _system_prompt(self.items)
        if system and self.dialect == "anthropic":  # (the request's `system`, not a message)
            from ..formats.anthropic import system_message
            from ..formats.common import dumps

            transcript.system = (system_message(system, dumps({"role": "system", "content": system}), self.where),)
        elif system:
            self.sent.append(({"role": "system", "content": system}, self.where, None))
        for index, item in enumerate(self.items):
            self.skipped.keys(item, ITEM_KEYS)
            self._item(item, self.where.at(index))
        return _repaired(transcript, self.sent)

    def _item(self, item: dict, where: Where) -> None:
        from ..core.model import RecordedCall

        message = item["message"]
        role = message.get("role")
        if role not in ROLES:
            self.skipped.record(f"message {role}")
            return
        content = message.get("content")
        if role == "thinking":
            self._thinking(message)
        elif role in ("user", "system"):
            self.sent.append(({"role": role, "content": self._content(content)}, where, None))
        elif role == "tool":
            result = {"role": "tool", "tool_call_id": str(message.get("toolCallId") or ""), "content": _text(content)}
            self.sent.append((result, where, None))
        else:
            logs = _logs(item)
            model = next((str(log["modelTitle"]) for log in logs if log.get("modelTitle")), "")
            reply = self._reply(_text(content), _tool_calls(message.get("toolCalls")))
            if reply is not None:
                self.sent.append((reply, where, RecordedCall(0, str(message.get("id") or ""), model) if logs else None))

    def _thinking(self, message: dict) -> None:
        if self.dialect != "anthropic":
            return  # (OpenAI's reasoning goes back encrypted, if at all: nothing to count)
        if isinstance(message.get("redactedThinking"), str):
            self.thinking.append({"type": "redacted_thinking", "data": message["redactedThinking"]})
        elif isinstance(message.get("signature"), str) and isinstance(message.get("content"), str):
            block = {"type": "thinking", "thinking": message["content"], "signature": message["signature"]}
            self.thinking.append(block)

    def _content(self, content: object) -> object:
        """A user's content: text, or parts (`text`, `imageUrl`) in the dialect's shape."""
        if not isinstance(content, list):
            return _text(content)
        parts: list[dict] = []
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text":
                parts.append({"type": "text", "text": str(part.get("text") or "")})
            elif part.get("type") == "imageUrl":
                image = part["imageUrl"] if isinstance(part.get("imageUrl"), dict) else {}
                url = str(image.get("url") or "")
                parts.append(
                    {"type": "image", "source": {"type": "url", "url": url}}
                    if self.dialect == "anthropic"
                    else {"type": "image_url", "image_url": {"url": url}}
                )
            else:
                self.skipped.record(f"part {part.get('type')}")
        return parts

    def _reply(self, text: str, calls: list[dict]) -> dict | None:
        if not text.strip() and not calls:
            self.thinking = []
            return None
        if self.dialect == "anthropic":
            blocks = self.thinking + ([{"type": "text", "text": text}] if text.strip() else [])
            blocks += [{"type": "tool_use", "id": _id(c), "name": _name(c), "input": _arguments(c)} for c in calls]
            self.thinking = []
            return {"role": "assistant", "content": blocks}
        reply: dict = {"role": "assistant", "content": text if text.strip() else None}
        if calls:
            reply["tool_calls"] = [
                {
                    "id": _id(c),
                    "type": "function",
                    "function": {"name": _name(c), "arguments": str(c["function"].get("arguments") or "")},
                }
                for c in calls
            ]
        return reply


def _repaired(transcript: Transcript, sent: list[tuple[dict, Where, RecordedCall | None]]) -> Transcript:
    """The messages parsed and repaired as their provider accepts them, each call at the index
    of the reply it made."""
    from ..core.repair import repair
    from ..formats import anthropic, openai
    from ..formats.common import dumps
    from ..formats.repair_writers import WRITERS

    if transcript.dialect == "anthropic":
        sent = [(_tool_results(v), w, c) for v, w, c in sent]
    parse = anthropic.parse_message if transcript.dialect == "anthropic" else openai.parse_message
    calls = {}
    parsed = []
    for value, where, call in sent:
        message = parse(value, dumps(value), where)
        if call is not None:
            calls[id(message)] = call
        parsed.append(message)
    repaired = repair(parsed, WRITERS[transcript.dialect], transcript.path, transcript.repairs, transcript.open_end)
    messages = tuple(repaired)
    transcript.messages = messages
    transcript.calls = [calls[id(m)]._replace(message=k) for k, m in enumerate(messages) if id(m) in calls]
    return transcript


def _tool_results(value: dict) -> dict:
    """A `tool` message as Anthropic takes it: a user turn of one `tool_result` (turns are combined by the repair)."""
    if value["role"] != "tool":
        return value
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": value["tool_call_id"], "content": value["content"]}],
    }


def _logs(item: dict) -> list[dict]:
    """What Continue logged of the model call an item is (none: not a call)."""
    logs = item.get("promptLogs")
    return [log for log in logs if isinstance(log, dict)] if isinstance(logs, list) else []


def _tool_calls(calls: object) -> list[dict]:
    if not isinstance(calls, list):
        return []
    return [c for c in calls if isinstance(c, dict) and isinstance(c.get("function"), dict)]


def _id(call: dict) -> str:
    return str(call.get("id") or "")


def _name(call: dict) -> str:
    return str(call["function"].get("name") or "")


def _dialect(items: list[dict]) -> Dialect:
    for item in items:
        for log in _logs(item):
            if log.get("modelProvider") or log.get("modelTitle"):
                provider, title = str(log.get("modelProvider") or ""), str(log.get("modelTitle") or "")
                return "anthropic" if provider == "anthropic" or "claude" in title.lower() else "openai"
    return "openai"


def _system_prompt(items: list[dict]) -> str:
    """The `<system>` part of the first prompt Continue logged, as it sent it."""
    for item in items:
        for log in _logs(item):
            prompt = log.get("prompt")
            if isinstance(prompt, str) and prompt.startswith(SYSTEM_TAG):
                end = prompt.find(USER_TAG)
                return prompt[len(SYSTEM_TAG) : end if end >= 0 else None].strip()
    return ""


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _arguments(call: dict) -> object:
    arguments = call["function"].get("arguments")
    try:
        parsed = orjson.loads(arguments) if isinstance(arguments, str) and arguments else {}
    except orjson.JSONDecodeError:
        return {"arguments": arguments}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like="a Continue session (~/.continue/sessions/<id>.json)",
    recognise=recognise,
    describe=describe,
    leaves_out=is_index,
    read=read,
    folders=folders,
    document=True,
)
