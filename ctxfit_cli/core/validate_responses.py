"""Is an OpenAI Responses request valid? The rules the API enforces on `input`, checked offline.

The request is `{"model", "instructions"?, "tools"?, "input": [item, ...], ...}`; each item has a
`type` (a message may leave it out: `{"role", "content"}` is the short form). What the API
refuses, with the error it answers:

- a call (`function_call`, `custom_tool_call`, `local_shell_call`, `shell_call`,
  `apply_patch_call`, `computer_call`) needs a `call_id`, unique in the request, and is
  answered by exactly one output item later in `input` (`No tool output found for function
  call call_…`); an output (`*_call_output`) answers a call made before it (`No tool call found
  for function call output with call_id …`). Codex answers a `local_shell_call` with a
  `function_call_output`, so a call and its output are paired by `call_id` whatever their kinds.
  A message between a call and its output is accepted (Codex writes developer messages there);
- a `reasoning` item is followed by the item the model produced with it, never by a user
  message, an output or the end of `input` (`Item 'rs_…' of type 'reasoning' was provided
  without its required following item`);
- a message's content is a string or a list of parts; a function call's `arguments` is a string;
  an item of a type (or a message of a role) ctxfit does not know is sent as it came (DESIGN §14);
- `tools` are flat: `{"type": "function", "name": ...}` (a Chat Completions tool, with its
  `function` object, is refused: `Missing required parameter: 'tools[0].name'`).

A `tool_search_call` the client runs (Codex: `"execution": "local"`) is a call too, answered by
a `tool_search_output` with its `call_id`; one the server runs is a record like `web_search_call`.

Each item is checked on its own (`check_item`, kept with its message) and the sequence is then
scanned (`scan_items`), as `validate.py` does for the chat dialects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .responses_items import INPUT_ROLES, NAMED_TOOLS, ROLES, call_id_of, is_call, is_output, item_kind
from .validate import Checked


def validate_responses(payload: dict[str, Any]) -> list[str]:
    """The problems of a Responses request (an empty list when it is valid).

    >>> validate_responses({"input": [{"role": "user", "content": "hi"},
    ...     {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}]})
    ["input[1]: call 'c1' has no output"]
    """
    items = payload.get("input")
    if isinstance(items, str):
        return []
    if not isinstance(items, list) or not items:
        return ['"input" must be a string or a non-empty list of items']
    problems = scan_items([check_item(item) for item in items])
    instructions = payload.get("instructions")
    if instructions is not None and not isinstance(instructions, (str, list)):
        problems.append('"instructions" must be a string')
    return problems + responses_tools_problems(payload.get("tools"))


def responses_tools_problems(tools: object) -> list[str]:
    """Tools in the Responses shape: typed, and a function or custom tool named at the top.

    >>> responses_tools_problems([{"type": "function", "function": {"name": "ls"}}])
    ['tools[0]: a Responses function tool has its "name" at the top (not in a "function" object)']
    """
    if tools is None:
        return []
    if not isinstance(tools, list):
        return ['"tools" must be a list']
    problems = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            problems.append(f'tools[{i}]: a tool must be an object with a "type"')
        elif tool["type"] in NAMED_TOOLS and not isinstance(tool.get("name"), str):
            problems.append(
                f'tools[{i}]: a Responses {tool["type"]} tool has its "name" at the top'
                + (' (not in a "function" object)' if "function" in tool else "")
            )
    return problems


def check_item(item: object) -> Checked:
    """The checks of one item that do not depend on its neighbours. `role` holds the role of a
    message, else the item's type."""
    if not isinstance(item, dict):
        return Checked(None, (), (), True, 0, ("an item must be a JSON object",), False)
    kind = item_kind(item)
    if kind == "message":
        return _message(item)
    problems: list[str] = []
    calls: tuple[object, ...] = ()
    results: tuple[object, ...] = ()
    if is_call(item):
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            problems.append(f'a {kind} item needs a "call_id"')
        calls = (call_id,)
        if kind == "function_call" and not (
            isinstance(item.get("name"), str) and isinstance(item.get("arguments"), str)
        ):
            problems.append('a function_call needs a "name" and its "arguments" as a string')
    elif is_output(item):
        call_id = call_id_of(item)
        if not isinstance(call_id, str) or not call_id:
            problems.append(f'a {kind} item needs the "call_id" of its call')
        results = (call_id,)
        if "output" not in item and kind not in ("apply_patch_call_output", "tool_search_output"):
            problems.append(f'a {kind} item needs an "output"')
    elif not kind:
        problems.append('an item needs a "type" (or a message its "role")')
    return Checked(kind, calls, results, True, 0, tuple(problems), False)


def _message(item: dict[str, Any]) -> Checked:
    role = item.get("role")
    problems: list[str] = []
    if role not in ROLES:
        return Checked(role, (), (), True, 0, (), False)  # a role ctxfit does not know: sent as it came
    content = item.get("content")
    if not isinstance(content, (str, list)):
        problems.append('a message needs "content": a string or a list of parts')
    elif isinstance(content, list):
        for j, part in enumerate(content):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                problems.append(f'content[{j}] must be a part with a "type"')
    return Checked(role, (), (), True, 0, tuple(problems), False)


def scan_items(checked: Sequence[Checked]) -> list[str]:
    """The problems of a sequence of checked items (their own problems included)."""
    problems: list[str] = []
    calls: dict[object, int] = {}  # call id -> index of its call
    answered: set[object] = set()
    for i, item in enumerate(checked):
        problems.extend(f"input[{i}]: {p}" for p in item.problems)
        for call_id in item.calls:
            if call_id in calls:
                problems.append(f"input[{i}]: call id {call_id!r} is used twice")
            calls[call_id] = i
        for call_id in item.results:
            if call_id in answered:
                problems.append(f"input[{i}]: a second output for call {call_id!r}")
            elif call_id not in calls:
                problems.append(f"input[{i}]: output for call {call_id!r} does not follow its call")
            answered.add(call_id)
        if item.role == "reasoning" and not _model_follows(checked, i):
            problems.append(f"input[{i}]: a reasoning item must be followed by the item it was produced with")
    problems.extend(f"input[{at}]: call {c!r} has no output" for c, at in calls.items() if c not in answered)
    return problems


def _model_follows(checked: Sequence[Checked], i: int) -> bool:
    if i + 1 >= len(checked):
        return False
    following = checked[i + 1].role
    return following == "assistant" or (
        following not in INPUT_ROLES and not checked[i + 1].results and following not in (None, "")
    )
