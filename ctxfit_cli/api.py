"""The library facade: `fit` and `Session`, over what agent loops already hold (`count`:
`counting.py`).

Messages go in as the loop keeps them — dicts, the Anthropic, OpenAI and google-genai SDKs' own
objects, LangChain messages — and come back the same way, ready for `client.messages.create(...)`,
`client.chat.completions.create(...)` or `client.models.generate_content(contents=...)`: the messages
ctxfit leaves alone are the very objects given, the ones it changes (a cleared tool result, the note
on the first message) are new copies. The caller's list and objects are never changed.

>>> history = [{"role": "user", "content": "Summarise the report."}]
>>> fit(history, budget=1000)[0] is history[0]
True
"""

from __future__ import annotations

import bisect
import operator
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from .answer import Answer, History
from .core.anchor import Anchor, Anchoring
from .core.fitting import FitOptions
from .core.model import Dialect, Message, Role
from .core.notes import TOO_LONG
from .core.plan import Plan
from .core.repair_steps import RepairedHistory
from .core.reported import Reported, reported_prompt
from .core.validate import Checked, validate_request
from .core.validate_steps import ScanSteps
from .counting import as_counter
from .errors import BadInput, CannotFit, InvalidRequest
from .formats import responses
from .formats.payload import merged_position
from .history import (
    FALLBACK_DIALECT,
    Fixed,
    SentRequest,
    Walk,
    by_index,
    leading_system,
    messages_of,
    parse_item,
    parse_span,
    repair_writer,
    request_of,
)
from .sdk import RequestDict, as_request_dict, plain_json


