"""OpenCode's `opencode export <session>`: one JSON document holding a whole session.

    {"info": {id, projectID, directory, title, version, model, cost, tokens, time: {created, updated}},
     "messages": [{"info": {id, role, modelID/providerID (or model), cost, tokens, time, ...},
                   "parts": [{type: text | reasoning | tool | step-start | step-finish | file | ...}]}]}

Its messages and parts are what OpenCode keeps in its storage (`formats/opencode.py`, whose
builder makes the request from them: a `step-finish` part records one model call's `tokens`,
`input` + `cache.read` + `cache.write` its whole prompt), put in one document. Each assistant
message records its `cost` in dollars (what OpenCode's provider table priced it at): that is
the session's recorded cost, as ccusage takes it; the tokens are counted per call too (`Spend`).
Seen: OpenCode 1.18.10 (`../shared/realworld/opencode-export/`).

OpenCode itself keeps sessions in a database since 1.2 (`opencode_db.py`); an export is what a
user gives to share one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from .agent import Agent
from .session import SessionMeta, from_epoch_ms, member
from .spend import Spend, count

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.common import Where
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "opencode-export"
TITLE = "OpenCode"
#: The keys of the document, and of each of its messages.
DOCUMENT_KEYS = frozenset(("info", "messages"))
MESSAGE_KEYS = frozenset(("info", "parts"))
#: The part types OpenCode writes (`MessageV2.Part`): those not read are known bookkeeping.
PART_TYPES = frozenset(
    (
        "text",
        "tool",
        "file",
        "step-start",
        "step-finish",
        "compaction",
        "reasoning",
        "snapshot",
        "patch",
        "agent",
        "subtask",
        "retry",
    )
)


def recognise(value: object) -> bool:
    """The whole export: `info` (the session) and `messages`, each an `info` with `parts`."""
    if not isinstance(value, dict) or not isinstance(value.get("info"), dict):
        return False
    messages = value.get("messages")
    return (
        isinstance(messages, list)
        and isinstance(value["info"].get("id"), str)
        and all(isinstance(m, dict) and isinstance(m.get("info"), dict) and "parts" in m for m in messages[:3])
    )


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    sessions = []
    for record in records:
        value = record.value
        if not recognise(value):
            continue
        assert isinstance(value, dict)
        info = value["info"]
        session = SessionMeta(str(info.get("id") or ""), TITLE, str(info.get("directory") or ""))
        times = member(info, "time")
        session.saw(from_epoch_ms(times.get("created")))
        session.saw(from_epoch_ms(times.get("updated")))
        session.spend, session.usd = spend_of(message_infos(value["messages"]), session)
        sessions.append(session)
    return sessions


def message_infos(messages: list) -> Iterator[dict]:
    for message in messages:
        if isinstance(message, dict) and isinstance(message.get("info"), dict):
            yield message["info"]


def spend_of(infos: Iterable[dict], session: SessionMeta) -> tuple[dict, float | None]:
    """The tokens and dollars an OpenCode session's assistant messages record (shared with
    `opencode_db.py`); their models and times are added to `session`."""
    spend = Spend()
    usd: float | None = None
    for info in infos:
        session.saw(from_epoch_ms(member(info, "time").get("created")))
        if info.get("role") != "assistant":
            continue
        model = _model(info)
        session.model(model)
        tokens = member(info, "tokens")
        cache = member(tokens, "cache")
        output = [tokens.get(k) for k in ("output", "reasoning")]
        spend.call(
            model,
            tokens.get("input"),
            cache.get("write"),
            cache.get("read"),
            sum(count(v) for v in output),
            reply=str(info.get("id") or ""),
        )
        cost = info.get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
            usd = (usd or 0.0) + cost
    return spend.totals(), usd


def _model(info: dict) -> str:
    return str(info.get("modelID") or member(info, "model").get("modelID") or "")


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats.common import Where

    for record in records:
        value = record.value
        if not recognise(value):
            skipped.record(type(value).__name__ if not isinstance(value, dict) else value.get("type"))
            continue
        assert isinstance(value, dict)
        skipped.keys(value, DOCUMENT_KEYS)
        yield from conversation(name, value["messages"], Where(name, record.line), skipped)


def conversation(name: str, messages: list, where: Where, skipped: Skipped) -> Iterator[Transcript]:
    """The transcripts of a session's messages (each `{info, parts}`), built as OpenCode builds
    its request (`formats/opencode.py`); also what `opencode_db.py` reads a database into."""
    from ..formats import opencode

    pairs = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("info"), dict):
            skipped.record("(not a message)")
            continue
        skipped.keys(message, MESSAGE_KEYS)
        parts = [p for p in message.get("parts") or () if isinstance(p, dict)]
        for part in parts:
            if part.get("type") not in PART_TYPES:
                skipped.record(f"part {part.get('type')}")
        pairs.append((message["info"], parts))
    builder = opencode._Builder(name, opencode._dialect(info for info, _ in pairs), [])
    for info, parts in pairs:
        builder.add(info, parts, where)
    for transcript in builder.finish():
        transcript.format = NAME
        yield transcript


AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like="an OpenCode export (opencode export <session>: info and messages)",
    recognise=recognise,
    describe=describe,
    read=read,
)
