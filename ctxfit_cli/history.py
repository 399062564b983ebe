"""A library caller's history as the facade (`api.py`) works on it: the items read into messages
(Responses replies grouped, Gemini responses keyed to their calls), repaired as every reader
repairs them, the fixed part (system prompt, tools), the walk a `Session` drives, and the
caller's objects given back for the messages sent."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import orjson

from .core.anchor import Anchor, PrefixDigests
from .core.fitting import FitOptions, Fitter
from .core.growing import same_objects
from .core.model import WRITTEN_BY_AGENT, Dialect, Message, Part, PartKind, Role, Transcript
from .core.plan import Plan
from .core.repair import MADE_FROM
from .core.uncounted import count_key
from .core.validate import MAX_BREAKPOINTS, Checked, check_message, memo_key, validate_request
from .errors import BadInput
from .formats import PARSERS, anthropic, gemini, responses
from .formats.common import Where, dumps, json_text
from .formats.payload import cleared_calls, sent_messages, with_cleared
from .formats.repair_writers import WRITERS
from .sdk import RequestDict, copy_with, plain_json

#: The dialect assumed while nothing says which it is. Only plain user and assistant text has
#: been seen then, read alike in both; and Anthropic's shaping (adjacent user messages merged)
#: is valid for OpenAI too, not the other way round.
FALLBACK_DIALECT: Dialect = "anthropic"


class SentRequest(NamedTuple):
    """The request a `Session.fit` produced, as `Session.record` anchors it: how many messages of
    the walked history it held, ctxfit's own estimate of it, and the walk it belongs to."""

    messages: int
    estimated: int
    walk: Any


def origin(message: Message, where: dict[int, int]) -> int | None:
    """The position of the caller's message a repaired one was made from (the first of two
    combined), or None for one a repair made from nothing of the caller's."""
    made_from = message.memo.get(MADE_FROM)
    if not made_from:
        return None
    position = where.get(id(made_from[0]))
    return position if position is not None else origin(made_from[0], where)


def checks_of(message: Message, values: list[dict], dialect: Dialect) -> tuple[Checked, ...]:
    """The checks of one message's items on their own, made once and kept with it."""
    key = memo_key(dialect)
    checked = message.memo.get(key)
    if checked is None:
        checked = message.memo[key] = tuple([check_message(value, dialect) for value in values])
    return checked


def request_of(values: list, dialect: Dialect) -> dict:
    """A request holding these messages (Responses items, Gemini contents), to be validated."""
    return {{"responses": "input", "gemini": "contents"}.get(dialect, "messages"): values}


def changed_copy(original: Any, message: Message) -> tuple[Any, dict]:
    """The copy of `original` that ctxfit changed into `message` (made once per change: the
    changed message is kept by the payload module, and the copy on it)."""
    made = message.memo.get("sdk_copy")
    if made is None or made[0] is not original:
        value = orjson.loads(message.raw)
        made = message.memo["sdk_copy"] = (original, copy_with(original, value), value)
    return made[1], made[2]


