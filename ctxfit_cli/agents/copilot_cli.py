"""GitHub Copilot CLI: a session's events, one JSON object a line, in
`$COPILOT_HOME/session-state/<session id>/events.jsonl` (`~/.copilot` without the variable).

Every event is `{type, data, id, timestamp, parentId}`. What the conversation is made of:

- `session.start`: `data.sessionId`, `data.context.cwd` (the project), `data.startTime`;
- `session.model_change`: `data.newModel`, the model of the calls that follow. Copilot writes a
  Claude model's version with a dot (`claude-sonnet-4.6`); it is read with a dash, as Anthropic
  and the price table name it;
- `user.message`: `data.transformedContent` is what the model is sent (the user's `content`
  with the date and Copilot's reminders around it);
- `assistant.message`: one model call (`data.requestId`): its text `content`, its calls
  `toolRequests[]` (`toolCallId`, `name`, `arguments`) and the call's `outputTokens`. Copilot
  records no prompt size per call;
- `tool.execution_complete`: the result of the call `data.toolCallId`: `result.content` (what
  the model reads; `detailedContent` is for the screen), or `error.message` when not `success`.

The session's usage is in `session.shutdown` (`data.modelMetrics.<model>.usage`: `inputTokens`,
cache reads and writes included, `cacheReadTokens`, `cacheWriteTokens`, `outputTokens`), one
per run of the session (a resumed session appends another). A run that has not shut down yet
(or never did) is counted by its replies' `outputTokens` only: its input is not recorded.

An event whose `data.parentToolCallId` names a call is a sub-agent's (the task tool's) own
traffic: not the main conversation's request, though its replies are the session's cost.
The turn and hook events are bookkeeping; any other event type is skipped and counted. The
system prompt and tool definitions are not in the log. Sent as the model's dialect
(`formats/built.py`): Anthropic Messages for a Claude model, else OpenAI Chat Completions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .agent import Agent
from .session import SessionMeta, record_type
from .spend import Spend

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.built import Turn
    from ..formats.common import Where
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "copilot-cli"
TITLE = "GitHub Copilot CLI"
#: The event types read, and those known to hold nothing of the conversation or its cost.
READ = frozenset(
    ("session.start", "session.model_change", "user.message", "assistant.message", "tool.execution_complete")
)
BOOKKEEPING = frozenset(
    (
        "session.shutdown",  # (its usage: `describe`)
        "assistant.turn_start",
        "assistant.turn_end",
        "tool.execution_start",
        "hook.start",
        "hook.end",
        "session.info",
        "session.idle",
        "session.resume",
    )
)
#: The keys of an event.
EVENT_KEYS = frozenset(("type", "data", "id", "timestamp", "parentId", "ephemeral"))


def recognise(value: object) -> bool:
    """An event: a dotted `type` (`session.start`, `user.message`, …) with its `data` object."""
    if not isinstance(value, dict) or "role" in value or not isinstance(value.get("data"), dict):
        return False
    kind = value.get("type")
    return isinstance(kind, str) and kind.split(".", 1)[0] in ("session", "user", "assistant", "tool", "hook")


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    root = Path(environ["COPILOT_HOME"]).expanduser() if environ.get("COPILOT_HOME") else home / ".copilot"
    return [root / "session-state"]


def _data(value: object) -> dict:
    if isinstance(value, dict) and isinstance(value.get("data"), dict):
        return value["data"]
    return {}


def _model(value: object) -> str:
    from ..counters.catalog import claude_dashes

    return claude_dashes(value) if isinstance(value, str) else ""


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    session = SessionMeta("", TITLE)
    spend = Spend()
    model = ""
    unsettled: list[tuple[str, object]] = []  # replies' (model, output) since the last shutdown
    for record in records:
        value = record.value
        if not isinstance(value, dict):
            continue
        session.saw(value.get("timestamp"))
        kind, data = value.get("type"), _data(value)
        if kind == "session.start" and not session.id:
            session.id = str(data.get("sessionId") or "")
            context = data.get("context")
            session.project = str(context.get("cwd") or "") if isinstance(context, dict) else ""
        elif kind == "session.model_change":
            model = _model(data.get("newModel"))
            session.model(model)
        elif kind == "assistant.message":
            unsettled.append((model, data.get("outputTokens")))
            if isinstance(data.get("messageId"), str):
                session.message_ids.append(data["messageId"])
        elif kind == "session.shutdown" and isinstance(data.get("modelMetrics"), dict):
            unsettled.clear()  # the run's own totals: its replies' output is in them
            for name, metrics in data["modelMetrics"].items():
                _shutdown(spend, _model(name), metrics)
                session.model(_model(name))
    for name, output in unsettled:
        spend.call(name, output=output)
    session.spend = spend.totals()
    return [session]


def _shutdown(spend: Spend, model: str, metrics: object) -> None:
    """One model's usage over a run: its input counts the cache reads and writes."""
    usage = metrics.get("usage") if isinstance(metrics, dict) else None
    if not isinstance(usage, dict):
        return
    counts = [usage.get(k) for k in ("inputTokens", "cacheReadTokens", "cacheWriteTokens", "outputTokens")]
    whole, read, write, output = (c if isinstance(c, int) and not isinstance(c, bool) and c > 0 else 0 for c in counts)
    spend.call(model, max(whole - read - write, 0), write, read, output)


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..core.model import RecordedCall
    from ..formats.built import Call, Turn, dialect_of, transcript
    from ..formats.common import Where

    turns: list[Turn] = []
    model = first = ""
    for record in records:
        value = record.value
        kind = record_type(value)
        if kind not in READ:
            if kind not in BOOKKEEPING:
                skipped.record(kind)
            continue
        skipped.keys(value, EVENT_KEYS)
        data, where = _data(value), Where(name, record.line)
        if data.get("parentToolCallId"):  # a sub-agent's own traffic: not this conversation's request
            continue
        if kind == "session.model_change":
            model = _model(data.get("newModel"))
            first = first or model
        elif kind == "user.message":
            text = data.get("transformedContent")
            text = text if isinstance(text, str) else data.get("content")
            if isinstance(text, str):
                turns.append(Turn("user", where, [text]))
        elif kind == "assistant.message":
            calls = [
                Call(str(r["toolCallId"]), str(r.get("name") or ""), r.get("arguments") or {})
                for r in data.get("toolRequests") or ()
                if isinstance(r, dict) and isinstance(r.get("toolCallId"), str)
            ]
            output = data.get("outputTokens")
            call = RecordedCall(
                0, str(data.get("requestId") or ""), model, None, output if isinstance(output, int) else None
            )
            text = data.get("content")
            turns.append(Turn("assistant", where, [text] if isinstance(text, str) else [], calls, recorded=call))
        elif kind == "tool.execution_complete" and isinstance(data.get("toolCallId"), str):
            turns.append(_result(data, where))
    yield transcript(name, NAME, dialect_of(first or model), turns, [])


def _result(data: dict, where: Where) -> Turn:
    """What the model reads of a call: its result's `content`, or its error's message."""
    from ..formats.built import Turn

    failed = data.get("success") is False
    found = data.get("error") if failed else data.get("result")
    text = found.get("message" if failed else "content") if isinstance(found, dict) else found
    return Turn("result", where, [text] if isinstance(text, str) else [], call_id=data["toolCallId"], error=failed)


AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like="a GitHub Copilot CLI session (~/.copilot/session-state/*/events.jsonl)",
    recognise=recognise,
    describe=describe,
    read=read,
    folders=folders,
)
