"""Applying a plan: the request payload, as bytes, in the transcript's dialect.

Unchanged messages are emitted as the exact bytes they came with; a message that changes (a
cleared result, the note added to the first message) is re-serialized the one way ctxfit always
serializes. The same transcript and plan therefore always give the same bytes.

Payload shapes: OpenAI `{"messages": [...], "tools"?}` (system messages first in `messages`);
Anthropic `{"system"?, "tools"?, "messages": [...]}`; Gemini `{"systemInstruction"?, "tools"?,
"contents": [...]}` (its changed contents are written by `gemini_write`). Other fields of a request object (model,
max_tokens, ...) come first, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from ..core.costs import message_cost
from ..core.fitting import FitOptions, Fitter, Plan, has_trim_note
from ..core.model import ALTERNATING, Dialect, Message, Role, Transcript
from ..core.notes import AGENT_NOTE, CLEARED_RESULT, TRIMMED_HISTORY
from ..core.usage import log_anchoring
from ..core.validate import first_problem, validate_request
from ..counters.seed import SEED, Counter
from ..errors import BadInput, InvalidRequest, UsageProblem
from . import gemini_write, responses_payload, to_message
from .common import as_blocks, dumps
from .parallel import Outline


@dataclass(frozen=True)
class Fitted:
    """A fitted request: the plan, the payload bytes, and the payload's own estimate."""

    plan: Plan
    payload: bytes
    tokens: int  # the request's size: anchored on the log's last recorded call where it has one
    messages: tuple[Message, ...]  # the messages sent (system messages excluded)
    #: Of `tokens`, what the payload itself holds (estimated); the rest is what the agent adds
    #: that its log does not show (system prompt, tools: the unlogged part, and the anchoring).
    in_payload: int = 0
    #: The recorded size `tokens` is anchored on (0: all estimated; DESIGN §11).
    confirmed: int = 0


def fit_transcript(
    transcript: Transcript,
    options: FitOptions,
    *,
    tell_agent: bool = False,
    complete: Callable[[Transcript, Plan], Transcript] | None = None,
) -> Fitted:
    """Plan and build the request for a whole transcript.

    >>> from ctxfit_cli.formats import read_transcripts
    >>> import io
    >>> lines = b'{"role":"user","content":"Summarise the report."}\\n'
    >>> [t] = read_transcripts("x", io.BytesIO(lines))
    >>> fit_transcript(t.materialize(), FitOptions(budget=1000)).payload
    b'{"messages":[{"role":"user","content":"Summarise the report."}]}'

    `complete`: a transcript held in outline, with the messages a plan sends read in full
    (`fleet.log_outline.LogOutline.complete`).
    """
    transcript = transcript.materialize() if not isinstance(transcript.messages, tuple) else transcript
    return _fit(transcript, transcript.messages, options, tell_agent, complete)


def fit_outline(outline: Outline, options: FitOptions, *, tell_agent: bool = False) -> Fitted:
    """Plan and build the request for a big file read in outline (`parallel.read_outline`).

    The fitter walks the conversation while later pieces are still being read; then the
    messages the plan sends are read in full. Same request as `fit_transcript` (tests hold it
    to that), without holding the file.
    """
    return _fit(outline.transcript, outline.messages(), options, tell_agent, complete=outline.complete)


def _fit(
    transcript: Transcript,
    messages: Iterable[Message],
    options: FitOptions,
    tell_agent: bool,
    complete: Callable[[Transcript, Plan], Transcript] | None = None,
) -> Fitted:
    anchoring = log_anchoring(transcript, options.counter)  # the log as the agent sent it: no note
    transcript = with_log_model(transcript)
    if tell_agent:
        transcript = with_agent_note(transcript)
    fitter = Fitter(options, transcript.fixed, dialect=transcript.dialect, anchoring=anchoring)
    fitter.extend(messages)
    plan = fitter.plan()
    transcript = replace(transcript, messages=tuple(fitter.messages))
    if complete is not None:
        transcript = complete(transcript, plan)
    fitted = checked(transcript, build(transcript, plan, options.counter))
    unlogged = message_cost(transcript.unlogged, options.counter).tokens if transcript.unlogged is not None else 0
    return replace(
        fitted, tokens=fitter.anchored(fitted.tokens), in_payload=fitted.tokens - unlogged, confirmed=plan.confirmed
    )


