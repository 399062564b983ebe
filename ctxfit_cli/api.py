"""The library facade: `fit`, `Session` and `count`, over what agent loops already hold.

Messages go in as the loop keeps them — dicts, the Anthropic and OpenAI SDKs' own objects,
LangChain messages — and come back the same way, ready for `client.messages.create(...)` or
`client.chat.completions.create(...)`: the messages ctxfit leaves alone are the very objects
given, the ones it changes (a cleared tool result, the note on the first message) are new copies.
The caller's list and objects are never changed.

>>> history = [{"role": "user", "content": "Summarise the report."}]
>>> fit(history, budget=1000)[0] is history[0]
True
"""

from __future__ import annotations

import operator
from dataclasses import replace
from typing import Any, Iterable, NamedTuple, Sequence

import orjson

from .counters.seed import SEED, Counter
from .core.anchor import Anchor, Anchoring, prefix_digest
from .core.estimate import total_tokens
from .core.fitting import FitOptions, Fitter
from .core.model import Dialect, Message, Part, PartKind, Role, Transcript
from .core.notes import TOO_LONG
from .core.plan import Plan
from .core.reported import Reported, reported_prompt
from .core.validate import MAX_BREAKPOINTS, Checked, check_message, memo_key, scan, validate_request
from .errors import BadInput, CannotFit, InvalidRequest
from .formats import PARSERS, anthropic
from .formats.common import Where, dumps, json_text
from .formats.payload import sent_messages
from .sdk import RequestDict, as_request_dict, copy_with, plain_json

#: The dialect assumed while nothing says which it is. Only plain user and assistant text has
#: been seen then, read alike in both; and Anthropic's shaping (adjacent user messages merged)
#: is valid for OpenAI too, not the other way round.
FALLBACK_DIALECT: Dialect = "anthropic"


def fit(messages: Sequence[Any], budget: int, *, system: Any = None, tools: Any = None,
        dialect: Dialect | None = None, window: int | None = None, usage: Any = None,
        **options: Any) -> list:
    """The messages to send so that the request fits `budget` tokens (DESIGN §4).

    `messages`: dicts, SDK objects or LangChain messages (OpenAI's leading system messages
    included). `system` and `tools` are what the request also carries (Anthropic's `system`
    parameter, the tool definitions): they are always sent, so they are counted. `dialect`
    ("anthropic" or "openai") is detected when not given. `window` is the model's hard limit;
    `usage` the size the provider reported for the request that got the last reply in
    `messages` (the reply or its usage: see `Session.record`), so that the request is sized from
    it (DESIGN §11); other options are `FitOptions`' (`batch_size`, `lowwater`, `counter`, ...).
    Raises `CannotFit` when even the smallest request is over the window.

    >>> history = [{"role": "user", "content": "Read the log."},
    ...     {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
    ...     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 8000}]},
    ...     {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "read", "input": {}}]},
    ...     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "y" * 8000}]}]
    >>> sent = fit(history, budget=3000)
    >>> sent[2]["content"][0]["content"][:40], sent[4] is history[4]
    ('[This tool result was cleared to keep th', True)
    """
    session = Session(budget, system=system, tools=tools, dialect=dialect, window=window, **options)
    return session.fit(messages, usage=usage)


class SentRequest(NamedTuple):
    """The request a `Session.fit` produced, as `Session.record` anchors it: how many messages of
    the walked history it held, ctxfit's own estimate of it, and the walk it belongs to."""

    messages: int
    estimated: int
    walk: Any


