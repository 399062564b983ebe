"""What a provider does not count in a message: the key that says whether two histories cost the same.

An anchor (DESIGN §11) holds while the prefix it counted is still the prefix sent. "The same"
there means the same to the provider's count, not the same bytes: Claude Code moves its
`cache_control` marker to the newest message at every step, and writes its mid-conversation
system entry as one marked text block when it adds it and as a plain string afterwards. Neither
adds a token, yet each changes an earlier message's bytes, and compared by bytes no reply's count
ever carried over to the next request. `count_key` is a message's bytes with those differences
taken out:

- `cache_control` on a message, on a block of its `content`, or on a block inside a
  `tool_result`'s `content` (Anthropic's prompt-caching marker, which the provider counts as
  nothing; elsewhere, in a tool call's arguments say, the key is text like any other);
- a `content` that is one text block with nothing else in it, written as its string (the API's
  own shorthand: the same block).

Anything else is a change: `true` against `1`, key order, whitespace inside a string. The key
only compares; the bytes sent are always the request's own.

>>> from ctxfit_cli.core.model import Message, Role
>>> block = b'{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}'
>>> marked = Message(Role.USER, (), raw=b'{"role":"user","content":[' + block + b']}')
>>> count_key(marked)
b'{"role":"user","content":"hi"}'
>>> count_key(Message(Role.USER, (), raw=b'{"role":"user","content":"hi"}')) == count_key(marked)
True
"""

from __future__ import annotations

from typing import Any

import orjson

from .model import Message

#: The `Message.memo` key a message's count key is kept under (made once per message).
_MEMO = "count_key"
#: What a message's bytes hold when its key may differ from them (ctxfit writes a message's JSON
#: compact, `formats.common.dumps`): a marker, or a content that may be a single text block.
_MARKER = b'"cache_control"'
_ONE_BLOCK = b'[{"type":"text","text":'
#: Where a block's own blocks are: a tool result's content holds text and image blocks.
_NESTING = ("tool_result",)


def count_key(message: Message) -> bytes:
    """`message.raw` without what the provider does not count (the module's doc), kept with the
    message: most messages' key is their bytes themselves."""
    key = message.memo.get(_MEMO)
    if key is None:
        key = message.memo[_MEMO] = counted_bytes(message.raw)
    return key


def counted_bytes(raw: bytes) -> bytes:
    """The bytes of one message's JSON as `count_key` compares them (`raw` itself when nothing
    in it is uncounted, or it is no one JSON object: a Responses reply's several items).

    >>> a, b = b'{"type":"text","text":"a"}', b'{"type":"text","text":"b"'
    >>> counted_bytes(b'{"role":"user","content":[' + a + b',' + b + b',"cache_control":{"type":"ephemeral"}}]}')
    b'{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}'
    >>> call = b'{"role":"assistant","content":[{"type":"tool_use","id":"t","input":{"cache_control":1}}]}'
    >>> counted_bytes(call) is call  # (a tool's arguments are text the model reads)
    True
    """
    if _MARKER not in raw and _ONE_BLOCK not in raw:
        return raw
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw
    if not isinstance(value, dict):
        return raw
    plain = _unmarked(value)
    return raw if plain is value else orjson.dumps(plain)


def _unmarked(node: dict[str, Any]) -> dict[str, Any]:
    """A message or block without its marker, its content's blocks without theirs and a single
    plain text block as its string (the very `node` when nothing changes)."""
    content = node.get("content")
    plain = _content(content)
    if "cache_control" not in node and plain is content:
        return node
    out = {key: value for key, value in node.items() if key != "cache_control"}
    if "content" in out:
        out["content"] = plain
    return out


def _content(content: Any) -> Any:
    if not isinstance(content, list):
        return content
    blocks = [_block(block) for block in content]
    if len(blocks) == 1 and _plain_text(blocks[0]):
        return blocks[0]["text"]
    return content if all(map(lambda a, b: a is b, blocks, content)) else blocks


def _block(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    if block.get("type") in _NESTING:
        return _unmarked(block)
    if "cache_control" not in block:
        return block
    return {key: value for key, value in block.items() if key != "cache_control"}


def _plain_text(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and block.keys() == {"type", "text"}
        and block["type"] == "text"
        and isinstance(block["text"], str)
    )
