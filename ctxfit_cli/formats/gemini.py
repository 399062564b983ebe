"""Gemini `generateContent`: contents of parts, `systemInstruction` and `tools`.

A content is `{"role": "user" | "model", "parts": [...]}` (no role: the user's, as the API
takes it). Parts: `text` (with `"thought": true`, the model's thinking), `inlineData` (base64
image, PDF, audio), `fileData` (an uploaded file), `functionCall {name, args, id?}` in a model
content, `functionResponse {name, response, id?, parts?}` in the user content right after it,
`executableCode` / `codeExecutionResult` and any newer kind (counted as their JSON). A content of
a role ctxfit does not know is pinned: kept in place as it came, counted (DESIGN §14).
`thoughtSignature` is opaque and not counted. The API reads every field in camelCase or in
snake_case (`function_call`, what the google-genai SDK dumps); so does ctxfit, and a changed
part keeps the spelling it came with.

**Pairing.** The `functionCall` parts of a model content and the `functionResponse` parts of
the next user content are one round; the API pairs them by `id` where there is one, else by
name and order. Each call and response gets a pairing key, `Part.call_id`: its `id`, or
`name#k` for the k-th part of that name in its content. `paired` settles the mixed case (an
id on one side only) by name and order, so a call and its response always share a key.

Each JSON part is one `Part`, in order: a part the fitter names is found in the JSON again by
its position (`gemini_write`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..core.accepted import PART_METADATA
from ..core.model import Message, Part, PartKind, Role
from ..counters.images import DEFAULT_IMAGE_TOKENS, image_tokens_from_base64, pdf_tokens_from_base64
from .common import Where, expect_dict, json_text, type_name

ROLES = {"user": Role.USER, "model": Role.ASSISTANT}
#: The fields of a generateContent request, in the API's two spellings.
CONTENTS, TOOLS = "contents", "tools"
SYSTEM_KEYS = ("systemInstruction", "system_instruction")
#: Part fields that say something about the part's data, not data themselves: never counted.
METADATA = PART_METADATA
#: What a function's response is read as when it is one of these alone: the text itself
#: (Gemini CLI sends `{"output": ...}` or `{"error": ...}`); anything else counts as its JSON.
_TEXT_RESPONSE_KEYS = ("output", "error")

_TOOL_CALL, _TOOL_RESULT = PartKind.TOOL_CALL, PartKind.TOOL_RESULT


def field(value: dict, camel: str, snake: str) -> object:
    """A field in either spelling (camelCase first), or None.

    >>> field({"function_call": {"name": "ls"}}, "functionCall", "function_call")
    {'name': 'ls'}
    """
    found = value.get(camel)
    return value.get(snake) if found is None else found


def parse_content(value: object, raw: bytes, where: Where) -> Message:
    """One Gemini content (already parsed JSON) into the transcript model."""
    content = expect_dict(value, where, "a content")
    role = content.get("role") or "user"
    if role not in ROLES:  # a role ctxfit does not know: kept as it came, counted (DESIGN §14)
        return Message(Role.SYSTEM, (Part(PartKind.TEXT, json_text(content)),), raw, where.line, pinned=True)
    parts = content.get("parts")
    if parts is None:
        parts = []
    elif not isinstance(parts, list):
        raise where.fail(f'"parts" must be a list, got {type_name(parts)}')
    seen: dict[tuple[str, str], int] = {}  # (kind, name) -> parts of that name so far, for keys
    return Message(ROLES[role], tuple(_part(p, where, i, seen) for i, p in enumerate(parts)), raw, where.line)


def _part(value: object, where: Where, index: int, seen: dict) -> Part:
    if not isinstance(value, dict):
        raise where.at("parts").at(index).fail(f"a part must be a JSON object, got {type_name(value)}")
    text = value.get("text")
    if isinstance(text, str):
        return Part(PartKind.THINKING if value.get("thought") is True else PartKind.TEXT, text)
    call = field(value, "functionCall", "function_call")
    if call is not None:
        call = expect_dict(call, where.at("parts").at(index), "a functionCall")
        name = _name(call)
        return Part(_TOOL_CALL, json_text(call.get("args") or {}), name, _key(call, name, "call", seen))
    response = field(value, "functionResponse", "function_response")
    if response is not None:
        response = expect_dict(response, where.at("parts").at(index), "a functionResponse")
        name = _name(response)
        text, images, is_error = _response(response)
        return Part(_TOOL_RESULT, text, name, _key(response, name, "response", seen), images, is_error)
    inline = field(value, "inlineData", "inline_data")
    if isinstance(inline, dict):
        return Part(PartKind.IMAGE, image_tokens=_inline_tokens(inline))
    if field(value, "fileData", "file_data") is not None:
        return Part(PartKind.IMAGE, image_tokens=DEFAULT_IMAGE_TOKENS)
    data = {k: v for k, v in value.items() if k not in METADATA}
    return Part(PartKind.TEXT, json_text(data) if data else "")  # code parts, newer kinds: all counted


def _name(call: dict) -> str:
    name = call.get("name")
    return name if isinstance(name, str) else ""


def _key(call: dict, name: str, kind: str, seen: dict) -> str:
    """The pairing key of a call or response: its id, else `name#k` (k-th of that name here)."""
    k = seen.get((kind, name), 0)
    seen[(kind, name)] = k + 1
    call_id = call.get("id")
    return call_id if isinstance(call_id, str) and call_id else f"{name}#{k}"


def _response(response: dict) -> tuple[str, int, bool]:
    """(text counted, image tokens, is an error) of a functionResponse."""
    body = response.get("response")
    is_error = isinstance(body, dict) and "error" in body
    if (
        isinstance(body, dict)
        and len(body) == 1
        and next(iter(body)) in _TEXT_RESPONSE_KEYS
        and isinstance(next(iter(body.values())), str)
    ):
        text = next(iter(body.values()))
    else:
        text = json_text(body) if body is not None else ""
    images = 0
    inner = response.get("parts")
    if isinstance(inner, list):
        for part in inner:
            inline = field(part, "inlineData", "inline_data") if isinstance(part, dict) else None
            if isinstance(inline, dict):
                images += _inline_tokens(inline)
            elif isinstance(part, dict) and field(part, "fileData", "file_data") is not None:
                images += DEFAULT_IMAGE_TOKENS
    return text, images, is_error


def _inline_tokens(inline: dict) -> int:
    data, mime = inline.get("data"), field(inline, "mimeType", "mime_type")
    if not isinstance(data, str) or not isinstance(mime, str):
        return DEFAULT_IMAGE_TOKENS
    if mime.startswith("image/"):
        return image_tokens_from_base64(data)
    if mime == "application/pdf":
        return pdf_tokens_from_base64(data)
    return DEFAULT_IMAGE_TOKENS  # audio, video: counted as one image, never as base64 text


def system_message(system: object, raw: bytes, where: Where) -> Message:
    """`systemInstruction` (a content; the library also takes a string or a list of parts),
    counted as the system prompt. `raw` is the value as sent."""
    if isinstance(system, str):
        return Message(Role.SYSTEM, (Part(PartKind.TEXT, system),) if system else (), raw, where.line)
    if isinstance(system, list):
        system = {"parts": system}
    content = expect_dict(system, where, "systemInstruction")
    parsed = parse_content({"role": "user", "parts": content.get("parts") or []}, raw, where)
    return Message(Role.SYSTEM, parsed.parts, raw, where.line)


def system_value(system: object) -> object:
    """The `systemInstruction` the API takes for what a caller gave: a content object.

    >>> system_value("Be brief.")
    {'parts': [{'text': 'Be brief.'}]}
    """
    if isinstance(system, str):
        return {"parts": [{"text": system}]}
    if isinstance(system, list):
        return {"parts": [{"text": p} if isinstance(p, str) else p for p in system]}
    if isinstance(system, dict) and "parts" not in system and ("text" in system or len(system) == 1):
        return {"parts": [system]}  # one part
    return system


def tools_message(tools: object, raw: bytes, line: int = 0) -> Message:
    return Message(Role.TOOLS, (Part(PartKind.TEXT, json_text(tools)),), raw, line)


# --- what is Gemini ----------------------------------------------------------------------------


def is_content(value: object) -> bool:
    """Whether a JSON value is a Gemini content (its `parts`, a role of user or model or none)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("parts"), list)
        and value.get("role", "user") in ROLES
        and "content" not in value
    )


