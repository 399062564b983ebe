"""OpenAI Chat Completions messages.

`role` is system, developer, user, assistant or tool. `content` is a string, null, or a list of
parts (`text`, `image_url`, `input_audio`, `file`, `refusal`). An assistant's
`tool_calls[].function.arguments` is a JSON *string* — counted as sent, valid JSON or not. A tool
result is a `role: "tool"` message with `tool_call_id`. A message is read as the API takes it:
keys its role does not have and blank text parts are removed (`core.repair.cleaned`, reported).
"""

from __future__ import annotations

from ..core.model import Message, Part, PartKind, Role
from ..core.repair import cleaned
from ..counters.images import DEFAULT_IMAGE_TOKENS, image_tokens_from_data_url
from .common import Where, dumps, expect_dict, expect_str, json_text, type_name

ROLES = {
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "tool": Role.TOOL,
}


def parse_message(value: object, raw: bytes, where: Where) -> Message:
    """One OpenAI message (already parsed JSON) into the transcript model."""
    message = expect_dict(value, where, "a message")
    role = _role(message, where)
    if role is None:  # a role ctxfit does not know: kept as it came, counted (DESIGN §14)
        return Message(Role.SYSTEM, (Part(PartKind.TEXT, json_text(message)),), raw, where.line, pinned=True)
    repaired: tuple[str, ...] = ()
    if len(message) > 2 or isinstance(message.get("content"), list):  # a key or a part the API refuses?
        fixed, repaired = cleaned(message, "openai")
        if repaired:
            message, raw = fixed, dumps(fixed)
    content_where = where.at("content")
    if role is Role.TOOL:
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise where.fail('a "tool" message needs a "tool_call_id" string')
        text, images = _flatten(message.get("content"), content_where)
        parts: tuple[Part, ...] = (Part(PartKind.TOOL_RESULT, text, _name(message), call_id, images),)
    else:
        parts = _content_parts(message.get("content"), content_where)
        if role is Role.ASSISTANT and message.get("tool_calls") is not None:
            parts += _tool_calls(message["tool_calls"], where.at("tool_calls"))
    return Message(role, parts, raw, where.line, repaired=repaired)


def _role(message: dict, where: Where) -> Role | None:
    """The message's role; None for a role ctxfit does not know (the message is pinned)."""
    if "role" not in message:
        raise where.fail('missing "role"')
    role = message["role"]
    if not isinstance(role, str):
        raise where.fail(f'"role" must be a string, got {type_name(role)}')
    return ROLES.get(role)


def _name(message: dict) -> str:
    name = message.get("name")
    return name if isinstance(name, str) else ""


def _content_parts(content: object, where: Where) -> tuple[Part, ...]:
    if content is None:
        return ()
    if isinstance(content, str):
        return (Part(PartKind.TEXT, content),) if content else ()
    if not isinstance(content, list):
        raise where.fail(f"must be a string, null or a list of parts, got {type_name(content)}")
    return tuple(_content_part(item, where, i) for i, item in enumerate(content))


def _content_part(item: object, parent: Where, index: int) -> Part:
    # The location is built only when something is wrong: this runs for every part read.
    if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
        return Part(PartKind.TEXT, item["text"])
    return _checked_part(item, parent.at(index))


def _checked_part(item: object, where: Where) -> Part:
    part = expect_dict(item, where, "a content part")
    kind = part.get("type")
    if kind == "text":
        return Part(PartKind.TEXT, expect_str(part.get("text"), where, '"text"'))
    if kind == "refusal":
        return Part(PartKind.TEXT, expect_str(part.get("refusal"), where, '"refusal"'))
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        url = url if isinstance(url, str) else ""
        return Part(PartKind.IMAGE, image_tokens=image_tokens_from_data_url(url))
    if kind in ("input_audio", "file"):
        return Part(PartKind.IMAGE, image_tokens=DEFAULT_IMAGE_TOKENS)
    if not isinstance(kind, str):
        raise where.fail('a content part needs a "type"')
    return Part(PartKind.TEXT, json_text(part))  # an unknown part type: count all it carries


def _flatten(content: object, where: Where) -> tuple[str, int]:
    """A tool result's content as one text plus the tokens of any images in it."""
    parts = _content_parts(content, where)
    text = "\n".join(p.text for p in parts if p.text)
    return text, sum(p.image_tokens for p in parts)


def _tool_calls(calls: object, where: Where) -> tuple[Part, ...]:
    if not isinstance(calls, list):
        raise where.fail(f"tool_calls must be a list, got {type_name(calls)}")
    return tuple(_tool_call(call, where.at(i)) for i, call in enumerate(calls))


def _tool_call(value: object, where: Where) -> Part:
    call = expect_dict(value, where, "a tool call")
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise where.fail('a tool call needs an "id" string')
    function = call.get("function") if "function" in call else call.get("custom")
    function = expect_dict(function, where, 'a tool call\'s "function"')
    name = expect_str(function.get("name"), where.at("function"), '"name"')
    arguments = function.get("arguments", function.get("input", ""))
    if not isinstance(arguments, str):
        arguments = json_text(arguments)  # some logs store the parsed object
    return Part(PartKind.TOOL_CALL, arguments, name, call_id)


def sniff(message: dict) -> bool | None:
    """True if this message can only be OpenAI, False if only Anthropic, None if either."""
    if message.get("role") in ("tool", "developer", "function") or "tool_calls" in message:
        return True
    content = message.get("content")
    if isinstance(content, list):
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind in ("image_url", "input_audio", "refusal", "file"):
                return True
            if kind in (
                "tool_use",
                "tool_result",
                "thinking",
                "redacted_thinking",
                "document",
                "image",
                "server_tool_use",
            ):
                return False
    return None