class Session:
    """Fitting before every request of one agent loop, paying only for what is new.

    `session.fit(history)` takes the loop's own growing list each time. The part seen before is
    recognised by identity, else by equality (a removed, inserted or replaced message is noticed
    and the walk starts over), so a step costs about what the new messages cost. The ratchets of
    DESIGN §4 hold across steps: the cleared results only grow and the kept start only moves
    forward. A message is not expected to change in place once fitted: replace it to edit it.

    After each request, `session.record(response)` gives it the size the provider reported
    (DESIGN §11): the next `fit` is sized from that count plus the estimate of what changed
    since, not from the estimate of the whole request.

    >>> session = Session(budget=400_000, system="You are a careful agent.")
    >>> history = [{"role": "user", "content": "Read the files."}]
    >>> session.fit(history) == history, session.plan.stage
    (True, 'none')
    >>> session.record({"usage": {"input_tokens": 1_730, "output_tokens": 12}})
    1730
    >>> history += [{"role": "assistant", "content": "Which files?"}, {"role": "user", "content": "All."}]
    >>> _ = session.fit(history); session.plan.confirmed, session.plan.tokens_after - 1_730 < 20
    (1730, True)
    """

    def __init__(self, budget: int, *, system: Any = None, tools: Any = None,
                 dialect: Dialect | None = None, window: int | None = None, **options: Any) -> None:
        if window is not None:
            options["window"] = window
        self.options = FitOptions(budget=budget, **options)
        self._fixed = _Fixed(system, tools)
        told = dialect or self._fixed.dialect
        self.dialect: Dialect = told or FALLBACK_DIALECT
        self._dialect_known = told is not None
        #: The plan of the last request fitted (stage, tokens before and after, what was cleared).
        self.plan: Plan | None = None
        self._items: list = []  # the caller's objects seen, in order
        self._requests: list[RequestDict] = []  # ... as request JSON
        self._messages: list[Message] = []  # ... read into the transcript model
        self._walk: _Walk | None = None
        #: The sizes the provider reported for this conversation's requests (`record`).
        self._anchoring = Anchoring()
        #: The request the last `fit` produced (what `record` anchors by default).
        self.sent: SentRequest | None = None

    def fit(self, history: Sequence[Any], *, usage: Any = None) -> list:
        """The messages to send now for `history` (the loop's whole history, grown since the
        last call or edited): the same kinds of objects, the unchanged ones the very same.

        `usage`: what the provider reported for the request that got the last reply in
        `history` (as `record` takes it), when `record` was not called after that request."""
        history = history if isinstance(history, list) else list(history)
        seen = self._seen(history)
        if seen < len(self._items):
            self._forget(seen)
        self._read(history[seen:])
        lead = _leading_system(self._messages)
        if lead == len(self._messages):
            return list(history)  # no conversation yet: nothing to fit
        if usage is not None:
            self._record_before_last_reply(usage, lead)
        walk = self._walk_for(lead)
        self.plan, sent = walk.step(self._messages)
        self.sent = walk.sent()
        if self.plan.cannot_fit:
            raise too_long(self.plan)
        return self._checked(*self._output(sent))

    def record(self, response: Any, *, sent: SentRequest | None = None) -> int | None:
        """Anchor the next `fit` on the size the provider reported for the request the last
        `fit` produced (or `sent`, one of `session.sent`): the SDK's reply (an Anthropic
        `Message`, an OpenAI `ChatCompletion` or Responses `Response`, a LangChain `AIMessage`),
        a stream's event that carries it, or the usage alone, as an object or a dict.

        Returns the reported prompt size, or None when the history was edited since that
        request so that it is no longer what is sent (nothing is anchored then)."""
        reported = (response if isinstance(response, Reported) else
                    reported_prompt(response if isinstance(response, dict) else plain_json(response)))
        if reported is None:
            raise ValueError(f"{type(response).__name__} reports no prompt size: pass the provider's reply "
                             "(or its `usage`), as returned once the request is complete")
        sent = sent or self.sent
        if sent is None:
            raise ValueError("record() anchors the request that fit() produced: call fit() first")
        walk = sent.walk
        anchor = Anchor(reported.prompt, sent.messages, sent.estimated, walk.digest(walk.body[:sent.messages]))
        current = self._walk
        if current is not None and current is not walk and not current.holds(anchor, self._messages):
            return None
        self._anchoring.add(anchor)
        return reported.prompt

    def _record_before_last_reply(self, usage: Any, lead: int) -> None:
        """`fit(..., usage=)`: anchor the request made of the history before its last reply."""
        reply = next((i for i in range(len(self._messages) - 1, lead - 1, -1)
                      if self._messages[i].role is Role.ASSISTANT), None)
        if reply is None:
            raise ValueError("usage= is the size of the request that got the last reply, and these messages "
                             "hold no reply: give it to session.record() once that request is answered")
        counted = reply - lead
        sent = self.sent
        if sent is None or sent.messages != counted or sent.walk is not self._walk:
            walk = self._walk_for(lead)
            if len(walk.body) > counted:  # walked past that request already: walk again up to it
                self._walk = None
                walk = self._walk_for(lead)
            walk.step(self._messages[:reply])
            sent = walk.sent()
        self.record(usage, sent=sent)

    def _walk_for(self, lead: int) -> _Walk:
        """The walk of the history after `lead` system messages, started again when it must be;
        the provider's counts carry over while the prefix they counted is what is sent."""
        if self._walk is None or self._walk.lead != lead:
            walk = _Walk(self.options, self._fixed.messages(self._messages[:lead]), self.dialect, lead)
            self._anchoring = self._anchoring.restarted(lambda anchor: walk.holds(anchor, self._messages))
            walk.fitter.anchoring = self._anchoring
            self._walk = walk
        return self._walk

    # --- the history seen so far ----------------------------------------------------------------

    def _seen(self, history: list) -> int:
        """How many of the messages seen before start `history` unchanged."""
        items = self._items
        if len(history) >= len(items) and all(map(operator.is_, history, items)):
            return len(items)
        seen = 0
        for old, new in zip(items, history):
            if old is not new and old != new:
                break
            seen += 1
        return seen

    def _forget(self, keep: int) -> None:
        """Keep the first `keep` messages seen (and their estimates); the walk starts over."""
        del self._items[keep:], self._requests[keep:], self._messages[keep:]
        self._walk = None

    def _read(self, items: Iterable[Any]) -> None:
        for item in items:
            request = as_request_dict(item)
            if request.dialect is not None and not self._dialect_known:
                self._dialect_known = True
                if request.dialect != self.dialect:  # what was read so far is read again
                    self.dialect = request.dialect
                    self._messages[:] = [_parse(r, i, self.dialect) for i, r in enumerate(self._requests)]
                    self._walk = None
            self._items.append(item)
            self._requests.append(request)
            self._messages.append(_parse(request, len(self._messages), self.dialect))

    # --- the answer ---------------------------------------------------------------------------

    def _output(self, sent: tuple[Message, ...]) -> tuple[list, list[dict], list[Checked]]:
        """The caller's objects for the messages sent, their request JSON and their checks."""
        lead, plan, messages, dialect = self._walk.lead, self.plan, self._messages, self.dialect
        items, requests = self._items, self._requests
        out, values = items[:lead], [r.value for r in requests[:lead]]
        checks = [_check(messages[i], requests[i].value, dialect) for i in range(lead)]
        origins = plan.sent()
        if len(origins) == len(sent) + 1:  # Anthropic: the first kept user message was merged into the first
            del origins[plan.first + 1]
        for index, message in zip(origins, sent):
            position = lead + index
            if message is messages[position]:
                item, value = items[position], requests[position].value
            else:
                item, value = _changed(items[position], message)
            out.append(item)
            values.append(value)
            checks.append(_check(message, value, dialect))
        return out, values, checks

    def _checked(self, out: list, values: list[dict], checks: list[Checked]) -> list:
        """Every request leaves valid (DESIGN §8), or the caller hears why. Each message is
        checked once (the check is kept with it); each request pays only for the sequence."""
        problems = scan(checks, self.dialect) + self._fixed.problems(checks, self.dialect)
        if not problems:
            return out
        given = validate_request({"messages": [r.value for r in self._requests]}, self.dialect)
        if given:
            raise BadInput("messages", None, f"{given[0]}: the history is not a valid {self.dialect} "
                                             "request (answer every tool call before fitting)")
        raise InvalidRequest("messages", self.dialect, problems[0])