class Walk:
    """The one place the facade drives the core's fitting: the forward walk of one history and
    the messages each request sends. (A seam: the Fitter's insides may be reorganised.)"""

    def __init__(
        self, options: FitOptions, fixed: tuple[tuple[Message, ...], Message | None], dialect: Dialect, lead: int
    ) -> None:
        system, tools = fixed
        self.transcript = Transcript("<messages>", dialect, dialect, (), system=system, tools=tools)
        self.fitter = Fitter(options, self.transcript.fixed, dialect=dialect)
        self.lead = lead  # leading system messages: sent as they are, counted as fixed
        self.body: list[Message] = []  # the history after them, grown in place
        self._digests = PrefixDigests(self.transcript.fixed)
        #: What the last step sent, and how many results it cleared (-1: it left some out).
        self._last_sent: tuple[Message, ...] = ()
        self._last_cleared = -1
        self._calls: dict[int, str | frozenset[str]] = {}

    def leads_to(self, body: list[Message]) -> bool:
        """Whether `body` is the history walked so far and more (a repair made at its end, as
        an aborted result for a call then still open, may since have been replaced)."""
        walked = self.body
        return len(body) >= len(walked) and all(map(operator.is_, walked, body))

    def adopts(self, body: list[Message]) -> bool:
        """Whether `body` is the history walked so far and more, up to messages that changed only
        in what the provider does not count and the fitter does not see (Claude Code moves its
        `cache_control` marker to the newest message at every step): those take their old ones'
        place in the walk, so that what is sent for them is the caller's message of now, and the
        walk goes on instead of starting over (a new walk of a 1.4 MB history cost 60 ms a request)."""
        walked = self.body
        if len(body) < len(walked):
            return False
        changed = [i for i in range(same_objects(body, walked), len(walked)) if body[i] is not walked[i]]
        if not all(_counted_alike(walked[i], body[i]) for i in changed):
            return False
        messages, last, dialect = self.fitter.history.messages, list(self._last_sent), self.transcript.dialect
        for i in changed:
            walked[i] = messages[i] = body[i]
            if i < len(last) and self._last_cleared >= 0:  # (else the next step makes them all again)
                last[i] = with_cleared(body[i], self._calls.get(i), dialect)
        self._last_sent = tuple(last)
        return True

    def step(self, body: list[Message]) -> tuple[Plan, tuple[Message, ...]]:
        """The plan and the messages sent for the history `body` (the lead excluded), which
        `leads_to`."""
        self.body.extend(body[len(self.body) :])
        plan = self.fitter.update(self.body)
        if plan.cannot_fit:
            return plan, ()
        return plan, self._sent(plan)

    def _sent(self, plan: Plan) -> tuple[Message, ...]:
        """`payload.sent_messages` of the walked history: while neither this plan nor the last
        left anything out, the last step's messages, made again only where the results cleared
        in them changed, and the new ones. (The cleared results are the oldest candidates and
        only grow: the same number is the same ones. A batch cleared is a few hundred messages
        of thousands: only those are made again.)"""
        cleared = sum(len(batch.results) for batch in plan.batches if batch.cleared)
        last = self._last_sent
        if plan.dropped or self._last_cleared < 0 or len(last) > plan.messages:
            self._calls = cleared_calls(plan)
            sent = sent_messages(replace(self.transcript, messages=tuple(self.body)), plan)
        else:
            dialect, body = self.transcript.dialect, self.body
            calls = self._calls if cleared == self._last_cleared else cleared_calls(plan)
            if calls is not self._calls:
                made = list(last)
                for i in _changed_keys(self._calls, calls, len(last)):
                    made[i] = with_cleared(body[i], calls.get(i), dialect)
                last, self._calls = tuple(made), calls
            sent = last + tuple([with_cleared(body[i], calls.get(i), dialect) for i in range(len(last), plan.messages)])
        self._last_cleared, self._last_sent = (-1 if plan.dropped else cleared), sent
        return sent

    def sent(self) -> SentRequest:
        """The request the last `step` planned, as an anchor will compare with it."""
        return SentRequest(len(self.body), self.fitter.planned_estimate, self)

    def digest(self, body: Sequence[Message]) -> bytes:
        """What an anchor on a request holding `body` compares (`core.anchor.PrefixDigests`)."""
        return self._digests.of(body)

    def holds(self, anchor: Anchor, body: list[Message]) -> bool:
        """Whether the history `body` (the lead excluded, as repaired) still starts with the
        prefix `anchor` counted, under this walk's system prompt and tools."""
        end = anchor.messages
        return end <= len(body) and self.digest(body[:end]) == anchor.digest


def _counted_alike(old: Message, new: Message) -> bool:
    """Whether `new` is `old` to the provider's count (`core.uncounted.count_key`) and to the
    fitter (the same role, parts and kind of message: the same estimate, results and calls)."""
    return (
        new.role is old.role
        and new.pinned == old.pinned
        and new.parts == old.parts
        and (WRITTEN_BY_AGENT in new.memo) == (WRITTEN_BY_AGENT in old.memo)
        and count_key(new) == count_key(old)
    )


def _changed_keys(old: dict[int, Any], new: dict[int, Any], below: int) -> list[int]:
    """The keys under `below` whose values differ between `old` and `new` (missing in one)."""
    return [i for i in {*old, *new} if i < below and old.get(i) != new.get(i)]


class Fixed:
    """The system prompt and tool definitions given to a session, as JSON and as messages."""

    def __init__(self, system: Any, tools: Any) -> None:
        self.system = None if system is None else plain_json(system, "system")
        self.tools = None if tools is None else plain_json(tools, "tools")
        self.dialect = dialect_of_tools(self.tools)
        self._problems: dict[str, tuple[list[str], int]] = {}
        #: The messages' checks last summed for their breakpoints, and the sum (`_breakpoints`).
        self._summed: tuple[list[Checked], int] = ([], 0)

    def problems(self, checks: list[Checked], dialect: Dialect) -> list[str]:
        """What the validator finds in the system prompt and tools, and in the request's
        `cache_control` breakpoints as a whole (Anthropic)."""
        if dialect == "gemini":
            if dialect not in self._problems:
                system = None if self.system is None else gemini.system_value(self.system)
                alone = validate_request(
                    {
                        "systemInstruction": system,
                        "tools": self.tools,
                        "contents": [{"role": "user", "parts": [{"text": "-"}]}],
                    },
                    dialect,
                )
                self._problems[dialect] = (alone, 0)
            return self._problems[dialect][0]
        if dialect != "anthropic":
            return []
        if dialect not in self._problems:
            alone = validate_request(
                {"system": self.system, "tools": self.tools, "messages": [{"role": "user", "content": "-"}]}, dialect
            )
            marked = cache_breakpoints(self.system) + cache_breakpoints(self.tools)
            self._problems[dialect] = ([p for p in alone if "cache_control" not in p], marked)
        problems, breakpoints = self._problems[dialect]
        breakpoints += self._breakpoints(checks)
        if breakpoints > MAX_BREAKPOINTS:
            return problems + [f"{breakpoints} cache_control breakpoints; at most {MAX_BREAKPOINTS} are allowed"]
        return problems

    def _breakpoints(self, checks: list[Checked]) -> int:
        """The cache breakpoints of the messages' `checks`, summed past those summed last time
        when they start this list (the very same checks: a growing request's), not over the
        whole history at every step."""
        last, total = self._summed
        kept = same_objects(checks, last)
        if kept < len(last):
            kept, total = 0, 0
        total += sum(c.breakpoints for c in checks[kept:])
        self._summed = (list(checks), total)
        return total

    def messages(self, lead: Sequence[Message], dialect: Dialect) -> tuple[tuple[Message, ...], Message | None]:
        """(system messages, tools message): the given system prompt, then OpenAI's leading
        system messages `lead`."""
        system = tuple(lead)
        if self.system is not None and dialect == "gemini":
            value = gemini.system_value(self.system)
            system = (gemini.system_message(value, dumps(value), Where("system", 0)),) + system
        elif self.system is not None:
            raw = dumps({"role": "system", "content": self.system})
            system = (anthropic.system_message(self.system, raw, Where("system", 0)),) + system
        tools = None
        if self.tools is not None:
            tools = Message(Role.TOOLS, (Part(PartKind.TEXT, json_text(self.tools)),), dumps(self.tools))
        return system, tools


