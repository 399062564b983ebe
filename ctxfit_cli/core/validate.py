"""Is a request valid for its dialect? One function lists every problem it finds.

Checked for both dialects: every tool call is answered by its result in the right place, every
result answers a call. OpenAI: the `role: "tool"` results of an assistant message's calls come
right after it. Anthropic: the first message is from the user, roles alternate, and the user
message right after an assistant message with `tool_use` blocks starts with their
`tool_result` blocks.

>>> validate_request({"messages": [{"role": "user", "content": "hi"}]}, "anthropic")
[]
>>> validate_request({"messages": [{"role": "assistant", "content": "hi"}]}, "anthropic")
['messages[0]: the first message must be from the user, not assistant']
"""

from __future__ import annotations


def validate_request(payload: dict, dialect: str) -> list[str]:
    """The problems of a request payload (an empty list when it is valid).

    >>> validate_request({"messages": [{"role": "user", "content": "hi"},
    ...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}]}, "openai")
    ["messages[1]: call 'c1' has no result"]
    """
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        return ['"messages" must be a non-empty list']
    if dialect == "anthropic":
        return _anthropic(messages)
    return _openai(messages)


def _openai(messages: list) -> list[str]:
    problems: list[str] = []
    waiting: dict[str, int] = {}  # calls of the last assistant message not yet answered
    answered: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id in waiting:
                del waiting[call_id]
                answered.add(call_id)
            elif call_id in answered:
                problems.append(f"messages[{i}]: a second result for call {call_id!r}")
            else:
                problems.append(f"messages[{i}]: result for call {call_id!r} does not follow its call")
            continue
        for call_id, at in waiting.items():
            problems.append(f"messages[{at}]: call {call_id!r} has no result before messages[{i}]")
        waiting = {}
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                waiting[call.get("id")] = i
    for call_id, at in waiting.items():
        problems.append(f"messages[{at}]: call {call_id!r} has no result")
    return problems


def _anthropic(messages: list) -> list[str]:
    problems: list[str] = []
    if messages[0].get("role") != "user":
        problems.append(f"messages[0]: the first message must be from the user, not {messages[0].get('role')}")
    calls: list[str] = []
    previous_role = None
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"messages[{i}]: role must be user or assistant, not {role!r}")
        if role == previous_role:
            problems.append(f"messages[{i}]: two {role} messages in a row (roles must alternate)")
        blocks = message.get("content")
        blocks = blocks if isinstance(blocks, list) else []
        results = [b.get("tool_use_id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if role == "user":
            leading = 0
            while leading < len(blocks) and isinstance(blocks[leading], dict) and blocks[leading].get("type") == "tool_result":
                leading += 1
            if leading != len(results):
                problems.append(f"messages[{i}]: tool_result blocks must come before any other content")
            for call_id in results:
                if call_id not in calls:
                    problems.append(f"messages[{i}]: result for call {call_id!r} does not follow its call")
            for call_id in calls:
                if call_id not in results:
                    problems.append(f"messages[{i}]: call {call_id!r} has no result here")
            calls = []
        elif role == "assistant":
            if calls:
                problems.extend(f"messages[{i}]: call {c!r} has no result before this message" for c in calls)
            calls = [b.get("id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        previous_role = role
    problems.extend(f"messages[{len(messages) - 1}]: call {c!r} has no result" for c in calls)
    return problems