def _check(message: Message, value: dict, dialect: Dialect) -> Checked:
    """The checks of one message on its own, made once and kept with it."""
    key = memo_key(dialect)
    checked = message.memo.get(key)
    if checked is None:
        checked = message.memo[key] = check_message(value, dialect)
    return checked


def _changed(original: Any, message: Message) -> tuple[Any, dict]:
    """The copy of `original` that ctxfit changed into `message` (made once per change: the
    changed message is kept by the payload module, and the copy on it)."""
    made = message.memo.get("sdk_copy")
    if made is None or made[0] is not original:
        value = orjson.loads(message.raw)
        made = message.memo["sdk_copy"] = (original, copy_with(original, value), value)
    return made[1], made[2]


class _Walk:
    """The one place the facade drives the core's fitting: the forward walk of one history and
    the messages each request sends. (A seam: the Fitter's insides may be reorganised.)"""

    def __init__(self, options: FitOptions, fixed: tuple[tuple[Message, ...], Message | None],
                 dialect: Dialect, lead: int) -> None:
        system, tools = fixed
        self.transcript = Transcript("<messages>", dialect, dialect, (), system=system, tools=tools)
        self.fitter = Fitter(options, self.transcript.fixed, dialect=dialect)
        self.lead = lead  # leading system messages: sent as they are, counted as fixed
        self.body: list[Message] = []  # the history after them, grown in place

    def step(self, messages: list[Message]) -> tuple[Plan, tuple[Message, ...]]:
        """The plan and the messages sent for the history `messages` (the lead included)."""
        self.body.extend(messages[self.lead + len(self.body):])
        plan = self.fitter.update(self.body)
        if plan.cannot_fit:
            return plan, ()
        return plan, sent_messages(replace(self.transcript, messages=tuple(self.body)), plan)

    def sent(self) -> SentRequest:
        """The request the last `step` planned, as an anchor will compare with it."""
        return SentRequest(len(self.body), self.fitter.planned_estimate, self)

    def digest(self, body: Sequence[Message]) -> bytes:
        """What an anchor on a request holding `body` compares (`core.anchor.prefix_digest`)."""
        return prefix_digest(self.transcript.fixed, body)

    def holds(self, anchor: Anchor, messages: list[Message]) -> bool:
        """Whether the history `messages` (the lead included) still starts with the prefix
        `anchor` counted, under this walk's system prompt and tools."""
        end = self.lead + anchor.messages
        return end <= len(messages) and self.digest(messages[self.lead:end]) == anchor.digest


