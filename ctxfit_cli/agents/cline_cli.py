"""Cline CLI (npm `cline`, 3.x): one session a folder, `<data>/sessions/<id>/`, where `<data>` is
its data folder (`--data-dir`; `$CLINE_DATA_DIR`, else `$CLINE_DIR/data`, else `~/.cline/data`,
as for its older versions' tasks: `cline.py`), not the extension's task folders.

`<id>.messages.json` is the conversation, one JSON document rewritten as the session goes:
`{version, updated_at, agent, sessionId, origin: {source, mode, sessionId, version},
messages, system_prompt}`. Each message is `{id, role, ts, content}` with Anthropic-style
blocks (`text`, `thinking`, `tool_use {id, name, input}`, `tool_result {tool_use_id, name,
content}`); an assistant message also carries `modelInfo {id, provider}` and `metrics`
(`inputTokens`, `outputTokens`, `cacheReadTokens`, `cacheWriteTokens`): its call's usage.
`<id>.json` beside it holds the session's facts and totals; only its `cwd` is read (the project).

As Cline CLI sends it (checked on 3.0.65 with an OpenAI-compatible provider, recorded at the
provider): the system prompt first, the user's text without the `<user_input mode="…">` tag the
file keeps around it, a call's result as the JSON text of its `content` list (`[{query,
result}]`), each text in it over 8,000 characters cut in the middle as its message builder cuts
it. What that builder does beyond (a file read again makes its older reads "[outdated - see the
latest file content]" once 64 KB would be saved; a request over 6 MB of text is cut to fit) is
not done here: such a request is counted whole, as the log holds it (more than is sent). Sent
as its model's dialect (`formats/built.py`): Anthropic Messages for a Claude model (or the
Anthropic provider), else OpenAI Chat Completions.

**Usage.** With an OpenAI-compatible provider `inputTokens` is the whole prompt, the cached part
(`cacheReadTokens`) included, as the provider reported it: each assistant message is one call
of that prompt size. With another provider what `inputTokens` holds was not checked, so its
calls record their output only, and their spend is the tokens as written (uncached input,
cache reads and writes, output).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

import orjson

from .agent import Agent
from .cline import CLI_VARIABLES, cli_data
from .session import SessionMeta, from_epoch_ms
from .spend import Spend, count

if TYPE_CHECKING:
    from ..core.model import RecordedCall, Transcript
    from ..formats.built import Turn
    from ..formats.common import Where
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "cline-cli"
TITLE = "Cline CLI"
SUFFIX = ".messages.json"
DOCUMENT_KEYS = frozenset(("version", "updated_at", "agent", "sessionId", "origin", "messages", "system_prompt"))
MESSAGE_KEYS = frozenset(("id", "role", "ts", "content", "modelInfo", "metrics"))
#: A usage object's counts: the whole prompt (cache reads and writes included), cache reads,
#: cache writes, output.
USAGE_KEYS = ("inputTokens", "cacheReadTokens", "cacheWriteTokens", "outputTokens")
#: The providers whose `inputTokens` is known to be the whole prompt (recorded at the provider).
WHOLE_PROMPT = frozenset(("openai-compatible", "openai", "openai-native"))
#: The longest text of a call's result Cline sends (its message builder's `maxToolResultChars`,
#: `CLINE_MESSAGE_BUILDER_MAX_TOOL_RESULT_CHARS`); a longer one is cut in the middle.
MAX_RESULT_CHARS = 8000
#: The tag the file keeps around a user's text, which is not sent.
_USER_INPUT = re.compile(r"\A<user_input mode=\"[^\"]*\">(.*)</user_input>\Z", re.DOTALL)


def recognise(value: object) -> bool:
    """A session's messages document: its `sessionId` and `origin` beside the `messages` list."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("messages"), list)
        and isinstance(value.get("sessionId"), str)
        and isinstance(value.get("origin"), dict)
    )


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    return [cli_data(environ, home) / "sessions"]


def walk(folder: str, dirs: list[str], names: list[str]) -> list[str] | None:
    """Of a session's folder, its messages document only (`<id>.json` beside it is its facts)."""
    found = [os.path.join(folder, n) for n in names if n.endswith(SUFFIX)]
    return found or None


def _messages(value: dict) -> list[dict]:
    return [m for m in value["messages"] if isinstance(m, dict)]


def _model(message: dict) -> str:
    from ..counters.catalog import claude_dashes

    info = message.get("modelInfo")
    model = info.get("id") if isinstance(info, dict) else None
    return claude_dashes(model) if isinstance(model, str) else ""


def _provider(message: dict) -> str:
    info = message.get("modelInfo")
    provider = info.get("provider") if isinstance(info, dict) else None
    return provider if isinstance(provider, str) else ""


def _metrics(message: dict) -> tuple[int, int, int, int] | None:
    """(input, cache reads, cache writes, output) as the message's `metrics` records them."""
    metrics = message.get("metrics")
    if not isinstance(metrics, dict):
        return None
    given, read, write, output = (count(metrics.get(k)) for k in USAGE_KEYS)
    return given, read, write, output


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    described = []
    for record in records:
        value = record.value
        if not recognise(value):
            continue
        assert isinstance(value, dict)
        session = SessionMeta(value["sessionId"], TITLE, line=record.line)
        session.project = _project(path, value)
        spend = Spend()
        for message in _messages(value):
            session.saw(from_epoch_ms(message.get("ts")))
            if message.get("role") != "assistant":
                continue
            model = _model(message)
            session.model(model)
            counts = _metrics(message)
            if counts is None:
                continue
            given, read, write, output = counts
            if _provider(message) in WHOLE_PROMPT:
                given = max(given - read - write, 0)
            spend.call(model, given, write, read, output)
        session.spend = spend.totals()
        described.append(session)
    return described