def with_log_model(transcript: Transcript) -> Transcript:
    """A log's transcript with the model its calls name as the payload's `model` field, so the
    payload is counted as the log was (`ctxfit fit LOG | ctxfit estimate -`); unchanged when
    the input has its own or names none."""
    models = [c.model for c in transcript.calls if c.model and c.model != "<synthetic>"]
    if not models or any(name == "model" for name, _ in transcript.extra):
        return transcript
    return replace(transcript, extra=(("model", dumps(models[-1])), *transcript.extra))


def checked(transcript: Transcript, fitted: Fitted) -> Fitted:
    """The fitted request, once it passed the validator (DESIGN §8: every request ctxfit
    produces does, before it leaves).

    A request that fails is never returned: if the conversation was already invalid as read
    (a call left without its result, ...), that is `BadInput` naming its line; otherwise ctxfit
    broke it, and that is `InvalidRequest`, a bug (exit 1). A request that cannot be sent at all
    (over the window) is not written, so not checked.
    """
    if fitted.plan.cannot_fit:
        return fitted
    dialect = transcript.dialect
    problems = validate_request(orjson.loads(fitted.payload), dialect)
    if not problems:
        return fitted
    messages = tuple(transcript.messages)
    if all(m.raw for m in messages):  # a big file read in outline holds no bytes to check
        given = validate_request(orjson.loads(request_bytes(transcript, messages)), dialect)
        if given:
            index = _message_index(given[0])
            line = messages[index].line if index is not None and index < len(messages) else None
            raise BadInput(
                transcript.path, line or None, f"not a valid {dialect} request as read: {first_problem(given)}"
            )
    raise InvalidRequest(transcript.path, dialect, first_problem(problems))


def _message_index(problem: str) -> int | None:
    """The message a problem names (`messages[12]: ...`, Gemini's `contents[12]: ...`), if any."""
    for field in ("messages[", "contents["):
        if problem.startswith(field):
            number = problem[len(field) : problem.find("]")]
            return int(number) if number.isdigit() else None
    return None


def build(
    transcript: Transcript, plan: Plan, counter: Counter = SEED, *, messages: Sequence[Message] | None = None
) -> Fitted:
    """Apply a plan to its transcript (which must be materialized).

    `messages` is the history the plan was made for, when it is not the transcript's own (an
    agent loop keeps a growing list and a transcript holding only the system prompt and tools).

    >>> from ctxfit_cli.core.fitting import plan_fit
    >>> from ctxfit_cli.formats import to_message
    >>> agent = Transcript("agent", "openai", "openai", ())
    >>> history = [to_message({"role": "user", "content": "hi"}, "openai")]
    >>> plan = plan_fit(history, budget=100)
    >>> build(agent, plan, messages=history).payload
    b'{"messages":[{"role":"user","content":"hi"}]}'
    """
    if messages is not None:
        transcript = replace(transcript, messages=tuple(messages))
    sent = sent_messages(transcript, plan)
    tokens = sum(message_cost(m, counter).tokens for m in (*transcript.fixed, *sent))
    return Fitted(plan, request_bytes(transcript, sent), tokens, sent, tokens)


def sent_messages(transcript: Transcript, plan: Plan) -> tuple[Message, ...]:
    """The messages a plan sends (system prompt and tools aside), in order.

    Changed messages are made once and kept on the original message, so a replay that builds
    thousands of requests reuses them (and can compare requests by identity).
    """
    messages = transcript.messages
    assert isinstance(messages, Sequence)  # (a fitted transcript holds its messages)
    dialect = transcript.dialect
    cleared = cleared_calls(plan)
    sent = plan.sent()
    if not plan.dropped:
        return tuple(with_cleared(messages[i], cleared.get(i), dialect) for i in sent)
    head, tail = sent[: plan.first + 1], sent[plan.first + 1 :]
    out = [with_cleared(messages[i], cleared.get(i), dialect) for i in head]
    out[-1] = _with_trim_note(out[-1], dialect)
    partner = merged_position(plan, tail)
    for position, i in enumerate(tail):
        message = with_cleared(messages[i], cleared.get(i), dialect)
        if position == partner and dialect in ALTERNATING and message.role is Role.USER:
            # Merged into the first message, before the pinned messages left out around it: a
            # mid-conversation system entry follows a user turn and precedes the assistant's.
            out[plan.first] = _merge(out[plan.first], message, dialect)
        else:
            out.append(message)
    return tuple(out)