class _Fixed:
    """The system prompt and tool definitions given to a session, as JSON and as messages."""

    def __init__(self, system: Any, tools: Any) -> None:
        self.system = None if system is None else plain_json(system)
        self.tools = None if tools is None else plain_json(tools)
        self.dialect = _dialect_of_tools(self.tools)
        self._problems: dict[str, tuple[list[str], int]] = {}

    def problems(self, checks: list[Checked], dialect: Dialect) -> list[str]:
        """What the validator finds in the system prompt and tools, and in the request's
        `cache_control` breakpoints as a whole (Anthropic)."""
        if dialect != "anthropic":
            return []
        if dialect not in self._problems:
            alone = validate_request({"system": self.system, "tools": self.tools,
                                      "messages": [{"role": "user", "content": "-"}]}, dialect)
            marked = _breakpoints(self.system) + _breakpoints(self.tools)
            self._problems[dialect] = ([p for p in alone if "cache_control" not in p], marked)
        problems, breakpoints = self._problems[dialect]
        breakpoints += sum(c.breakpoints for c in checks)
        if breakpoints > MAX_BREAKPOINTS:
            return problems + [f"{breakpoints} cache_control breakpoints; at most {MAX_BREAKPOINTS} are allowed"]
        return problems

    def messages(self, lead: Sequence[Message]) -> tuple[tuple[Message, ...], Message | None]:
        """(system messages, tools message): the given system prompt, then OpenAI's leading
        system messages `lead`."""
        system = tuple(lead)
        if self.system is not None:
            raw = dumps({"role": "system", "content": self.system})
            system = (anthropic.system_message(self.system, raw, Where("system", 0)),) + system
        tools = None
        if self.tools is not None:
            tools = Message(Role.TOOLS, (Part(PartKind.TEXT, json_text(self.tools)),), dumps(self.tools))
        return system, tools


