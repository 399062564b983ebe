"""Is a request valid for its dialect? One function lists every problem it finds.

What the providers reject that can be checked offline (DESIGN §8), each with the error the
provider answers:

Anthropic Messages
- the first message is not the assistant's; user and assistant alternate. A `system` entry
  inside `messages` (the `mid-conversation-system` beta Claude Code 2.1 sends) or a role ctxfit
  does not know is sent as it came: any role may follow it, calls and results pair across it
  (DESIGN §14: what is not known is not refused);
- a message has only `role` and `content` (`messages.0.ts: Extra inputs are not permitted`);
- every message has content (`all messages must have non-empty content except for the optional
  final assistant message`); no text block is empty (`text content blocks must be non-empty`), in
  messages, tool results and `system`; no text block of a message is only whitespace (`text
  content blocks must contain non-whitespace text`: Claude Code 2.1 writes a `"\n\n"` block
  before a reply's other blocks and the API refused a request carrying one,
  anthropics/claude-code#23440);
- `tool_use` blocks only in assistant messages, with ids unique in the request (`tool_use ids
  must be unique`); `tool_result` blocks only in user messages, before any other block, answering
  exactly the calls of the assistant message right before (`tool_use ids were found without
  tool_result blocks immediately after`; `unexpected tool_use_id found in tool_result blocks`);
- `thinking` / `redacted_thinking` blocks only in assistant messages;
- at most 4 `cache_control` breakpoints in `system`, `tools` and `messages` together
  (`A maximum of 4 blocks with cache_control may be provided`);
- a custom tool has a `name` and its `input_schema` (an OpenAI-shaped tool is refused:
  `tools.0.custom.name: Field required`); a typed server or built-in tool (`web_search_…`,
  `mcp_toolset`, which has no name) is left to the provider.

OpenAI Chat Completions
- a message of a known role (system, developer, user, assistant, tool) has only the keys of its role
  (`Additional properties are not allowed ('id' was unexpected) - 'messages.0'`): `name` on any,
  `tool_calls`, `refusal`, `audio` and `function_call` on an assistant's, `tool_call_id` on a
  tool's; a user message's content list is not empty; an assistant message has content or tool
  calls; no text part of a content list is empty or only whitespace (it carries nothing, and
  OpenAI-compatible endpoints in front of Anthropic models refuse it as above);
- every `tool_calls` id is answered by a `tool` message before the next assistant or user
  message (`An assistant message with 'tool_calls' must be followed by tool messages responding
  to each 'tool_call_id'`); no `tool` message without its call (`messages with role 'tool' must
  be a response to a preceeding message with 'tool_calls'`); call ids unique within one
  assistant message (a repeated id across messages is answered in its own round, so it is not
  refused here: no provider error for it was found);
- every tool is `{"type": "function", "function": {"name": ...}}` or another typed tool (an
  Anthropic-shaped tool is refused: `Missing required parameter: 'tools[0].type'`).

Gemini generateContent: `validate_gemini` (its own rules, and `contents` for `messages`).

Not checked: what depends on the model or on options outside the payload (whether thinking is
on, context length), and a trailing space at the end of a final assistant message (a fitted log
ends where the log ended; the next request adds a user message after it).

Each message is checked on its own (`check_message`, which can be kept with the message) and
then the sequence is scanned (`scan`), so a caller holding per-message checks pays only for
the sequence.

>>> validate_request({"messages": [{"role": "user", "content": "hi"}]}, "anthropic")
[]
>>> validate_request({"messages": [{"role": "assistant", "content": "hi"}]}, "anthropic")
['messages[0]: the first message must be from the user, not assistant']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from .accepted import is_blank_text, unknown_keys

#: Anthropic's limit on `cache_control` breakpoints per request.
MAX_BREAKPOINTS = 4
_THINKING = ("thinking", "redacted_thinking")
_OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool")


class Checked(NamedTuple):
    """What one message contributes to the checks of the whole request."""

    role: object
    calls: tuple[Any, ...]  # ids of the tool calls it makes (Gemini: (name, id) pairs)
    results: tuple[Any, ...]  # ids of the calls it answers (OpenAI: its tool_call_id)
    results_first: bool  # its tool results come before any other content
    breakpoints: int  # cache_control markers inside it
    problems: tuple[str, ...]  # problems of the message alone
    empty: bool  # no content at all (allowed only for a final assistant message)


def memo_key(dialect: str) -> tuple[str, str]:
    """Where a message keeps its `check_message` result in its memo (the library and a replay
    check each message once; a big file read on several cores has its messages checked where
    they are read)."""
    return ("checked", dialect)


def validate_request(payload: dict[str, Any], dialect: str) -> list[str]:
    """The problems of a request payload (an empty list when it is valid).

    >>> validate_request({"messages": [{"role": "user", "content": "hi"},
    ...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}]}, "openai")
    ["messages[1]: call 'c1' has no result"]
    """
    if not isinstance(payload, dict):
        return ["a request must be a JSON object"]
    if dialect == "gemini":
        return validate_gemini.validate_request(payload)
    if dialect == "responses":  # its own module (which builds on `Checked`, so imported here)
        from .validate_responses import validate_responses

        return validate_responses(payload)
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        return ['"messages" must be a non-empty list']
    checked = [check_message(m, dialect) for m in messages]
    problems = scan(checked, dialect)
    if dialect == "anthropic":
        problems += _anthropic_fixed(payload, sum(c.breakpoints for c in checked))
    return problems + tools_problems(payload.get("tools"), dialect)


def tools_problems(tools: object, dialect: str) -> list[str]:
    """The tool definitions in the shape of the dialect: an Anthropic tool has a ``name`` (and a
    custom one its ``input_schema``); an OpenAI function tool is ``{"type": "function",
    "function": {"name": ...}}``. Each provider refuses the other's shape.

    >>> tools_problems([{"name": "read", "input_schema": {"type": "object"}}], "openai")
    ['tools[0]: an OpenAI tool needs "type" ("function") and a "function" object with its "name"']
    """
    if tools is None:
        return []
    if not isinstance(tools, list):
        return ['"tools" must be a list']
    problems = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            problems.append(f"tools[{i}]: a tool must be a JSON object")
        elif dialect == "anthropic":
            if tool.get("type", "custom") != "custom" and tool.get("type") != "function":
                continue  # a server or built-in tool (`mcp_toolset` has no name): its provider's to judge
            if not isinstance(tool.get("name"), str) or not tool["name"]:
                problems.append(
                    f'tools[{i}]: an Anthropic tool needs a "name"'
                    + (" (this is an OpenAI function tool)" if "function" in tool else "")
                )
            elif not isinstance(tool.get("input_schema"), dict):
                problems.append(f'tools[{i}]: a custom Anthropic tool needs an "input_schema" object')
        elif tool.get("type") is None or (
            tool["type"] == "function"
            and not (isinstance(tool.get("function"), dict) and isinstance(tool["function"].get("name"), str))
        ):
            problems.append(
                f'tools[{i}]: an OpenAI tool needs "type" ("function") and a "function" object with its "name"'
            )
    return problems


def check_message(message: object, dialect: str) -> Checked:
    """The checks of one message that do not depend on its neighbours."""
    if dialect == "gemini":
        return validate_gemini.check_content(message)
    if dialect == "responses":
        from .validate_responses import check_item

        return check_item(message)
    if not isinstance(message, dict):
        return Checked(None, (), (), True, 0, ("a message must be a JSON object",), False)
    checked = _anthropic_message(message) if dialect == "anthropic" else _openai_message(message)
    if checked.role not in _OPENAI_ROLES or (dialect == "anthropic" and checked.role not in ("user", "assistant")):
        return checked  # pinned: sent as the agent sent it
    foreign = foreign_blocks(message.get("content"), dialect)
    return checked._replace(problems=checked.problems + foreign) if foreign else checked


#: Content block types only the other API has, by the dialect that refuses them. The rest of a
#: dialect's types are left to its provider: OpenAI-compatible servers and Anthropic's server
#: tools add types often, and refusing what may be valid would stop a fit for nothing.
_FOREIGN_BLOCKS = {
    "openai": {
        "image",
        "document",
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "search_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
    },
    "anthropic": {"image_url", "input_audio", "refusal", "file"},
}
_THEIRS = {"openai": "Anthropic's", "anthropic": "OpenAI's"}
_TAKES = {
    "openai": "text, image_url, input_audio, file (refusal from the assistant)",
    "anthropic": "text, image, document, tool_use, tool_result, thinking",
}


def foreign_blocks(content: object, dialect: str) -> tuple[str, ...]:
    """Content blocks of the other API's in a message of `dialect` (issue #20: an OpenAI
    transcript carrying Anthropic `image`/`tool_result` blocks was fitted as OpenAI). Checked per
    dialect like the tools: such a request is refused by its provider, so it is bad input.

    >>> foreign_blocks([{"type": "tool_result", "tool_use_id": "a", "content": "r"}],
    ...                "openai")  # doctest: +NORMALIZE_WHITESPACE
    ("content[0]: a 'tool_result' block is Anthropic's; an OpenAI message takes text, image_url, input_audio, file
     (refusal from the assistant): the transcript mixes the two APIs' formats",)
    """
    if not isinstance(content, list):
        return ()
    foreign = _FOREIGN_BLOCKS.get(dialect, ())
    name = "OpenAI" if dialect == "openai" else "Anthropic"
    return tuple(
        f"content[{j}]: a {block['type']!r} block is {_THEIRS[dialect]}; an {name} message takes "
        f"{_TAKES[dialect]}: the transcript mixes the two APIs' formats"
        for j, block in enumerate(content)
        if isinstance(block, dict) and block.get("type") in foreign
    )


def scan(checked: Sequence[Checked], dialect: str) -> list[str]:
    """The problems of a sequence of checked messages (their own problems included)."""
    if dialect == "gemini":
        return validate_gemini.scan(checked)
    if dialect == "responses":
        from .validate_responses import scan_items

        return scan_items(checked)
    return scan_from(checked, dialect)


#: A resumable scan (`scan_from`) notes its state before every this many messages, among the
#: last `MARK_SPAN` (a note copies the ids seen so far: noting them all through a long history
#: would cost more than the scan; the next step resumes from near the end, or scans whole).
MARK_EVERY, MARK_SPAN = 32, 512


def scan_from(
    checked: Sequence[Checked],
    dialect: str,
    start: int = 0,
    state: Any = None,
    marks: list[tuple[int, Any]] | None = None,
) -> list[str]:
    """`scan` of Anthropic or OpenAI messages, from message `start` on with the sequence's
    `state` there (as noted in `marks`: its (index, state) before every `MARK_EVERY` messages
    read while no problem was found), or from the start."""
    problems: list[str] = []
    last = len(checked) - 1
    for i in range(start, len(checked)):
        item = checked[i]
        if item.problems:  # (checked first: this runs for every message of a replayed history)
            problems.extend(f"messages[{i}]: {p}" for p in item.problems)
        if item.empty and not (i == last and item.role == "assistant"):
            problems.append(f"messages[{i}]: content must not be empty")
    if problems:
        marks = None  # the state is noted only where a request so far holds no problem
    sequence = _anthropic_sequence if dialect == "anthropic" else _openai_sequence
    return problems + sequence(checked, start, state, marks, len(checked) - MARK_SPAN)


# --- Anthropic -----------------------------------------------------------------------------


def _anthropic_message(message: dict[str, Any]) -> Checked:
    role = message.get("role")
    problems = [
        f"{key!r}: Extra inputs are not permitted (a message has only role and content)"
        for key in unknown_keys(message, "anthropic")
    ]
    if role not in ("user", "assistant"):
        return _pinned(message)
    content = message.get("content")
    if isinstance(content, str):
        if content and not content.strip():
            problems.append("content must contain non-whitespace text")
        return Checked(role, (), (), True, 0, tuple(problems), not content)
    if not isinstance(content, list):
        problems.append('"content" must be a string or a list of blocks')
        return Checked(role, (), (), True, 0, tuple(problems), False)
    calls, results, breakpoints = [], [], 0
    results_first, other_seen = True, False
    for j, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            problems.append(f'content[{j}] must be a block with a "type"')
            continue
        kind = block["type"]
        breakpoints += "cache_control" in block
        if kind == "tool_result":
            results.append(block.get("tool_use_id"))
            results_first = results_first and not other_seen
            if role != "user":
                problems.append(f"content[{j}]: tool_result blocks belong in user messages")
            inner = block.get("content")
            if isinstance(inner, list):
                breakpoints += _blocks(inner, f"content[{j}].content", problems)
            continue
        other_seen = True
        if kind == "tool_use":
            if not isinstance(block.get("id"), str) or not block.get("id"):
                problems.append(f'content[{j}]: a tool_use block needs an "id"')
            calls.append(block.get("id"))
            if role != "assistant":
                problems.append(f"content[{j}]: tool_use blocks belong in assistant messages")
        elif kind in _THINKING and role != "assistant":
            problems.append(f"content[{j}]: {kind} blocks belong in assistant messages")
        elif kind == "text":
            problems += _text_problems(block, f"content[{j}]")
            if block.get("text") and is_blank_text(block):
                problems.append(f"content[{j}]: text content blocks must contain non-whitespace text")
    return Checked(role, tuple(calls), tuple(results), results_first, breakpoints, tuple(problems), not content)


def _pinned(message: dict[str, Any]) -> Checked:
    """A message of another role (a mid-conversation `system` entry, a role ctxfit does not
    know): sent as the agent sent it, so only its cache breakpoints count (DESIGN §14)."""
    content = message.get("content")
    breakpoints = sum(isinstance(b, dict) and "cache_control" in b for b in content) if isinstance(content, list) else 0
    return Checked(message.get("role"), (), (), True, breakpoints, (), False)


def _blocks(blocks: list[Any], where: str, problems: list[str]) -> int:
    """Check nested text blocks (tool result content, system); return their breakpoints."""
    breakpoints = 0
    for j, block in enumerate(blocks):
        if isinstance(block, dict):
            breakpoints += "cache_control" in block
            if block.get("type") == "text":
                problems += _text_problems(block, f"{where}[{j}]")
    return breakpoints


def _text_problems(block: dict[str, Any], where: str) -> list[str]:
    text = block.get("text")
    if not isinstance(text, str):
        return [f'{where}: a text block needs a "text" string']
    if not text:
        return [f"{where}: text blocks must be non-empty"]
    return []


def _anthropic_sequence(
    checked: Sequence[Checked],
    start: int = 0,
    state: Any = None,
    marks: list[tuple[int, Any]] | None = None,
    note_from: int = 0,
) -> list[str]:
    problems: list[str] = []
    if start == 0 and checked and checked[0].role == "assistant":
        problems.append("messages[0]: the first message must be from the user, not assistant")
    seen: set[object]
    calls: tuple[object, ...]  # calls of the assistant message right before, awaiting their results
    seen, calls, previous_role = (set(state[0]), *state[1:]) if state is not None else (set(), (), None)
    for i in range(start, len(checked)):
        if marks is not None and not i % MARK_EVERY and i >= note_from and not problems:
            marks.append((i, (frozenset(seen), calls, previous_role)))
        item = checked[i]
        role = item.role
        if role == previous_role and role in ("user", "assistant"):
            problems.append(f"messages[{i}]: two {role} messages in a row (roles must alternate)")
        for call_id in item.calls:
            if call_id in seen:
                problems.append(f"messages[{i}]: tool_use id {call_id!r} is used twice (ids must be unique)")
            seen.add(call_id)
        if role == "user":
            if not item.results_first:
                problems.append(f"messages[{i}]: tool_result blocks must come before any other content")
            problems += _answers(i, calls, item.results)
            calls = ()
        elif role == "assistant":
            problems.extend(f"messages[{i - 1}]: call {c!r} has no result before messages[{i}]" for c in calls)
            calls = item.calls
        else:
            role = None  # a system entry (or a role ctxfit does not know): any role may follow it
        previous_role = role
    problems.extend(f"messages[{len(checked) - 1}]: call {c!r} has no result" for c in calls)
    return problems


def _answers(i: int, calls: tuple[object, ...], results: tuple[object, ...]) -> list[str]:
    """Problems of user message i answering `calls` (of the message before) with `results`."""
    problems, answered = [], set()
    for call_id in results:
        if call_id in answered:
            problems.append(f"messages[{i}]: a second result for call {call_id!r}")
        elif call_id not in calls:
            problems.append(f"messages[{i}]: result for call {call_id!r} does not follow its call")
        answered.add(call_id)
    problems.extend(f"messages[{i - 1}]: call {c!r} has no result in messages[{i}]" for c in calls if c not in answered)
    return problems


def _anthropic_fixed(payload: dict[str, Any], message_breakpoints: int) -> list[str]:
    """`system` and `tools`, and the breakpoints of the whole request."""
    problems: list[str] = []
    breakpoints = message_breakpoints
    system = payload.get("system")
    if isinstance(system, list):
        breakpoints += _blocks(system, "system", problems)
    elif system is not None and not isinstance(system, str):
        problems.append('"system" must be a string or a list of text blocks')
    tools = payload.get("tools")
    if isinstance(tools, list):
        breakpoints += sum(isinstance(t, dict) and "cache_control" in t for t in tools)
    if breakpoints > MAX_BREAKPOINTS:
        problems.append(f"{breakpoints} cache_control breakpoints; at most {MAX_BREAKPOINTS} are allowed")
    return problems


# --- OpenAI --------------------------------------------------------------------------------


def _openai_message(message: dict[str, Any]) -> Checked:
    role = message.get("role")
    problems: list[str] = []
    if role not in _OPENAI_ROLES:
        return Checked(role, (), (), True, 0, (), False)  # a role ctxfit does not know: sent as it came
    if len(message) > 2:
        problems.extend(
            f"{key!r} was unexpected (Additional properties are not allowed in a {role} message)"
            for key in unknown_keys(message, "openai")
        )
    content = message.get("content")
    if isinstance(content, list):
        problems.extend(
            f"content[{j}]: a text part must contain non-whitespace text"
            for j, part in enumerate(content)
            if is_blank_text(part)
        )
    calls: tuple[object, ...] = ()
    results: tuple[object, ...] = ()
    if role == "assistant":
        tool_calls = message.get("tool_calls") or []
        if not isinstance(tool_calls, list):
            problems.append('"tool_calls" must be a list')
            tool_calls = []
        # Lists, not generators: this runs for every assistant message of a replayed history.
        calls = tuple([c.get("id") if isinstance(c, dict) else None for c in tool_calls])
        if not all([isinstance(c, str) and c for c in calls]):
            problems.append('every tool call needs an "id"')
        if content is None and not calls and not any(k in message for k in ("refusal", "audio", "function_call")):
            problems.append("an assistant message needs content or tool_calls")
    elif role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str):
            problems.append('a tool message needs a "tool_call_id"')
        results = (call_id,)
        if content is None:
            problems.append('a tool message needs "content"')
    elif content is None:
        problems.append('missing "content"')
    empty = isinstance(content, list) and not content and role in ("user", "system", "developer")
    return Checked(role, calls, results, True, 0, tuple(problems), empty)


def _openai_sequence(
    checked: Sequence[Checked],
    start: int = 0,
    state: Any = None,
    marks: list[tuple[int, Any]] | None = None,
    note_from: int = 0,
) -> list[str]:
    problems: list[str] = []
    waiting: dict[object, int]  # calls of the last assistant message not yet answered
    answered: set[object]
    waiting, answered = (dict(state[0]), set(state[1])) if state is not None else ({}, set())
    for i in range(start, len(checked)):
        if marks is not None and not i % MARK_EVERY and i >= note_from and not problems:
            marks.append((i, (tuple(waiting.items()), frozenset(answered))))
        item = checked[i]
        if item.role not in _OPENAI_ROLES:
            continue  # a role ctxfit does not know: sent where the agent put it
        calls = item.calls
        if len(calls) > 1 and len(set(calls)) < len(calls):
            problems.append(f"messages[{i}]: a tool call id is used twice in one message")
        if item.role == "tool":
            call_id = item.results[0]
            if call_id in waiting:
                del waiting[call_id]
                answered.add(call_id)
            elif call_id in answered:
                problems.append(f"messages[{i}]: a second result for call {call_id!r}")
            else:
                problems.append(f"messages[{i}]: result for call {call_id!r} does not follow its call")
            continue
        if waiting:
            problems.extend(
                f"messages[{at}]: call {c!r} has no result before messages[{i}]" for c, at in waiting.items()
            )
        waiting, answered = dict.fromkeys(calls, i), set()
    problems.extend(f"messages[{at}]: call {c!r} has no result" for c, at in waiting.items())
    return problems


def first_problem(problems: Iterable[str]) -> str:
    """One line for a person: the first problem, and how many more there are."""
    problems = list(problems)
    more = len(problems) - 1
    return problems[0] + (f" (and {more} more)" if more > 0 else "")


# Gemini's rules build `Checked` values, so they are imported once it is defined.
from . import validate_gemini  # noqa: E402
