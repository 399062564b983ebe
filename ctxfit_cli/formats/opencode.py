"""OpenCode sessions (`~/.local/share/opencode/storage`): one JSON file per session, message and part.

    storage/session/<project>/<session>.json   {id, projectID, directory, title, time, ...}
    storage/message/<session>/<message>.json   {id, sessionID, role, time, modelID/providerID
                                                (or model: {providerID, modelID}), tokens, ...}
    storage/part/<message>/<part>.json         {id, type, ...}

A session file is the input (a storage folder, or any folder in it, is read as its session
files: `fleet/discovery.py`); its messages and parts are found beside it, each in id order (the
ids grow with time). They are sent as OpenCode builds a request (`MessageV2.toModelMessages`):

- `text` parts (not `ignored`) are text; `file` parts of the user are attachments (counted as
  images); a `compaction` part asks for the summary that follows it, so the conversation
  starts anew at each compaction (one transcript each, like Claude Code's);
- `tool` parts are the model's calls; a `completed` one is answered with its `output` (or the
  note OpenCode sends once the output was cleared by compaction), an `error` one with its
  `error`, a `pending`/`running` one with OpenCode's interrupted note;
- `step-start` begins a new model call inside one assistant message: each step is one request
  and one reply, its results right after it; `step-finish` records that call's `tokens`
  (`input` + `cache.read` + `cache.write` is the whole prompt, `output` + `reasoning` the output);
- `reasoning`, `snapshot`, `patch` and `agent` parts are not sent as text.

Sent as the model's own API: Anthropic Messages for an Anthropic model (`providerID`
`anthropic`, or a `claude` model), OpenAI Chat Completions for every other (OpenCode talks to
each provider through its AI SDK package; Chat Completions is the shape most share).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import orjson

from ..agents.opencode import NAME
from ..core.model import Dialect, Message, RecordedCall, Transcript
from ..core.repair import repair
from ..errors import BadInput
from . import anthropic, openai
from .common import Where, dumps, json_object, json_text
from .cut import complete_part
from .reading import Record, truncated
from .repair_writers import WRITERS

FORMAT = NAME
#: What OpenCode sends for a tool result cleared by compaction, and for a call still running.
CLEARED = "[Old tool result content cleared]"
INTERRUPTED = "[Tool execution was interrupted]"
#: The user text OpenCode sends for a compaction request.
COMPACTION_PROMPT = "What did we do so far?"


def read(name: str, records: Iterator[Record]) -> Iterator[Transcript]:
    for record in records:
        yield from session(name, record)


def session(name: str, record: Record) -> Iterator[Transcript]:
    """The conversations of one session file, read from the storage folder it is in."""
    info = record.value
    where = Where(name, record.line)
    if not isinstance(info, dict) or "projectID" not in info:
        raise where.fail(
            "this is one message or part of an OpenCode session, not its session file: give the "
            "session file (storage/session/<project>/<id>.json) or the storage folder"
        )
    if name in ("-", "<stdin>"):
        raise where.fail("an OpenCode session is read from its storage folder: give its path, not stdin")
    storage = Path(name).resolve().parents[2]
    open_end: list[str] = []
    messages = [(path, _load(path, open_end)) for path in _files(storage / "message" / str(info["id"]))]
    builder = _Builder(name, _dialect(m for _, m in messages), open_end)
    for path, message in messages:
        parts = [_load(p, open_end) for p in _files(storage / "part" / str(message.get("id")))]
        builder.add(message, parts, Where(str(path), 1))
    yield from builder.finish()


def _files(folder: Path) -> list[Path]:
    try:
        return sorted(folder / n for n in os.listdir(folder) if n.endswith(".json"))
    except FileNotFoundError:
        return []
    except OSError as error:
        raise BadInput(str(folder), None, f"cannot read: {error.strerror or error}") from None


def _load(path: Path, open_end: list[str]) -> dict:
    """One message or part file. OpenCode rewrites them as the session goes (a part as its text
    streams in), so one may be cut short: read up to its last complete member, as written."""
    try:
        data = path.read_bytes()
        value = orjson.loads(data)
    except OSError as error:
        raise BadInput(str(path), None, f"cannot read: {error.strerror or error}") from None
    except orjson.JSONDecodeError as error:
        kept = complete_part(data) if truncated(data, error) else None
        if kept is None:
            raise BadInput(str(path), error.lineno, f"not valid JSON: {error.msg}") from None
        open_end.append(f"{path.parent.name}/{path.name} is cut short (being written)")
        value = orjson.loads(kept)
    if not isinstance(value, dict):
        raise BadInput(str(path), 1, "an OpenCode message or part must be a JSON object")
    return value


def model_of(message: dict) -> tuple[str, str]:
    """(provider, model) of a message, in either layout OpenCode has written."""
    model = json_object(message, "model")
    return (
        str(message.get("providerID") or model.get("providerID") or ""),
        str(message.get("modelID") or model.get("modelID") or ""),
    )


def _dialect(messages: Iterator[dict]) -> Dialect:
    for message in messages:
        provider, model = model_of(message)
        if provider or model:
            return "anthropic" if provider == "anthropic" or "claude" in model.lower() else "openai"
    return "openai"


class _Builder:
    """The request messages of a session, in one dialect, one transcript per compaction."""

    def __init__(self, name: str, dialect: Dialect, open_end: list[str]) -> None:
        self.name, self.dialect, self.open_end = name, dialect, open_end
        self.done: list[Transcript] = []
        self._start()

    def _start(self) -> None:
        self.sent: list[tuple[dict, Where, RecordedCall | None]] = []

    def add(self, message: dict, parts: list[dict], where: Where) -> None:
        if message.get("role") == "user":
            if any(p.get("type") == "compaction" for p in parts):
                self._end()
            self._user(parts, where)
        elif message.get("role") == "assistant":
            self._assistant(message, parts, where)

    def _user(self, parts: list[dict], where: Where) -> None:
        texts = [
            p["text"]
            for p in parts
            if p.get("type") == "text" and isinstance(p.get("text"), str) and p["text"].strip() and not p.get("ignored")
        ]
        texts += [COMPACTION_PROMPT for p in parts if p.get("type") == "compaction"]
        files = [p for p in parts if p.get("type") == "file"]
        if not texts and not files:
            return
        if self.dialect == "anthropic":
            content: list = [{"type": "text", "text": t} for t in texts]
            content += [{"type": "image", "source": {"type": "url", "url": str(f.get("url") or "")}} for f in files]
        else:
            content = [{"type": "text", "text": t} for t in texts]
            content += [{"type": "image_url", "image_url": {"url": str(f.get("url") or "")}} for f in files]
        self._send({"role": "user", "content": content}, where)

    def _assistant(self, message: dict, parts: list[dict], where: Where) -> None:
        provider, model = model_of(message)
        step: list[dict] = []
        for part in parts:
            kind = part.get("type")
            if kind == "step-start" and step:
                self._step(step, None, model, where)
                step = []
            elif kind == "step-finish":
                self._step(step, part.get("tokens"), model, where)
                step = []
            elif kind in ("text", "tool"):
                step.append(part)
        if step:
            self._step(
                step,
                message.get("tokens") if not any(p.get("type") == "step-finish" for p in parts) else None,
                model,
                where,
            )

    def _step(self, parts: list[dict], tokens: object, model: str, where: Where) -> None:
        """One model call: its reply, then the results of its calls."""
        texts = [
            p["text"] for p in parts if p.get("type") == "text" and isinstance(p.get("text"), str) and p["text"].strip()
        ]
        tools = [p for p in parts if p.get("type") == "tool" and isinstance(p.get("callID"), str)]
        if not texts and not tools:
            return
        call = RecordedCall(0, "", model, *_tokens(tokens))
        if self.dialect == "anthropic":
            content = [{"type": "text", "text": t} for t in texts]
            content += [
                {
                    "type": "tool_use",
                    "id": p["callID"],
                    "name": str(p.get("tool") or ""),
                    "input": _state(p).get("input") or {},
                }
                for p in tools
            ]
            self._send({"role": "assistant", "content": content}, where, call)
            if tools:
                self._send(
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": p["callID"],
                                "content": _result(p)[0],
                                **({"is_error": True} if _result(p)[1] else {}),
                            }
                            for p in tools
                        ],
                    },
                    where,
                )
            return
        reply: dict = {"role": "assistant", "content": "\n".join(texts) if texts else None}
        if tools:
            reply["tool_calls"] = [
                {
                    "id": p["callID"],
                    "type": "function",
                    "function": {
                        "name": str(p.get("tool") or ""),
                        "arguments": json_text(_state(p).get("input") or {}),
                    },
                }
                for p in tools
            ]
        self._send(reply, where, call)
        for p in tools:
            self._send({"role": "tool", "tool_call_id": p["callID"], "content": _result(p)[0]}, where)

    def _send(self, value: dict, where: Where, call: RecordedCall | None = None) -> None:
        last = self.sent[-1][0] if self.sent else None
        if self.dialect == "anthropic" and last and last["role"] == value["role"] == "user":
            last["content"] = last["content"] + value["content"]  # one user turn, as the SDK sends it
            return
        self.sent.append((value, where, call))

    def _end(self) -> None:
        if not any(value["role"] == "user" for value, _, _ in self.sent):
            self._start()
            return
        parse = anthropic.parse_message if self.dialect == "anthropic" else openai.parse_message
        transcript = Transcript(self.name, FORMAT, self.dialect, (), line=1 + len(self.done), open_end=self.open_end)
        calls: dict[int, RecordedCall] = {}
        parsed: list[Message] = []
        for value, where, call in self.sent:
            message = parse(value, dumps(value), where)
            if call is not None:
                calls[id(message)] = call
            parsed.append(message)
        repaired = list(repair(parsed, WRITERS[self.dialect], self.name, transcript.repairs, self.open_end))
        transcript.messages = tuple(repaired)
        transcript.calls = [calls[id(m)]._replace(message=k) for k, m in enumerate(repaired) if id(m) in calls]
        self.done.append(transcript)
        self._start()

    def finish(self) -> Iterator[Transcript]:
        self._end()
        yield from self.done


def _state(part: dict) -> dict:
    return part["state"] if isinstance(part.get("state"), dict) else {}


def _result(part: dict) -> tuple[str, bool]:
    """What OpenCode sends back for a call: (text, is it an error)."""
    state = _state(part)
    status = state.get("status")
    if status == "completed":
        cleared = isinstance(state.get("time"), dict) and state["time"].get("compacted")
        return (CLEARED if cleared else str(state.get("output") or "")), False
    if status == "error":
        return str(state.get("error") or ""), True
    return INTERRUPTED, True


def _tokens(tokens: object) -> tuple[int | None, int | None]:
    """(prompt, output) of a call from OpenCode's `tokens`."""
    if not isinstance(tokens, dict):
        return None, None
    cache = json_object(tokens, "cache")
    prompt = [tokens.get("input"), cache.get("read"), cache.get("write")]
    output = [tokens.get("output"), tokens.get("reasoning")]

    def total(values: list) -> int | None:
        counts = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
        return sum(counts) if counts else None

    return total(prompt), total(output)