def is_request(value: object) -> bool:
    """Whether a JSON value is a generateContent request (or a bare list of contents)."""
    if isinstance(value, dict):
        return isinstance(value.get(CONTENTS), list) and "messages" not in value
    return isinstance(value, list) and bool(value) and is_content(value[0])


def sniff(value: object) -> str | None:
    """The input format a first record says: "request" (a request object or a list of
    contents), "gemini" (one content per line), or None (not Gemini)."""
    if is_request(value):
        return "request"
    return "gemini" if is_content(value) else None


def tools_dialect(tools: object) -> bool:
    """Whether tool definitions are Gemini's (`functionDeclarations`, or a built-in tool)."""
    first = tools[0] if isinstance(tools, list) and tools else None
    return isinstance(first, dict) and any(
        k in first
        for k in (
            "functionDeclarations",
            "function_declarations",
            "googleSearch",
            "google_search",
            "codeExecution",
            "code_execution",
            "urlContext",
            "url_context",
            "googleSearchRetrieval",
            "google_search_retrieval",
        )
    )


# --- pairing -------------------------------------------------------------------------------------


def paired(messages: Iterable[Message]) -> Iterator[Message]:
    """The messages with each functionResponse keyed as the call it answers (lazy; most
    messages pass as they are)."""
    previous = None
    for message in messages:
        message = answering(previous, message)
        yield message
        previous = message


def answering(previous: Message | None, message: Message) -> Message:
    """`message` with its responses keyed as the calls of `previous` they answer: where ids are
    on one side only, by name and order, as the API pairs them."""
    if previous is None or previous.role is not Role.ASSISTANT or message.role is not Role.USER:
        return message
    calls = [(p.call_id, p.tool) for p in previous.parts if p.kind is _TOOL_CALL]
    keys = {key for key, _ in calls}
    results = [p for p in message.parts if p.kind is _TOOL_RESULT]
    if all(p.call_id in keys for p in results):
        return message
    answered = {p.call_id for p in results}
    free = [(key, name) for key, name in calls if key not in answered]
    parts = []
    for part in message.parts:
        if part.kind is _TOOL_RESULT and part.call_id not in keys:
            match = next((c for c in free if c[1] == part.tool), None)
            if match is not None:
                free.remove(match)
                part = part._replace(call_id=match[0])
        parts.append(part)
    return Message(message.role, tuple(parts), message.raw, message.line)
