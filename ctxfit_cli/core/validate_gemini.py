"""What the Gemini API refuses in a generateContent request, checked offline (DESIGN §8).

Each rule with the error the API answers (its issue trackers and those of the agents that hit
them: google-gemini/gemini-cli#11814, #17208, #26956; NousResearch/hermes-agent#55125):

- `contents` is a non-empty list of contents whose role is "user" or "model" (none: the user),
  not another API's (`assistant`, `system`, ...: `Please use a valid role: user, model.`);
- every content has parts (`contents.parts must not be empty`), and every part one kind of data
  — text, inlineData, fileData, functionCall, functionResponse, executableCode, ... — (`required
  oneof field 'data' must have one initialized field`; an empty text is no data, unless the part
  carries a thought signature, which is how the model itself returns one);
- the first content is the user's (a function call first: `Please ensure that function call
  turn comes immediately after a user turn or after a function response turn.`); no two model
  contents in a row (`Please ensure that multiturn requests alternate between user and model.`).
  Two user contents in a row are taken (Gemini CLI 0.61's router request sends them), and so is
  a call answered twice under its id (Gemini CLI 0.61 on resume); a content of a role ctxfit does
  not know is sent as it came (DESIGN §14);
- `functionCall` parts only in a model content and `functionResponse` parts only in a user
  content; the content after a model content with calls is a user content answering every one of
  them (`Please ensure that the number of function response parts is equal to the number of
  function call parts of the function call turn.`), matched by id where both have one, else by
  name and order; a response only right after its call (`Please ensure that function response
  turn comes immediately after a function call turn.`); every call and response has a name;
- `systemInstruction` is a content of text parts; every tool is an object, every function
  declaration has a name.

Not checked: thought signatures (Gemini 3 wants them on the calls of the current turn; ctxfit
never changes a model content, so they leave as the agent sent them) and model-dependent limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .accepted import PART_METADATA
from .validate import Checked

ROLES = ("user", "model")
#: Other APIs' roles, which Gemini refuses (`Please use a valid role: user, model.`): a request
#: mixing the APIs' formats. Any other role is one ctxfit does not know, sent as it came.
FOREIGN_ROLES = ("assistant", "system", "developer", "tool")
#: A content's role as `Checked` holds it: the model's is "assistant", as in the other dialects,
#: so what reads checks of any dialect (a replay's junctions) reads these alike.
_CHECKED_ROLES = {"user": "user", "model": "assistant"}
#: Part fields that hold its data: exactly one per part.
DATA = {
    "text": "text",
    "inlineData": "inlineData",
    "inline_data": "inlineData",
    "fileData": "fileData",
    "file_data": "fileData",
    "functionCall": "functionCall",
    "function_call": "functionCall",
    "functionResponse": "functionResponse",
    "function_response": "functionResponse",
    "executableCode": "executableCode",
    "executable_code": "executableCode",
    "codeExecutionResult": "codeExecutionResult",
    "code_execution_result": "codeExecutionResult",
}
_SIGNATURE = ("thoughtSignature", "thought_signature")


def validate_request(payload: dict[str, Any]) -> list[str]:
    """The problems of a generateContent body (an empty list when it is valid).

    >>> validate_request({"contents": [{"role": "model", "parts": [{"text": "Hi"}]}]})
    ['contents[0]: the first content must be from the user, not the model']
    """
    contents = payload.get("contents")
    if not isinstance(contents, list) or not contents:
        return ['"contents" must be a non-empty list']
    problems = scan([check_content(c) for c in contents])
    system = payload.get("systemInstruction", payload.get("system_instruction"))
    if system is not None:
        problems += _system_problems(system)
    return problems + tools_problems(payload.get("tools"))


def check_content(content: object) -> Checked:
    """The checks of one content on its own. `calls` and `results` hold (name, id) pairs; the
    role is "user" or "assistant" (the model's)."""
    if not isinstance(content, dict):
        return Checked(None, (), (), True, 0, ("a content must be a JSON object",), False)
    given = content.get("role") or "user"
    role = _CHECKED_ROLES.get(given, given)
    problems: list[str] = []
    if given in FOREIGN_ROLES:
        return Checked(given, (), (), True, 0, (f'role must be "user" or "model", not {given!r}',), False)
    if given not in ROLES:
        return Checked(given, (), (), True, 0, (), False)  # a role ctxfit does not know: sent as it came
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        problems.append("parts must not be empty" if parts in (None, []) else '"parts" must be a list')
        return Checked(role, (), (), True, 0, tuple(problems), False)
    calls, results = [], []
    for j, part in enumerate(parts):
        kind = _part_kind(part, j, problems)
        if kind == "functionCall":
            calls.append(_named(part, kind, j, problems))
            if role != "assistant":
                problems.append(f"parts[{j}]: a functionCall belongs in a model content")
        elif kind == "functionResponse":
            results.append(_named(part, kind, j, problems))
            if role != "user":
                problems.append(f"parts[{j}]: a functionResponse belongs in a user content")
    return Checked(role, tuple(calls), tuple(results), True, 0, tuple(problems), False)


def _part_kind(part: object, j: int, problems: list[str]) -> str | None:
    """The kind of data a part holds (None when it has none or several: a problem is added)."""
    if not isinstance(part, dict):
        problems.append(f"parts[{j}]: a part must be a JSON object")
        return None
    kinds = [
        DATA[k]
        for k, v in part.items()
        if k in DATA and v is not None and not (k == "text" and v == "" and not any(s in part for s in _SIGNATURE))
    ]
    if len(kinds) > 1:
        problems.append(f"parts[{j}]: a part holds one kind of data, not {' and '.join(kinds)}")
        return None
    if not kinds:
        if "text" in part and not isinstance(part["text"], str):
            problems.append(f'parts[{j}]: "text" must be a string')
        elif not any(k not in DATA and k not in PART_METADATA for k in part):  # (an unknown kind is let through)
            problems.append(f"parts[{j}]: a part needs data (an empty text is none)")
        return None
    return kinds[0]


#: A function call or response as (name, id or None).
_Named = tuple[str, str | None]


def _named(part: dict[str, Any], kind: str, j: int, problems: list[str]) -> _Named:
    snake = "function_call" if kind == "functionCall" else "function_response"
    body = part.get(kind) if kind in part else part.get(snake)
    if not isinstance(body, dict):
        problems.append(f"parts[{j}]: a {kind} must be an object")
        return ("", None)
    name, call_id = body.get("name"), body.get("id")
    if not isinstance(name, str) or not name:
        problems.append(f'parts[{j}]: a {kind} needs a "name"')
    return (name if isinstance(name, str) else "", call_id if isinstance(call_id, str) and call_id else None)


def scan(checked: Sequence[Checked]) -> list[str]:
    """The problems of a sequence of checked contents (their own problems included)."""
    problems: list[str] = []
    for i, item in enumerate(checked):
        problems.extend(f"contents[{i}]: {p}" for p in item.problems)
    if checked and checked[0].role == "assistant":
        problems.append("contents[0]: the first content must be from the user, not the model")
    calls: tuple[Any, ...] = ()  # calls of the model content right before, awaiting their responses
    previous = None
    for i, item in enumerate(checked):
        role = item.role
        if role not in ("user", "assistant"):
            previous = None  # a content ctxfit does not know: sent where the agent put it
            continue
        if role == previous == "assistant":
            problems.append(f"contents[{i}]: two model contents in a row (user and model must alternate)")
        if role == "assistant":
            if calls:
                problems.append(f"contents[{i - 1}]: its function calls have no responses before contents[{i}]")
            calls = item.calls
        else:
            problems += _answers(i, calls, item.results)
            calls = ()
        previous = role
    if calls:
        problems.append(f"contents[{len(checked) - 1}]: its function calls have no responses")
    return problems


def _answers(i: int, calls: tuple[_Named, ...], results: tuple[_Named, ...]) -> list[str]:
    """Problems of user content i answering `calls` (of the content before) with `results`."""
    if not calls and not results:
        return []
    if not calls:
        return [f"contents[{i}]: a functionResponse must come right after the model content that called it"]
    # A call answered twice under its id is taken (Gemini CLI 0.61 resends every result on resume).
    ids = {c[1] for c in calls if c[1] is not None}
    seen: set[str] = set()
    once = []
    for result in results:
        if result[1] in seen:
            continue
        once.append(result)
        if result[1] in ids:
            seen.add(result[1])
    if len(once) != len(calls):
        return [
            f"contents[{i}]: {len(once)} function responses for the {len(calls)} function calls of "
            f"contents[{i - 1}] (the numbers must be equal)"
        ]
    free = list(calls)
    problems = []
    for name, call_id in once:
        match = next((c for c in free if call_id is not None and c[1] == call_id), None)
        if match is None and (call_id is None or all(c[1] is None or c[1] != call_id for c in calls)):
            match = next((c for c in free if c[0] == name and (call_id is None or c[1] is None)), None)
        if match is None:
            problems.append(
                f"contents[{i}]: the response for {name!r}"
                + (f" (id {call_id!r})" if call_id else "")
                + f" answers no call of contents[{i - 1}]"
            )
        else:
            free.remove(match)
    return problems


def _system_problems(system: object) -> list[str]:
    if not isinstance(system, dict) or not isinstance(system.get("parts"), list):
        return ['systemInstruction must be a content: {"parts": [{"text": ...}]}']
    problems: list[str] = []
    for j, part in enumerate(system["parts"]):
        if not (isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"]):
            problems.append(f"systemInstruction.parts[{j}]: must be a non-empty text part")
    return problems


def tools_problems(tools: object) -> list[str]:
    """Each tool an object; each function declaration named (an OpenAI- or Anthropic-shaped
    tool has none of Gemini's keys and is refused).

    >>> tools_problems([{"name": "read", "input_schema": {}}])
    ['tools[0]: a Gemini tool holds functionDeclarations or a built-in tool (googleSearch, codeExecution, ...)']
    """
    if tools is None:
        return []
    if not isinstance(tools, list):
        return ['"tools" must be a list']
    problems = []
    for i, tool in enumerate(tools):
        declarations = (
            tool.get("functionDeclarations", tool.get("function_declarations")) if isinstance(tool, dict) else None
        )
        if not isinstance(tool, dict) or "name" in tool or "function" in tool or "input_schema" in tool:
            problems.append(
                f"tools[{i}]: a Gemini tool holds functionDeclarations or a built-in tool "
                "(googleSearch, codeExecution, ...)"
            )
        elif declarations is not None:
            if not isinstance(declarations, list):
                problems.append(f"tools[{i}]: functionDeclarations must be a list")
                continue
            problems.extend(
                f'tools[{i}].functionDeclarations[{k}]: a function declaration needs a "name"'
                for k, d in enumerate(declarations)
                if not (isinstance(d, dict) and d.get("name"))
            )
    return problems
