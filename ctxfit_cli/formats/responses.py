"""OpenAI Responses API `input` items (what Codex CLI sends), read into the transcript model.

A request is `{"model", "instructions"?, "tools"?, "input": [item, ...], ...}`. The items, as
the API reference, the openai SDK's `ResponseInputItemParam` and Codex's `ResponseItem` define
them:

- `message`: `{"type": "message", "role", "content"}` or the short `{"role", "content"}`;
  content is a string or a list of `input_text` / `output_text` / `refusal` / `input_image` /
  `input_file` / `input_audio` parts. `system` and `developer` messages count as system.
- calls the client answers — `function_call` (`arguments` a JSON string), `custom_tool_call`
  (`input`, free text), `local_shell_call`, `shell_call`, `apply_patch_call`, `computer_call` —
  and the outputs that answer them (`*_call_output`), paired by `call_id` whatever their
  kinds (Codex answers a `local_shell_call` with a `function_call_output`).
- `reasoning`: `summary` and `content` texts are counted; `encrypted_content` is opaque and not
  counted (as an Anthropic thinking signature), and always passed back byte for byte.
- server-side records (`web_search_call`, `image_generation_call`, `mcp_call`, ...) are counted
  as the JSON they are.
- an item of a type ctxfit does not know (Codex 0.171's `additional_tools` and
  `configuration_update`, future ones), or a message of a role it does not know, is pinned: a
  message of its own, kept in place as it came, counted as its JSON, never cleared or left out.

One model reply is several items (reasoning, a message, calls). The items the model produced,
when consecutive, are one assistant message of the model (`group_spans`): the fitter sees the
same shape as a Chat Completions assistant message with its tool calls, so a reasoning item is
never separated from the item it precedes, and a reply is never split. Such a message's `raw`
is its items' bytes joined by commas: written into the `input` array, they are the items as
they came. Each output is a message of its own (role `tool`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.model import Message, Part, PartKind, Role
from ..core.responses_items import call_id_of, is_call, is_known, is_model_item, is_output, item_kind
from ..counters.images import DEFAULT_IMAGE_TOKENS, image_tokens_from_data_url
from .common import Where, expect_dict, json_text, type_name

ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT, "system": Role.SYSTEM, "developer": Role.SYSTEM}
#: The name a call of a built-in tool is counted under (a function or custom call has its own).
_BUILT_IN = {
    "local_shell_call": "local_shell",
    "shell_call": "shell",
    "apply_patch_call": "apply_patch",
    "computer_call": "computer",
    "tool_search_call": "tool_search",
}
#: Content parts whose `text` is what the model reads.
_TEXT_PARTS = ("input_text", "output_text", "text", "summary_text", "reasoning_text")


def parse_message(value: object, raw: bytes, where: Where) -> Message:
    """One item, or the items of one model reply (a list), as one `Message`.

    >>> parse_message({"type": "function_call_output", "call_id": "c1", "output": "ok"}, b"", Where("x", 1)).parts
    ... # doctest: +NORMALIZE_WHITESPACE
    (Part(kind=<PartKind.TOOL_RESULT: 'tool_result'>, text='ok', tool='', call_id='c1', image_tokens=0,
          is_error=False),)
    """
    if isinstance(value, list):
        parts = tuple(
            part
            for i, item in enumerate(value)
            for part in _item_parts(expect_dict(item, where.at(i), "an item"), where.at(i))
        )
        return Message(Role.ASSISTANT, parts, raw, where.line)
    item = expect_dict(value, where, "an item")
    if item_kind(item) and not is_known(item):  # kept as it came, counted (DESIGN §14)
        return Message(Role.SYSTEM, (Part(PartKind.TEXT, json_text(item)),), raw, where.line, pinned=True)
    return Message(_role(item, where), _item_parts(item, where), raw, where.line)


def group_spans(items: Sequence[object]) -> list[tuple[int, int]]:
    """Where each message starts and ends among `items`: consecutive items of the model are one.

    >>> group_spans([{"role": "user", "content": "hi"}, {"type": "reasoning", "summary": []},
    ...              {"type": "function_call", "call_id": "c", "name": "ls", "arguments": "{}"},
    ...              {"type": "function_call_output", "call_id": "c", "output": ""}])
    [(0, 1), (1, 3), (3, 4)]
    """
    spans: list[tuple[int, int]] = []
    previous_model = False
    for i, item in enumerate(items):
        model = isinstance(item, dict) and is_model_item(item)
        if model and previous_model:
            spans[-1] = (spans[-1][0], i + 1)
        else:
            spans.append((i, i + 1))
        previous_model = model
    return spans


def joins_previous(previous: object, item: object) -> bool:
    """Whether `item` belongs to the same message as the item before it (both the model's)."""
    return isinstance(previous, dict) and isinstance(item, dict) and is_model_item(previous) and is_model_item(item)


def _role(item: dict, where: Where) -> Role:
    kind = item_kind(item)
    if kind == "message":
        role = item.get("role")
        if role not in ROLES:
            raise where.fail(f"unknown role {role!r}; expected one of: {', '.join(ROLES)}")
        return ROLES[role]
    if is_output(item):
        return Role.TOOL
    if not kind:
        raise where.fail('an item needs a "type" (or a message its "role")')
    return Role.ASSISTANT if is_model_item(item) else Role.USER


def _item_parts(item: dict, where: Where) -> tuple[Part, ...]:
    kind = item_kind(item)
    if kind == "message":
        return _content(item.get("content"), where.at("content"))
    if kind == "reasoning":
        texts = [p.text for key in ("summary", "content") for p in _content(item.get(key) or [], where.at(key))]
        return (Part(PartKind.THINKING, "\n".join(t for t in texts if t)),)
    if is_call(item):
        return (_call(item, kind, where),)
    if is_output(item):
        return _output(item, kind, where)
    return (Part(PartKind.TEXT, json_text(item)),)  # server tools and future types: all counted


def _call(item: dict, kind: str, where: Where) -> Part:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise where.fail(f'a {kind} item needs a "call_id" string')
    if kind == "function_call":
        arguments = item.get("arguments", "")
        return Part(
            PartKind.TOOL_CALL,
            arguments if isinstance(arguments, str) else json_text(arguments),
            _text(item.get("name")),
            call_id,
        )
    if kind == "custom_tool_call":
        return Part(PartKind.TOOL_CALL, _text(item.get("input")), _text(item.get("name")), call_id)
    sent = {k: v for k, v in item.items() if k in ("action", "actions", "operation", "arguments")}
    return Part(PartKind.TOOL_CALL, json_text(sent), _BUILT_IN.get(kind, kind), call_id)


def _output(item: dict, kind: str, where: Where) -> tuple[Part, ...]:
    call_id = call_id_of(item)
    if not isinstance(call_id, str) or not call_id:
        raise where.fail(f'a {kind} item needs the "call_id" string of its call')
    output = item.get("output", "")
    name = _text(item.get("name"))
    if kind == "computer_call_output":
        # A screenshot: counted as an image beside a result too small to clear (its output
        # must stay a screenshot, so it is never replaced by the note).
        return (Part(PartKind.TOOL_RESULT, "", name, call_id), Part(PartKind.IMAGE, image_tokens=_image(output)))
    if kind == "tool_search_output":  # tool definitions the model loads: counted, never cleared
        return (Part(PartKind.TOOL_RESULT, "", name, call_id), Part(PartKind.TEXT, json_text(item.get("tools", []))))
    if isinstance(output, str):
        return (Part(PartKind.TOOL_RESULT, output, name, call_id),)
    if output is None:
        return (Part(PartKind.TOOL_RESULT, "", name, call_id),)
    if kind == "shell_call_output" and isinstance(output, list):
        text = "\n".join(
            _text(chunk.get(k)) for chunk in output if isinstance(chunk, dict) for k in ("stdout", "stderr")
        )
        return (Part(PartKind.TOOL_RESULT, text, name, call_id),)
    parts = _content(output, where.at("output"))
    text = "\n".join(p.text for p in parts if p.text)
    return (Part(PartKind.TOOL_RESULT, text, name, call_id, sum(p.image_tokens for p in parts)),)


def _content(content: object, where: Where) -> tuple[Part, ...]:
    if isinstance(content, str):
        return (Part(PartKind.TEXT, content),) if content else ()
    if content is None:
        return ()
    if not isinstance(content, list):
        raise where.fail(f"must be a string or a list of parts, got {type_name(content)}")
    return tuple(_part(part, where.at(i)) for i, part in enumerate(content))


def _part(value: object, where: Where) -> Part:
    part = expect_dict(value, where, "a content part")
    kind = part.get("type")
    if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
        return Part(PartKind.TEXT, part["text"])
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return Part(PartKind.TEXT, part["refusal"])
    if kind == "input_image":
        return Part(PartKind.IMAGE, image_tokens=_image(part))
    if kind in ("input_file", "input_audio"):
        return Part(PartKind.IMAGE, image_tokens=DEFAULT_IMAGE_TOKENS)
    if not isinstance(kind, str):
        raise where.fail('a content part needs a "type"')
    return Part(PartKind.TEXT, json_text(part))  # an unknown part type: count all it carries


def _image(value: object) -> int:
    url = value.get("image_url") if isinstance(value, dict) else None
    return image_tokens_from_data_url(url) if isinstance(url, str) else DEFAULT_IMAGE_TOKENS


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def sniff(item: dict) -> bool:
    """Whether a history item can only be a Responses item (a typed item, or a message whose
    parts are Responses parts)."""
    kind = item.get("type")
    if isinstance(kind, str) and kind != "message":
        return True
    content = item.get("content")
    if kind == "message" and isinstance(content, str):
        return True
    return isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") in ("input_text", "output_text", "input_image", "input_file")
        for p in content
    )


def is_request(value: object) -> bool:
    """Whether a JSON document is a Responses request (an `input` list, no `messages`)."""
    return isinstance(value, dict) and isinstance(value.get("input"), list) and "messages" not in value