def too_long(plan: Plan) -> CannotFit:
    """DESIGN §4's message, with the figures: the conversation cannot be sent at all."""
    return CannotFit(
        f"{TOO_LONG} (the smallest request — system prompt, first message and newest round — is "
        f"{plan.tokens_after:,} tokens; the model's window is {plan.window:,})",
        smallest=plan.tokens_after, window=plan.window)


def count(messages_or_text: Any, *, counter: Counter | str = SEED, system: Any = None,
          tools: Any = None, dialect: Dialect | None = None, usage: Any = None) -> int:
    """Estimated tokens of a text, or of messages with the system prompt and tools they carry.

    `counter` is a `Counter` (e.g. `ctxfit_cli.counters.tokenizers.get_tokenizer("cl100k")`) or
    the name of a calibrated profile ("seed", "cl100k", "o200k", "tekken", "qwen", "safe") or
    a profile .json file. `usage`: what the provider reported for the request that got the last
    reply in the messages (as `Session.record` takes it); the count is then that size plus the
    estimate of the messages from that reply on (DESIGN §11).

    >>> count("Привет, мир"), count([{"role": "user", "content": "Привет, мир"}])
    (6, 10)
    >>> count([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}],
    ...       usage={"input_tokens": 14})
    20
    """
    counter = _counter(counter)
    if isinstance(messages_or_text, str):
        return counter.tokens(counter.measure(messages_or_text))
    fixed = _Fixed(system, tools)
    requests = [as_request_dict(item) for item in messages_or_text]
    dialect = (dialect or next((r.dialect for r in requests if r.dialect), None)
               or fixed.dialect or FALLBACK_DIALECT)
    messages = [_parse(r, i, dialect) for i, r in enumerate(requests)]
    system_messages, tools_message = fixed.messages(())
    sent = [*system_messages, *((tools_message,) if tools_message else ()), *messages]
    if usage is None:
        return total_tokens(sent, counter)
    reported = reported_prompt(usage if isinstance(usage, dict) else plain_json(usage))
    reply = next((i for i in range(len(sent) - 1, -1, -1) if sent[i].role is Role.ASSISTANT), None)
    if reported is None or reply is None:
        raise ValueError("usage= is the size the provider reported for the request that got the last reply: "
                         + ("it reports no prompt size" if reported is None else "these messages hold no reply"))
    return reported.prompt + total_tokens(sent[reply:], counter)


def _parse(request: RequestDict, index: int, dialect: Dialect) -> Message:
    return PARSERS[dialect](request.value, request.raw, Where(f"messages[{index}]", 0))


def _counter(counter: Counter | str) -> Counter:
    if not isinstance(counter, str):
        return counter
    if counter == "seed":
        return SEED
    from .counters.profiles import load_profile
    return load_profile(counter)


def _breakpoints(value: Any) -> int:
    """`cache_control` markers on the blocks of a system prompt or the tool definitions."""
    if not isinstance(value, list):
        return 0
    return sum(isinstance(v, dict) and "cache_control" in v for v in value)


def _leading_system(messages: list[Message]) -> int:
    lead = 0
    while lead < len(messages) and messages[lead].role is Role.SYSTEM:
        lead += 1
    return lead


def _dialect_of_tools(tools: Any) -> Dialect | None:
    """Anthropic's tool definitions have an `input_schema`, OpenAI's are `{"type": "function"}`."""
    if isinstance(tools, list) and tools and isinstance(tools[0], dict):
        if "input_schema" in tools[0]:
            return "anthropic"
        if tools[0].get("type") == "function":
            return "openai"
    return None