def fit(
    messages: Sequence[Any],
    budget: int,
    *,
    system: Any = None,
    tools: Any = None,
    dialect: Dialect | None = None,
    window: int | None = None,
    usage: Any = None,
    **options: Any,
) -> list:
    """The messages to send so that the request fits `budget` tokens (DESIGN §4).

    `messages`: dicts, SDK objects or LangChain messages (OpenAI's leading system messages
    included; Gemini's `contents`), or the `input` items of the Responses API. `system` and
    `tools` are what the request also carries (Anthropic's `system` parameter, Gemini's
    `system_instruction` or the Responses `instructions`, the tool definitions): they are always
    sent, so they are counted. `dialect` ("anthropic", "openai", "gemini" or "responses") is
    detected when not given. `window` is the model's hard limit; `usage` the size the provider
    reported for the request that got the last reply in `messages` (the reply or its usage: see
    `Session.record`), so that the request is sized from it (DESIGN §11); other options are
    `FitOptions`' (`batch_size`, `lowwater`, `counter`: a `Counter` or a profile's name, ...).
    Raises `CannotFit` when even the smallest request is over the window, `BadInput` for data no
    JSON reader takes (a lone surrogate, an integer past 64 bits, nesting past 254 levels),
    `TypeError` for a budget or window that is no whole number of tokens.

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


class Session:
    """Fitting before every request of one agent loop, paying only for what is new.

    `session.fit(history)` takes the loop's own growing list each time. The part seen before is
    recognised by identity, else by its JSON bytes (a removed, inserted or replaced message is noticed
    and the walk starts over), so a step costs about what the new messages cost. The ratchets of
    DESIGN §4 hold across steps: the cleared results only grow and the kept start only moves
    forward. A message is not expected to change in place once fitted: replace it to edit it.

    After each request, `session.record(response)` gives it the size the provider reported
    (DESIGN §11): the next `fit` is sized from that count plus the estimate of what changed
    since, not from the estimate of the whole request.

    A session may be shared between threads: its calls run one at a time (a lock), each on the
    history it was given. `plan` is then the last call's, whichever thread made it; histories
    that differ make each call start its walk over, so give each conversation its own session.

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

    def __init__(
        self,
        budget: int,
        *,
        system: Any = None,
        tools: Any = None,
        dialect: Dialect | None = None,
        window: int | None = None,
        **options: Any,
    ) -> None:
        if window is not None:
            options["window"] = window
        if "counter" in options:  # a profile's name, as `count` takes it
            options["counter"] = as_counter(options["counter"])
        self.options = FitOptions(budget=budget, **options)
        self._fixed = Fixed(system, tools)
        told = dialect or self._fixed.dialect
        self.dialect: Dialect = told or FALLBACK_DIALECT
        self._dialect_known = told is not None
        self._dialect_given = dialect is not None
        #: The plan of the last request fitted (stage, tokens before and after, what was cleared).
        self.plan: Plan | None = None
        self._items: list = []  # the caller's objects seen, in order
        self._requests: list[RequestDict] = []  # ... as request JSON
        self._messages: list[Message] = []  # ... read into the transcript model
        #: The item each message starts at: one item each, but for a Responses reply (the
        #: model's consecutive items are one message, `formats.responses.group_spans`).
        self._starts: list[int] = []
        self._walk: Walk | None = None
        #: The last repair of the history, so that a step repairs only its end again.
        self._repaired: RepairedHistory | None = None
        #: What the last request gave back, so that a step makes only what changed.
        self._answer = Answer()
        self._scan = ScanSteps()
        #: What the last `fit` repaired so that the provider accepts the request, as the CLI
        #: reports it (DESIGN §13): blank text dropped, turns combined, an open call answered, ...
        self.repairs: list[str] = []
        self._lock = threading.RLock()  # (record() is also called from within fit())
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
        with self._lock:  # the state below is one history's: one call at a time
            return self._fit(history, usage)

    def _fit(self, history: list, usage: Any) -> list:
        seen = self._seen(history)
        if seen < len(self._items):
            seen = self._forget(seen)
        self._read(history[seen:])
        lead = leading_system(self._messages)
        if lead == len(self._messages):
            return list(history)  # no conversation yet: nothing to fit
        repairs: list[str] = []
        writer = repair_writer(self.dialect)
        if self._repaired is None or self._repaired.writer is not writer:
            self._repaired = RepairedHistory(writer, "messages")
        body = self._repaired.repair(self._messages[lead:], repairs)
        # Each message was read with its 1-based position as its line: name it as the caller does.
        self.repairs = [by_index(line) for line in repairs]
        if usage is not None:
            self._record_before_last_reply(usage, lead, body)
        walk = self._walk_for(lead, body)
        self.plan, sent = walk.step(body)
        self.sent = walk.sent()
        if self.plan.cannot_fit:
            raise too_long(self.plan)
        return self._checked(*self._output(sent))

    def growth_weight(self) -> float:
        """The most one estimated token of messages added before the next `fit` can weigh in
        its count, whatever one reply reports meanwhile (`core.anchor.GrowthRatio.next_high`:
        the proxy's fast path bounds a request with it, `serve/bypass.py`)."""
        return max(1.0, self._anchoring.ratio.next_high())

    def record(self, response: Any, *, sent: SentRequest | None = None) -> int | None:
        """Anchor the next `fit` on the size the provider reported for the request the last
        `fit` produced (or `sent`, one of `session.sent`): the SDK's reply (an Anthropic
        `Message`, an OpenAI `ChatCompletion` or Responses `Response`, a LangChain `AIMessage`),
        a stream's event that carries it, or the usage alone, as an object or a dict.

        Returns the reported prompt size, or None when the history was edited since that
        request so that it is no longer what is sent (nothing is anchored then)."""
        reported = (
            response
            if isinstance(response, Reported)
            else reported_prompt(response if isinstance(response, dict) else plain_json(response))
        )
        if reported is None:
            raise ValueError(
                f"{type(response).__name__} reports no prompt size: pass the provider's reply "
                "(or its `usage`), as returned once the request is complete"
            )
        sent = sent or self.sent
        if sent is None:
            raise ValueError("record() anchors the request that fit() produced: call fit() first")
        with self._lock:
            walk = sent.walk
            anchor = Anchor(reported.prompt, sent.messages, sent.estimated, walk.digest(walk.body[: sent.messages]))
            current = self._walk
            if current is not None and current is not walk and not current.holds(anchor, current.body):
                return None
            self._anchoring.add(anchor)
            return reported.prompt

    def _record_before_last_reply(self, usage: Any, lead: int, body: list[Message]) -> None:
        """`fit(..., usage=)`: anchor the request made of the history `body` (after the lead,
        as repaired) before its last reply."""
        reply = next((i for i in range(len(body) - 1, -1, -1) if body[i].role is Role.ASSISTANT), None)
        if reply is None:
            raise ValueError(
                "usage= is the size of the request that got the last reply, and these messages "
                "hold no reply: give it to session.record() once that request is answered"
            )
        sent = self.sent
        if sent is None or sent.messages != reply or sent.walk is not self._walk:
            walk = self._walk_for(lead, body)
            if len(walk.body) > reply:  # walked past that request already: walk again up to it
                self._walk = None
                walk = self._walk_for(lead, body)
            walk.step(body[:reply])
            sent = walk.sent()
        self.record(usage, sent=sent)

    def _walk_for(self, lead: int, body: list[Message]) -> Walk:
        """The walk of the history `body` after `lead` system messages, started again when it
        must be (not for a message that changed in nothing the provider counts or the fitter
        sees: `Walk.adopts`); the provider's counts carry over while the prefix they counted is
        what is sent."""
        walk = self._walk
        if walk is None or walk.lead != lead or not (walk.leads_to(body) or walk.adopts(body)):
            fresh = Walk(self.options, self._fixed.messages(self._messages[:lead], self.dialect), self.dialect, lead)
            self._anchoring = self._anchoring.restarted(lambda anchor: fresh.holds(anchor, body))
            fresh.fitter.anchoring = self._anchoring
            self._walk = walk = fresh
        return walk

    # --- the history seen so far ----------------------------------------------------------------

    def _seen(self, history: list) -> int:
        """How many of the messages seen before start `history` unchanged: the very objects, or
        new ones of the same JSON byte for byte (never Python's equality: `1` is not `true` nor
        `1.0`, and key order counts), which then take the old ones' place (what is given back
        for a message left alone is the caller's object of this call)."""
        items = self._items
        if len(history) >= len(items) and all(map(operator.is_, history, items)):
            return len(items)
        seen = 0
        for old, new in zip(items, history):
            if old is not new:
                same = self._same_json(seen, new)
                if same is None:
                    break
                items[seen], self._requests[seen] = new, same
                self._answer = Answer()  # (it keeps the objects it gave back last)
            seen += 1
        return seen

    def _same_json(self, index: int, item: Any) -> RequestDict | None:
        """`item` as request JSON if its bytes are those of the item seen at `index`, else None."""
        try:
            fresh = as_request_dict(item, f"messages[{index}]")
        except (BadInput, TypeError, ValueError):
            return None  # (read again, and reported, as a new item)
        return fresh if fresh.raw == self._requests[index].raw else None

    def _forget(self, keep: int) -> int:
        """Keep the messages wholly within the first `keep` items seen (and their estimates);
        the walk goes on only if what is read again is what it walked (`_walk_for`). How many
        items are kept (fewer when a reply was cut in two)."""
        kept = bisect.bisect_left(self._starts, keep)
        if kept and self._end(kept - 1) > keep:
            kept -= 1
            keep = self._starts[kept]
        del self._items[keep:], self._requests[keep:], self._messages[kept:], self._starts[kept:]
        return keep

    def _read(self, items: Iterable[Any]) -> None:
        for item in items:
            request = as_request_dict(item, f"messages[{len(self._items)}]")
            self._items.append(item)
            self._requests.append(request)
            if request.dialect is not None and self._learns(request.dialect):
                self.dialect = request.dialect  # what was read so far is read again
                self._messages[:], self._starts[:] = messages_of(self._requests, self.dialect)
                self._walk = None
                continue
            index = len(self._requests) - 1
            if (
                self.dialect == "responses"
                and index
                and responses.joins_previous(self._requests[index - 1].value, request.value)
            ):
                start = self._starts[-1]  # the next item of the reply read last
                if self._walk is not None and self._walk.lead + len(self._walk.body) >= len(self._messages):
                    self._walk = None  # the walk has seen that reply: it starts over
                self._messages[-1] = parse_span(self._requests, start, index + 1, self.dialect)
                continue
            self._starts.append(index)
            previous = self._messages[-1] if self._messages else None
            self._messages.append(parse_item(request, index, self.dialect, previous))

    def _learns(self, dialect: Dialect) -> bool:
        """Whether an item's own dialect changes the one assumed so far. The first item that
        tells decides; a Responses item still can after that, unless the caller named one (a
        developer message, the first item Codex sends, reads as Chat Completions too)."""
        if not self._dialect_known:
            self._dialect_known = True
            return dialect != self.dialect
        return dialect == "responses" != self.dialect and not self._dialect_given

    def _end(self, message: int) -> int:
        """The item after the last one of a message."""
        return self._starts[message + 1] if message + 1 < len(self._starts) else len(self._items)

    # --- the answer ---------------------------------------------------------------------------

    def _output(self, sent: tuple[Message, ...]) -> tuple[list, list[dict], list[Checked]]:
        """The caller's objects for the messages sent, their request JSON and their checks."""
        assert self._walk is not None and self.plan is not None  # (the fit that asks has set both)
        origins = self.plan.sent()
        if len(origins) == len(sent) + 1:  # Anthropic: the first kept user message was merged into the first
            first = self.plan.first + 1
            del origins[first + merged_position(self.plan, origins[first:])]
        history = History(self._items, self._requests, self._starts, self._messages, self.dialect)
        return self._answer.make(history, self._walk.lead, origins, sent, self._walk.body)

    def _checked(self, out: list, values: list[dict], checks: list[Checked]) -> list:
        """Every request leaves valid (DESIGN §8), or the caller hears why. Each message is
        checked once (the check is kept with it); each request pays only for the sequence."""
        problems = self._scan.problems(checks, self.dialect) + self._fixed.problems(checks, self.dialect)
        if not problems:
            return out
        given = validate_request(request_of([r.value for r in self._requests], self.dialect), self.dialect)
        if given:
            raise BadInput(
                "messages",
                None,
                f"{given[0]}: the history is not a valid {self.dialect} "
                "request (answer every tool call before fitting)",
            )
        raise InvalidRequest("messages", self.dialect, problems[0])


def too_long(plan: Plan) -> CannotFit:
    """DESIGN §4's message, with the figures: the conversation cannot be sent at all."""
    return CannotFit(
        f"{TOO_LONG} (the smallest request — system prompt, first message and newest round — is "
        f"{plan.tokens_after:,} tokens; the model's window is {plan.window:,})",
        smallest=plan.tokens_after,
        window=plan.window,
    )
