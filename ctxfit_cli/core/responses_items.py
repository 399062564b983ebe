"""What each Responses API item is: a message, a call the client answers, its output, or
another item of the model (reasoning, a server tool's record). Shared by the reader
(`formats/responses.py`) and the validator (`validate_responses.py`); imports nothing.
"""

from __future__ import annotations

from typing import Any

#: Items a client answers with an output item of its own, paired by `call_id`.
CALL_TYPES = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "shell_call", "apply_patch_call", "computer_call"}
)
#: The items that answer them.
OUTPUT_TYPES = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "computer_call_output",
    }
)
#: Items the model (or a server tool) produced that carry no call the client answers.
MODEL_RECORDS = frozenset(
    {
        "reasoning",
        "web_search_call",
        "file_search_call",
        "image_generation_call",
        "code_interpreter_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "compaction",
        "tool_search_call",
    }
)
#: Items the client sends that are neither a message nor an output.
CLIENT_ITEMS = frozenset({"item_reference", "mcp_approval_response", "tool_search_output"})
#: Message roles that come from the person or the developer, not from the model.
INPUT_ROLES = frozenset({"user", "system", "developer"})
ROLES = INPUT_ROLES | {"assistant"}
#: Tool types that carry their own `name` (the others, such as `web_search`, are built in).
NAMED_TOOLS = ("function", "custom")


def item_kind(item: dict[str, Any]) -> str:
    """An item's type; the short message form `{"role", "content"}` is a `message`."""
    kind = item.get("type")
    return kind if isinstance(kind, str) else "message" if "role" in item else ""


def is_call(item: dict[str, Any]) -> bool:
    """Whether the client answers this item with an output item."""
    kind = item_kind(item)
    return kind in CALL_TYPES or (kind == "tool_search_call" and _client_search(item))


def is_output(item: dict[str, Any]) -> bool:
    """Whether this item answers a call."""
    kind = item_kind(item)
    return kind in OUTPUT_TYPES or (kind == "tool_search_output" and _client_search(item))


def _client_search(item: dict[str, Any]) -> bool:
    return item.get("execution") != "server" and isinstance(item.get("call_id"), str)


def is_model_item(item: dict[str, Any]) -> bool:
    """Whether the model produced this item (an assistant message, reasoning, a call, a server
    tool's record): the items of one reply stay together, and a reasoning item with them."""
    kind = item_kind(item)
    if kind == "message":
        return item.get("role") == "assistant"
    return (kind in MODEL_RECORDS or kind in CALL_TYPES) and not is_output(item)


def is_known(item: dict[str, Any]) -> bool:
    """Whether ctxfit knows this item's type (and a message's role). One it does not
    (Codex's `additional_tools`, `configuration_update`, whatever comes next) is pinned:
    kept in place as it came, counted, never cleared or left out (DESIGN §14)."""
    kind = item_kind(item)
    if kind == "message":
        return item.get("role") in ROLES
    return kind in MODEL_RECORDS or kind in CALL_TYPES or kind in OUTPUT_TYPES or kind in CLIENT_ITEMS


def call_id_of(item: dict[str, Any]) -> object:
    """The call an output answers. The API's `local_shell_call_output` names it `id`."""
    call_id = item.get("call_id")
    if call_id is None and item_kind(item) == "local_shell_call_output":
        return item.get("id")
    return call_id