def parse_item(request: RequestDict, index: int, dialect: Dialect, previous: Message | None = None) -> Message:
    """One history item as a message; a Gemini content's responses keyed as the calls of the
    content before (`gemini.answering`)."""
    try:
        message = PARSERS[dialect](request.value, request.raw, Where("messages", index + 1))
    except BadInput as error:
        raise BadInput(f"messages[{index}]", None, error.problem) from None
    return gemini.answering(previous, message) if dialect == "gemini" else message


def parse_all(requests: Sequence[RequestDict], dialect: Dialect) -> list[Message]:
    messages: list[Message] = []
    for index, request in enumerate(requests):
        messages.append(parse_item(request, index, dialect, messages[-1] if messages else None))
    return messages


def repair_writer(dialect: Dialect) -> Any:
    """How repairs are written in this dialect: Gemini's writer learns the names of the calls it
    sees (to answer one by name), so each session has its own."""
    if dialect == "gemini":
        from .formats.gemini_repair import GeminiWriter

        return GeminiWriter()
    return WRITERS[dialect]


def by_index(repaired: str) -> str:
    """A repair line as `messages[i]: ...` (the reader wrote `messages:<i + 1>: ...`)."""
    head, _, rest = repaired.partition(": ")
    number = head.rpartition(":")[2]
    return f"messages[{int(number) - 1}]: {rest}" if number.isdigit() and int(number) else repaired


def parse_span(requests: list[RequestDict], start: int, end: int, dialect: Dialect) -> Message:
    """The message made of items `start:end` (several only for a Responses reply)."""
    if end - start == 1:
        return parse_item(requests[start], start, dialect)
    span = requests[start:end]
    return PARSERS[dialect]([r.value for r in span], b",".join(r.raw for r in span), Where(f"messages[{start}]", 0))


def messages_of(requests: list[RequestDict], dialect: Dialect) -> tuple[list[Message], list[int]]:
    """The messages of a history's items, and the item each starts at."""
    if dialect != "responses":
        return parse_all(requests, dialect), list(range(len(requests)))
    spans = responses.group_spans([r.value for r in requests])
    return [parse_span(requests, a, b, dialect) for a, b in spans], [a for a, _ in spans]


def cache_breakpoints(value: Any) -> int:
    """`cache_control` markers on the blocks of a system prompt or the tool definitions."""
    if not isinstance(value, list):
        return 0
    return sum(isinstance(v, dict) and "cache_control" in v for v in value)


def leading_system(messages: list[Message]) -> int:
    lead = 0
    while lead < len(messages) and messages[lead].role is Role.SYSTEM and not messages[lead].pinned:
        lead += 1
    return lead


def dialect_of_tools(tools: Any) -> Dialect | None:
    """Anthropic's tool definitions have an `input_schema`; Chat Completions' are
    `{"type": "function", "function": {...}}`; the Responses API's are flat (`{"type":
    "function", "name": ...}`, `{"type": "custom", ...}`, `{"type": "local_shell"}`, ...);
    Gemini's hold `functionDeclarations` (or a built-in tool)."""
    if gemini.tools_dialect(tools):
        return "gemini"
    if isinstance(tools, list) and tools and isinstance(tools[0], dict):
        tool = tools[0]
        if "input_schema" in tool:
            return "anthropic"
        if "function" in tool or "custom" in tool:
            return "openai" if tool.get("type") in ("function", "custom") else None
        if tool.get("type") in _RESPONSES_TOOLS:
            return "responses"
    return None


#: The Responses API's tool types (an Anthropic server tool's type carries a date: `bash_20250124`).
_RESPONSES_TOOLS = (
    "function",
    "custom",
    "local_shell",
    "shell",
    "apply_patch",
    "web_search",
    "web_search_preview",
    "file_search",
    "computer_use_preview",
    "mcp",
    "code_interpreter",
    "image_generation",
)
