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

Copilot 1.0.102 writes more: `system.message` (`data.content`: the system prompt, read as the
request's), and before each reply a `session.usage_record` (`data.usage`: its `model`,
`inputTokens` (the whole prompt, cache reads and writes included), `cacheReadTokens`,
`cacheWriteTokens`, `outputTokens`, and `apiCallId`, which the reply's `assistant.message`
names too): each call's own usage, read as the call's, and its run's spend in place of the
shutdown's totals (which add up the same calls).

The session's usage is in `session.shutdown` (`data.modelMetrics.<model>.usage`: `inputTokens`,
cache reads and writes included, `cacheReadTokens`, `cacheWriteTokens`, `outputTokens`), one
per run of the session (a resumed session appends another). A run that has not shut down yet
(or never did) is counted by its replies' `outputTokens` only: its input is not recorded.

An event whose `data.parentToolCallId` names a call is a sub-agent's (the task tool's) own
traffic: not the main conversation's request, though its replies are the session's cost.
The turn and hook events are bookkeeping; any other event type is skipped and counted. The
system prompt and tool definitions are not in the log. Sent as the model's dialect
(`formats/built.py`): Anthropic Messages for a Claude model, else OpenAI Chat Completions.

- **Wrap** (1.0.102, `copilot help providers`): with a provider of the user's own (BYOK) Copilot
  CLI reads its endpoint from `COPILOT_PROVIDER_BASE_URL` and its dialect from
  `COPILOT_PROVIDER_TYPE`: `openai` (the default; the URL ends in `/v1`, Chat Completions, or
  the Responses API with `COPILOT_PROVIDER_WIRE_API=responses`) or `anthropic` (no `/v1`).
  Wrap points that variable at the proxy and forwards to where it pointed. Copilot's own
  GitHub-hosted models go to GitHub's API, which no variable points elsewhere: wrap needs
  BYOK (`COPILOT_MODEL` too), and says so when Copilot sent nothing through the proxy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .agent import Agent
from .session import SessionMeta, record_type
from .spend import Spend, count
from .wrap import Wrap

if TYPE_CHECKING:
    from ..core.model import RecordedCall, Transcript
    from ..formats.built import Turn
    from ..formats.common import Where
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "copilot-cli"
TITLE = "GitHub Copilot CLI"
#: The event types read, and those known to hold nothing of the conversation or its cost.
READ = frozenset(
    (
        "session.start",
        "session.model_change",
        "system.message",
        "user.message",
        "session.usage_record",
        "assistant.message",
        "tool.execution_complete",
    )
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
        "session.permissions_changed",
    )
)
#: A usage object's counts: the whole prompt (cache reads and writes included), cache reads,
#: cache writes, output.
USAGE_KEYS = ("inputTokens", "cacheReadTokens", "cacheWriteTokens", "outputTokens")
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
    calls: list[dict] = []  # the calls' own usage since the last shutdown (1.0.102 on)
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
        elif kind == "session.usage_record" and isinstance(data.get("usage"), dict):
            calls.append(data["usage"])
        elif kind == "session.shutdown" and isinstance(data.get("modelMetrics"), dict):
            unsettled.clear()  # the run's own totals: its replies' output is in them
            if calls:  # each call's own usage, which the totals add up
                _settle(spend, session, calls)
                continue
            for name, metrics in data["modelMetrics"].items():
                _add_usage(spend, _model(name), metrics.get("usage") if isinstance(metrics, dict) else None)
                session.model(_model(name))
    if calls:
        _settle(spend, session, calls)
    else:
        for name, output in unsettled:
            spend.call(name, output=output)
    session.spend = spend.totals()
    return [session]


def _settle(spend: Spend, session: SessionMeta, calls: list[dict]) -> None:
    """A run's calls, each by its own usage record."""
    for usage in calls:
        model = _model(usage.get("model"))
        _add_usage(spend, model, usage)
        session.model(model)
    calls.clear()


def _counts(usage: dict) -> tuple[int, int, int, int]:
    """(whole prompt, cache reads, cache writes, output) of a usage object: its input counts the
    cache reads and writes."""
    whole, read, write, output = (count(usage.get(k)) for k in USAGE_KEYS)
    return whole, read, write, output


def _add_usage(spend: Spend, model: str, usage: object) -> None:
    """One call's or one model's run's usage."""
    if not isinstance(usage, dict):
        return
    whole, read, write, output = _counts(usage)
    spend.call(model, max(whole - read - write, 0), write, read, output)


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats.built import Call, Turn, dialect_of, transcript
    from ..formats.common import Where

    turns: list[Turn] = []
    model = first = system = ""
    usages: dict[str, dict] = {}  # the calls' own usage records, by the call's id (1.0.102 on)
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
        elif kind == "system.message" and isinstance(data.get("content"), str):
            system = data["content"]  # (each run states it again: the latest is what is sent)
        elif kind == "session.usage_record" and isinstance(data.get("usage"), dict):
            usages[str(data["usage"].get("apiCallId") or "")] = data["usage"]
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
            call = _recorded(data, usages.pop(str(data.get("apiCallId") or ""), None), model)
            text = data.get("content")
            turns.append(Turn("assistant", where, [text] if isinstance(text, str) else [], calls, recorded=call))
        elif kind == "tool.execution_complete" and isinstance(data.get("toolCallId"), str):
            turns.append(_result(data, where))
    yield transcript(name, NAME, dialect_of(first or model), turns, [], system=system)


def _recorded(data: dict, usage: dict | None, model: str) -> RecordedCall:
    """A reply's call: with its usage record, the whole prompt it was sent and its output;
    else the output its message records (before 1.0.102)."""
    from ..core.model import RecordedCall

    if usage is None:
        output = data.get("outputTokens")
        count = output if isinstance(output, int) else None
        return RecordedCall(0, str(data.get("requestId") or ""), model, None, count)
    whole, _, _, output = _counts(usage)
    called = _model(usage.get("model")) or model
    return RecordedCall(0, str(usage.get("apiCallId") or ""), called, whole or None, output)


def _result(data: dict, where: Where) -> Turn:
    """What the model reads of a call: its result's `content`, or its error's message."""
    from ..formats.built import Turn

    failed = data.get("success") is False
    found = data.get("error") if failed else data.get("result")
    text = found.get("message" if failed else "content") if isinstance(found, dict) else found
    return Turn("result", where, [text] if isinstance(text, str) else [], call_id=data["toolCallId"], error=failed)


def _provider(environ: Mapping[str, str]) -> Wrap | None:
    """Copilot's provider of the user's own, by its type: Anthropic's form, else OpenAI's."""
    return WITH_ANTHROPIC if environ.get("COPILOT_PROVIDER_TYPE", "").strip().lower() == "anthropic" else None


_PROVIDER_VARIABLE, _KEY = "COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_API_KEY"
WITH_ANTHROPIC = Wrap("copilot", _PROVIDER_VARIABLE, "https://api.anthropic.com", key=_KEY)
WRAP = Wrap("copilot", _PROVIDER_VARIABLE, "https://api.openai.com", suffix="/v1", key=_KEY, signed_in=_provider)

AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like="a GitHub Copilot CLI session (~/.copilot/session-state/*/events.jsonl)",
    recognise=recognise,
    describe=describe,
    read=read,
    folders=folders,
    wrap=WRAP,
)
