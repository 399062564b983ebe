"""The transcript model every dialect is read into.

A `Message` is immutable: its parts, its role, and the exact JSON bytes it is sent as when
nothing about it changes. Its estimates are computed once per counter and kept in `memo`, so an
agent loop that calls ctxfit before every request pays only for the messages that are new.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, NamedTuple

Dialect = Literal["openai", "anthropic", "gemini", "responses"]
#: Dialects whose user and assistant turns alternate: where trimming leaves two user messages
#: side by side (the first message, then a kept user turn), they are sent as one.
ALTERNATING: frozenset[str] = frozenset(("anthropic", "gemini"))


class PartKind(StrEnum):
    TEXT = "text"
    THINKING = "thinking"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    IMAGE = "image"


class Role(StrEnum):
    SYSTEM = "system"  # the system prompt (OpenAI system/developer messages, Anthropic `system`)
    TOOLS = "tools"  # the tool definitions, counted as one unit
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"  # an OpenAI tool-result message


class Part(NamedTuple):
    """One countable piece of a message (immutable; a NamedTuple because millions are made).

    `text` is exactly what is counted: the text of a text block, the serialized arguments of a
    tool call, the text content of a tool result. `tool` and `call_id` are counted too (they are
    sent); `image_tokens` holds the estimate of any image or document inside the part.
    """

    kind: PartKind
    text: str = ""
    tool: str = ""
    call_id: str = ""
    image_tokens: int = 0
    is_error: bool = False


# Enum members as plain names: in Python 3.11 `Role.USER` is a slow attribute lookup.
_USER, _TOOL_CALL, _TOOL_RESULT = Role.USER, PartKind.TOOL_CALL, PartKind.TOOL_RESULT


@dataclass(frozen=True, slots=True, eq=False)
class Message:
    role: Role
    parts: tuple[Part, ...]
    #: The JSON this message is sent as when unchanged (original bytes where the input had them).
    raw: bytes
    #: 1-based line of the input where the message starts (0 when it was made by ctxfit).
    line: int = 0
    #: Per-counter cached estimates; never part of equality or output.
    memo: dict[object, Any] = field(default_factory=dict, repr=False, compare=False)
    #: What reading changed in the message so that its provider accepts it (a blank text block
    #: dropped, a key the API refuses removed): `core.repair` reports it with the file and line.
    repaired: tuple[str, ...] = ()
    #: A message (role, item) ctxfit does not know, or a system entry inside the conversation
    #: (Anthropic's mid-conversation `system`): kept in place byte for byte, counted, never
    #: cleared, never left out by trimming (DESIGN §14). Never a turn or round start.
    pinned: bool = False

    @property
    def call_ids(self) -> tuple[str, ...]:
        return tuple([p.call_id for p in self.parts if p.kind is _TOOL_CALL])  # asked of every message read

    @property
    def result_ids(self) -> tuple[str, ...]:
        return tuple([p.call_id for p in self.parts if p.kind is _TOOL_RESULT])

    @property
    def is_human_turn(self) -> bool:
        """A user message carrying human input (text, images), not only tool results."""
        if self.role is not _USER:
            return False
        for part in self.parts:  # a loop, not any(): asked of every message a fitter reads
            if part.kind is not _TOOL_RESULT:
                return True
        return not self.parts


#: The `Message.memo` key that marks an assistant message no model call made: the agent wrote it
#: into the history it sends (aider's "Ok." after it commits an edit, a SWE-agent demonstration),
#: so no request was made before it (`made_by_a_call`).
WRITTEN_BY_AGENT = "written_by_agent"


def made_by_a_call(message: Message) -> bool:
    """Whether a model call made this message: a request was made before it (an assistant
    message, unless its agent wrote it: `WRITTEN_BY_AGENT`)."""
    return message.role is Role.ASSISTANT and WRITTEN_BY_AGENT not in message.memo


def replays_a_call(transcript: Transcript, index: int, message: Message) -> bool:
    """Whether a replay counts a model call before `message`, the transcript's message `index`:
    a call made it, it is not the first message, and it comes after the given history. Call
    *k* of a replay, and of the usage a log recorded, is the *k*-th such message."""
    return bool(index) and index >= transcript.given and made_by_a_call(message)


class RecordedCall(NamedTuple):
    """One model call as the log itself recorded it: the ground truth estimates are held to.

    Filled by readers of logs that record usage (Claude Code `message.usage`, Codex
    `token_count`, OpenHands `token_usages`); empty for plain message files."""

    #: Index in `Transcript.messages` of the assistant message this call produced.
    message: int
    #: The provider's id of the reply (Claude Code `message.id`), or "".
    id: str = ""
    #: The model as logged ("" when the log does not say).
    model: str = ""
    #: The model's own count of the whole prompt of this call (for Anthropic: input +
    #: cache creation + cache read tokens), or None when the log does not record it.
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    #: The model's context window as the log recorded it (Codex `model_context_window`), or None.
    window: int | None = None
    #: Reasoning tokens the call produced (Codex `reasoning_output_tokens`), or None: its
    #: reasoning is sent back encrypted within a turn, so it grows the next prompt by about this.
    reasoning_tokens: int | None = None


@dataclass(slots=True)
class Transcript:
    """A conversation as read from one input (a file, a line of requests, or stdin).

    `messages` may be a lazy iterator while streaming (`estimate` never holds a whole file);
    `materialize` turns it into a tuple and splits the system prompt off.
    """

    path: str
    format: str  # the input format: openai, anthropic, claude-code, codex, request
    dialect: Dialect  # the request dialect it is sent as
    messages: Iterable[Message]
    system: tuple[Message, ...] = ()
    tools: Message | None = None
    #: Other top-level fields of a request object (model, max_tokens, ...), kept as raw JSON.
    extra: tuple[tuple[str, bytes], ...] = ()
    line: int = 1
    #: The model calls the log recorded, in order; filled while `messages` is read.
    calls: list[RecordedCall] = field(default_factory=list)
    #: What the reader repaired to make a valid request (one line each, for stderr), filled
    #: while `messages` is read: an open call answered, an orphan result dropped, ...
    repairs: list[str] = field(default_factory=list)
    #: The part of every prompt the log does not hold (system prompt, tools, injected context
    #: of an agent whose log records usage), as one stand-in message that is counted but never
    #: sent (`core.usage.with_unlogged`); None when not known or not counted.
    unlogged: Message | None = None
    #: How many leading messages were given as the conversation's history rather than made by
    #: its model calls (a Codex compaction's replacement history): no request is made before
    #: an assistant message among them.
    given: int = 0
    #: Why the log looks still being written (its last line is cut, its last reply is not
    #: finished, its last calls have no results yet); empty for a finished log. Filled while
    #: `messages` is read, like `repairs`.
    open_end: list[str] = field(default_factory=list)
    #: The models the log has named so far, filled while `messages` is read (a Codex rollout
    #: records its calls only once read to the end): what a streamed estimate picks its counter
    #: by before the calls are known (`fleet.log_estimate`).
    named_models: list[str] = field(default_factory=list)

    @property
    def being_written(self) -> bool:
        """Whether the log is still being written (read up to its last complete record)."""
        return bool(self.open_end)

    def materialize(self) -> Transcript:
        """Hold every message, with leading system messages moved to `system`."""
        messages = tuple(self.messages)
        split = 0
        while split < len(messages) and messages[split].role is Role.SYSTEM and not messages[split].pinned:
            split += 1
        return Transcript(
            path=self.path,
            format=self.format,
            dialect=self.dialect,
            messages=messages[split:],
            system=self.system + messages[:split],
            tools=self.tools,
            extra=self.extra,
            line=self.line,
            # Calls point at messages: moving the leading system messages out shifts them.
            calls=[c._replace(message=c.message - split) for c in self.calls] if split else self.calls,
            repairs=self.repairs,
            unlogged=self.unlogged,
            given=max(self.given - split, 0),
            open_end=self.open_end,
        )

    @property
    def fixed(self) -> tuple[Message, ...]:
        """What every request carries whatever is trimmed: system prompt and tool definitions
        (and the unlogged part, counted though not in the log)."""
        return (
            self.system
            + ((self.tools,) if self.tools is not None else ())
            + ((self.unlogged,) if self.unlogged is not None else ())
        )