def merged_position(plan: Plan, kept: Sequence[int]) -> int:
    """Where, among the messages kept after the first one (`kept`), the one a trimmed request
    merges into the first message stands (Anthropic and Gemini, when it is a user message): the
    anchor or the kept start, after the pinned messages left out before it."""
    position = 0
    while position < len(kept) and kept[position] in plan.pinned:
        position += 1
    return position


def cleared_calls(plan: Plan) -> dict[int, str | frozenset[str]]:
    """The calls whose results each message has cleared: one call id (nearly always: a tool
    message, or a user message answering one call) or a set of them. An agent loop builds a
    request at every step with thousands of results cleared; a set per message was most of it."""
    cleared: dict[int, str | frozenset[str]] = {}
    for ref in plan.cleared:
        found = cleared.get(ref.index)
        if found is None:
            cleared[ref.index] = ref.call_id
        else:
            cleared[ref.index] = (found if isinstance(found, frozenset) else frozenset((found,))) | {ref.call_id}
    return cleared


def request_bytes(transcript: Transcript, messages: tuple[Message, ...]) -> bytes:
    """The request object: other fields first, then system, tools and messages per dialect."""
    if transcript.dialect == "responses":
        return responses_payload.request_bytes(transcript, messages)
    fields: list[tuple[str, bytes]] = list(transcript.extra)
    tools = [("tools", transcript.tools.raw)] if transcript.tools is not None else []
    if transcript.dialect == "gemini":
        fields = gemini_write.request_fields(transcript, messages)
    elif transcript.dialect == "openai":
        fields.append(("messages", _array(*(m.raw for m in transcript.system), *(m.raw for m in messages))))
        fields += tools
    else:
        if transcript.system:
            fields.append(("system", _system_value(transcript.system)))
        fields += tools
        fields.append(("messages", _array(*(m.raw for m in messages))))
    return b"{" + b",".join(orjson.dumps(k) + b":" + v for k, v in fields) + b"}"


def _array(*items: bytes) -> bytes:
    return b"[" + b",".join(items) + b"]"


def _system_value(system: tuple[Message, ...]) -> bytes:
    """Anthropic's `system` field from the system message(s) read from the input."""
    contents = [orjson.loads(m.raw)["content"] for m in system]
    if len(contents) == 1:
        return dumps(contents[0])
    blocks: list[Any] = []
    for content in contents:
        blocks += [{"type": "text", "text": content}] if isinstance(content, str) else content
    return dumps(blocks)


# --- changed messages ----------------------------------------------------------------------


def _variant(message: Message, key: tuple, make) -> Message:
    """A changed copy of `message`, made once and kept in its memo."""
    variant = message.memo.get(key)
    if variant is None:
        variant = message.memo[key] = make()
    return variant


def with_cleared(message: Message, call_ids: str | frozenset[str] | None, dialect: Dialect) -> Message:
    """The message with the results of these calls replaced by the constant note (made once and
    kept in its memo, as `_variant` does; written out: it runs for every cleared message sent)."""
    if not call_ids:
        return message
    key = ("cleared", dialect, call_ids)
    variant = message.memo.get(key)
    if variant is None:
        variant = message.memo[key] = _make_cleared(message, call_ids, dialect)
    return variant


def _make_cleared(message: Message, call_ids: str | frozenset[str], dialect: Dialect) -> Message:
    if isinstance(call_ids, str):
        call_ids = frozenset((call_ids,))
    if dialect == "gemini":
        return gemini_write.cleared(message, call_ids)
    if dialect == "responses":
        return responses_payload.cleared(message, call_ids)
    value = orjson.loads(message.raw)
    if dialect == "openai":
        value["content"] = CLEARED_RESULT
    else:
        value["content"] = [
            {**block, "content": CLEARED_RESULT}
            if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") in call_ids
            else block
            for block in value["content"]
        ]
    return to_message(value, dialect)