def _project(path: str, value: dict) -> str:
    """The folder the session ran in, named by its facts file beside the messages (`cwd`)."""
    name = PurePath(path).name
    if not name.endswith(SUFFIX):
        return ""
    facts = Path(path).with_name(name[: -len(SUFFIX)] + ".json")
    try:
        cwd = orjson.loads(facts.read_bytes()).get("cwd")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return ""
    return cwd if isinstance(cwd, str) else ""


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats.built import dialect_of, transcript
    from ..formats.common import Where

    for record, value in skipped.documents(records, recognise, DOCUMENT_KEYS):
        where = Where(name, record.line)
        turns: list[Turn] = []
        model = provider = ""
        for index, message in enumerate(_messages(value)):
            skipped.keys(message, MESSAGE_KEYS)
            model, provider = _model(message) or model, _provider(message) or provider
            turns += _turns(message, where.at(index), skipped)
        system = value.get("system_prompt")
        system = system if isinstance(system, str) else ""
        yield transcript(name, NAME, dialect_of(model, provider), turns, [], record.line, system=system)


def _turns(message: dict, where: Where, skipped: Skipped) -> list[Turn]:
    """A message's turns: a user's text, or its calls' results; a reply with its calls."""
    from ..formats.built import Call, Turn

    role, blocks = message.get("role"), message.get("content")
    blocks = [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []
    if role == "assistant":
        texts = [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
        calls = [
            Call(str(b["id"]), str(b.get("name") or ""), b.get("input") or {})
            for b in blocks
            if b.get("type") == "tool_use" and isinstance(b.get("id"), str)
        ]
        _skip(blocks, ("text", "tool_use", "thinking"), skipped)
        return [Turn("assistant", where, texts, calls, recorded=_recorded(message))]
    if role != "user":
        skipped.record(f"role {role}")
        return []
    turns = [
        Turn("result", where, [_result_text(b.get("content"))], call_id=b["tool_use_id"])
        for b in blocks
        if b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str)
    ]
    texts = [_sent_text(b["text"]) for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
    _skip(blocks, ("text", "tool_result"), skipped)
    return turns + ([Turn("user", where, texts)] if texts else [])


def _skip(blocks: list[dict], known: tuple[str, ...], skipped: Skipped) -> None:
    for block in blocks:
        if block.get("type") not in known:
            skipped.record(f"block {block.get('type')}")


def _sent_text(text: str) -> str:
    """A user's text as it is sent: without the mode tag the file keeps around it."""
    found = _USER_INPUT.match(text)
    return found.group(1) if found else text


def _result_text(content: object) -> str:
    """A result as it is sent: its text, or the JSON text of its list of outputs, each text in it
    cut to `MAX_RESULT_CHARS` as Cline's message builder cuts it (`truncateToolResultContent`)."""
    if isinstance(content, str):
        return _middle(content)
    if not isinstance(content, list):
        return orjson.dumps(content).decode() if content is not None else ""
    return orjson.dumps([_cut_output(item) for item in content]).decode()


def _cut_output(item: object) -> object:
    if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
        return {**item, "text": _middle(item["text"])}
    if isinstance(item, dict) and item.get("type") == "file" and isinstance(item.get("content"), str):
        return {**item, "content": _middle(item["content"])}
    return _cut_strings(item)


def _cut_strings(value: object) -> object:
    if isinstance(value, str):
        return _middle(value)
    if isinstance(value, list):
        return [_cut_strings(v) for v in value]
    if isinstance(value, dict):
        return {k: _cut_strings(v) for k, v in value.items()}
    return value


def _middle(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """Cline's `truncateMiddle`: a text longer than `limit` (JavaScript's length: UTF-16 code
    units) as its head and tail around a note of what was left out, `limit` long in all."""
    units = text.encode("utf-16-le", "surrogatepass")
    length = len(units) // 2
    if length <= limit:
        return text
    half = max(0, (limit - len(_omitted(length - limit))) // 2)
    note = _omitted(max(0, length - 2 * half))
    kept = max(0, (limit - len(note)) // 2)
    head, tail = units[: 2 * kept], units[len(units) - 2 * kept :] if kept else b""
    return head.decode("utf-16-le", "surrogatepass") + note + tail.decode("utf-16-le", "surrogatepass")


def _omitted(count: int) -> str:
    return f"\n\n...[truncated {count} chars]...\n\n"


def _recorded(message: dict) -> RecordedCall:
    from ..core.model import RecordedCall

    counts = _metrics(message)
    prompt = counts[0] if counts and _provider(message) in WHOLE_PROMPT and counts[0] else None
    return RecordedCall(0, str(message.get("id") or ""), _model(message), prompt, counts[3] if counts else None)


AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like="a Cline CLI session (~/.cline/data/sessions/<id>/<id>.messages.json)",
    recognise=recognise,
    describe=describe,
    read=read,
    folders=folders,
    document=True,
    variables=CLI_VARIABLES,
    where="~/.cline/data/sessions or $CLINE_DATA_DIR/sessions",
    walk=walk,
)
