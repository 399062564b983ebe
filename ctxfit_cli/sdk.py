"""What agent loops hold, as request dicts: plain dicts, the SDKs' pydantic objects, LangChain messages.

An agent loop keeps its history in whatever its SDK gives it: dicts it wrote itself, Anthropic's
`resp.content` blocks inside an assistant dict, OpenAI's `resp.choices[0].message`, google-genai's
`types.Content` (`resp.candidates[0].content`), or LangChain `BaseMessage`s. `as_request_dict` turns
one item into the JSON the provider receives (a pydantic object is `model_dump(exclude_none=True)`-ed
— google-genai's by alias, the API's camelCase —, a LangChain message becomes its OpenAI form), and
`copy_with` makes the changed copy of an item, of the item's own kind, once ctxfit has changed it
(a cleared result, the trimmed-history note).

No SDK is imported here: an object's kind is read from its class, and LangChain is imported only
when a LangChain message is seen (so it is already loaded).
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

import orjson

from .core.model import Dialect
from .errors import BadInput
from .formats import gemini as gemini_format
from .formats import openai as openai_format
from .formats import responses as responses_format
from .formats.common import exact


class RequestDict(NamedTuple):
    """One item of a history as it is sent: the JSON value, its bytes, and the dialect its kind
    implies (None when the item alone does not say)."""

    value: dict
    raw: bytes
    dialect: Dialect | None


def as_request_dict(item: Any, where: str = "message") -> RequestDict:
    """The request JSON of one history item. Raises `BadInput` (naming `where`, e.g.
    `messages[3]`) for what cannot be JSON a provider reads: a lone surrogate, an integer past
    64 bits, nesting past 254 levels, an object JSON has no form for.

    >>> as_request_dict({"role": "user", "content": "hi"}).raw
    b'{"role":"user","content":"hi"}'
    """
    if isinstance(item, dict):
        dumped = _Dumped()
        raw = json_bytes(item, where, default=dumped)
        value = orjson.loads(raw) if dumped.used else item
        return RequestDict(value, raw, dumped.dialect or _sniff(value))
    if _is_langchain(item):
        value = _langchain_dict(item)
        return RequestDict(value, json_bytes(value, where), "openai")
    if hasattr(item, "model_dump"):
        dialect = _sdk_dialect(item)
        value = item.model_dump(exclude_none=True, mode="json", by_alias=dialect == "gemini")
        return RequestDict(value, json_bytes(value, where), dialect or _sniff(value))
    raise TypeError(
        f"a message must be a dict, an SDK message object or a LangChain message, not {type(item).__name__}"
    )


def copy_with(item: Any, value: dict) -> Any:
    """`item` changed to the request JSON `value`, as the same kind of object (a new one).

    A dict becomes the new dict; a LangChain message a copy with the new content; another
    pydantic object its own class validated from `value` (a plain dict if the class refuses)."""
    if isinstance(item, dict):
        return value
    if _is_langchain(item):
        return item.model_copy(update={"content": value.get("content", "")})
    try:
        return type(item).model_validate(value)
    except Exception:  # an SDK class that cannot hold the changed message: the dict is as good
        return value


def plain_json(value: Any, where: str = "value") -> Any:
    """A value that may hold SDK objects (system blocks, tool definitions) as plain JSON;
    `BadInput` naming `where` (`system`, `tools[2]`) for what cannot be JSON (`json_bytes`).

    >>> plain_json([{"name": "read", "input_schema": {}}])
    [{'name': 'read', 'input_schema': {}}]
    """
    if _is_langchain_tool(value):
        from langchain_core.utils.function_calling import convert_to_openai_tool

        return convert_to_openai_tool(value)
    if isinstance(value, list):
        return [plain_json(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return orjson.loads(json_bytes(value, where, default=_Dumped()))


def json_bytes(value: Any, where: str, default: Any = None) -> bytes:
    """`value` as JSON bytes, or `BadInput` saying what in it no JSON reader takes and how to
    fix it: data problems are the caller's input, not a `TypeError` of the library's."""
    try:
        return exact(orjson.dumps(value, default=default))  # kept as a message's bytes: no spare buffer
    except orjson.JSONEncodeError as error:
        raise BadInput(where, None, _unencodable(str(error))) from None


def _unencodable(reason: str) -> str:
    if "surrogates" in reason:
        return (
            "holds a lone UTF-16 surrogate (e.g. '\\ud83d' without its pair), which is not Unicode text "
            "and no provider accepts; repair the text, e.g. text.encode('utf-8', 'replace').decode()"
        )
    if "64-bit" in reason:
        return "holds an integer beyond 64 bits, which JSON readers refuse or round; send it as a string"
    if "Recursion" in reason:
        return "is nested more than 254 levels deep, more than ctxfit's JSON writer takes; flatten it"
    return f"cannot be written as JSON ({reason}); give plain JSON values"


class _Dumped:
    """orjson's `default`: pydantic objects (SDK blocks) as their dicts, None fields dropped.
    Notes whether it was needed and which SDK the objects came from."""

    __slots__ = ("used", "dialect")

    def __init__(self) -> None:
        self.used = False
        self.dialect: Dialect | None = None

    def __call__(self, obj: Any) -> Any:
        if hasattr(obj, "model_dump"):
            self.used = True
            dialect = _sdk_dialect(obj)
            self.dialect = self.dialect or dialect
            return obj.model_dump(exclude_none=True, mode="json", by_alias=dialect == "gemini")
        raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def _sdk_dialect(obj: Any) -> Dialect | None:
    module = type(obj).__module__
    if module.startswith("google.genai"):
        return "gemini"
    if module.startswith("openai.types.responses"):  # `response.output` items
        return "responses"
    package = module.partition(".")[0]
    return "anthropic" if package == "anthropic" else "openai" if package == "openai" else None


def _sniff(value: dict) -> Dialect | None:
    if gemini_format.is_content(value):
        return "gemini"
    if responses_format.sniff(value):
        return "responses"
    if value.get("role") == "system":  # Anthropic takes its system prompt apart from the messages
        return "openai"
    verdict = openai_format.sniff(value)
    return None if verdict is None else "openai" if verdict else "anthropic"


def _is_langchain(item: Any) -> bool:
    global _BaseMessage
    if _BaseMessage is None:
        if "langchain_core" not in sys.modules:
            return False
        from langchain_core.messages import BaseMessage as _BaseMessage
    assert _BaseMessage is not None  # (set just above when it was not)
    return isinstance(item, _BaseMessage)


_BaseMessage: type | None = None  # LangChain's message class, once LangChain is loaded


def _is_langchain_tool(value: Any) -> bool:
    if "langchain_core" not in sys.modules or isinstance(value, (dict, list)):
        return False
    from langchain_core.tools import BaseTool

    return isinstance(value, BaseTool)


def _langchain_dict(message: Any) -> dict:
    from langchain_core.messages.utils import convert_to_openai_messages

    return convert_to_openai_messages(message)