def _with_trim_note(message: Message, dialect: Dialect) -> Message:
    if has_trim_note(message):
        return message
    return _variant(message, ("noted", dialect), lambda: _make_with_trim_note(message, dialect))


def _make_with_trim_note(message: Message, dialect: Dialect) -> Message:
    if dialect == "gemini":
        return gemini_write.with_text(message, TRIMMED_HISTORY)
    if dialect == "responses":
        return responses_payload.with_trim_note(message)
    value = orjson.loads(message.raw)
    value["content"] = as_blocks(value.get("content")) + [{"type": "text", "text": TRIMMED_HISTORY}]
    return to_message(value, dialect)


def _merge(first: Message, following: Message, dialect: Dialect) -> Message:
    """Two adjacent user messages as one (Anthropic and Gemini require alternating roles)."""
    return _variant(first, ("merged", following), lambda: _make_merged(first, following, dialect))


def _make_merged(first: Message, following: Message, dialect: Dialect) -> Message:
    if dialect == "gemini":
        return gemini_write.merged(first, following)
    value = orjson.loads(first.raw)
    value["content"] = as_blocks(value.get("content")) + as_blocks(orjson.loads(following.raw).get("content"))
    return to_message(value, "anthropic")


# --- the agent note ------------------------------------------------------------------------


def with_agent_note(transcript: Transcript) -> Transcript:
    """The transcript with DESIGN §5's note at the end of its system prompt (once).

    >>> from ctxfit_cli.formats import to_message
    >>> noted = with_agent_note(Transcript("t", "anthropic", "anthropic", (), system=(
    ...     to_message({"role": "system", "content": "Be brief."}, "anthropic"),)))
    >>> noted.system[0].parts[0].text.startswith("Be brief.\\n\\nContext management:")
    True
    """
    transcript = transcript.materialize() if not isinstance(transcript.messages, tuple) else transcript
    if any(AGENT_NOTE in part.text for m in transcript.system for part in m.parts):
        return transcript
    if transcript.dialect == "gemini":
        return replace(transcript, system=(gemini_write.system_with(transcript.system, AGENT_NOTE),))
    if transcript.dialect == "responses":
        return replace(transcript, system=responses_payload.with_agent_note(transcript))
    if not transcript.system:
        value = {"role": "system", "content": AGENT_NOTE}
        return replace(transcript, system=(to_message(value, transcript.dialect),))
    last = transcript.system[-1]
    value = orjson.loads(last.raw)
    content = value.get("content")
    if isinstance(content, str):
        value["content"] = f"{content}\n\n{AGENT_NOTE}" if content else AGENT_NOTE
    else:
        value["content"] = as_blocks(content) + [{"type": "text", "text": AGENT_NOTE}]
    noted = to_message(value, transcript.dialect)
    return replace(transcript, system=transcript.system[:-1] + (noted,))


#: The fields fitting writes; `with_fields` may not replace them.
FITTED_FIELDS = ("messages", "system", "tools", "contents", "systemInstruction", "system_instruction")


def with_fields(payload: bytes, extra: tuple[tuple[str, bytes], ...], fields: dict[str, bytes]) -> bytes:
    """The payload with top-level `fields` (name -> raw JSON) set, e.g. `model` and
    `max_tokens`, so it can be sent as it is. A field the input already had (`extra`, which
    `request_bytes` writes first) is replaced in place, new ones follow the input's own, and
    every other byte stays as it was.

    >>> with_fields(b'{"model":"a","messages":[]}', (("model", b'"a"'),), {"model": b'"b"', "max_tokens": b"8"})
    b'{"model":"b","max_tokens":8,"messages":[]}'
    """
    clash = [name for name in fields if name in FITTED_FIELDS]
    if clash:
        raise UsageProblem(f"--set cannot replace {clash[0]!r}: ctxfit writes it from the transcript")
    head = b",".join(orjson.dumps(k) + b":" + v for k, v in extra)
    assert payload.startswith(b"{" + head), "the input's other fields come first in a payload"
    rest = payload[1 + len(head) :]
    merged = dict(extra) | fields
    new_head = b",".join(orjson.dumps(k) + b":" + v for k, v in merged.items())
    if head:
        return b"{" + new_head + rest
    return b"{" + new_head + (rest if rest == b"}" else b"," + rest)
