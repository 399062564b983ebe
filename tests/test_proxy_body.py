"""The proxy reads each body of a conversation re-parsing only what changed: always the same JSON
as a full parse, whatever the client's formatting, key order or edits."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfit_cli.serve.body import BodyError, BodyReader, common_prefix

TEXT = st.lists(st.sampled_from(list("ab \"\\\n{}[],:") + ["é", "Привет", "世界", "👋", "\u2028"]),
                max_size=30).map("".join)
MESSAGE = st.builds(lambda role, text, n: {"role": role, "content": [{"type": "text", "text": text}], "n": n},
                    st.sampled_from(["user", "assistant"]), TEXT, st.integers(0, 10**6))
FORMATS = {
    "orjson": orjson.dumps,
    "python-default": lambda v: json.dumps(v).encode(),
    "python-compact": lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode(),
    "indented": lambda v: json.dumps(v, indent=2, ensure_ascii=False).encode(),
}
ORDERS = {
    "messages-last": lambda h, m, t: {**h, **t, "messages": m},
    "messages-first": lambda h, m, t: {"messages": m, **h, **t},
    "messages-middle": lambda h, m, t: {**h, "messages": m, **t},
}
EDIT = st.sampled_from(["append", "append2", "mark-last", "edit-early", "drop-tail", "change-head", "toggle-tail"])


def request(order: str, head: dict, messages: list, tail: dict) -> dict:
    return ORDERS[order](head, messages, tail)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(FORMATS)), st.sampled_from(sorted(ORDERS)), st.lists(MESSAGE, min_size=1, max_size=6),
       st.lists(st.tuples(EDIT, MESSAGE), min_size=1, max_size=8))
def test_every_read_equals_a_full_parse(fmt, order, messages, edits):
    reader = BodyReader()
    head, tail = {"model": "m", "system": "Be brief. Привет"}, {"max_tokens": 10}
    previous = None
    for kind, message in [("none", None), *edits]:
        messages = list(messages)
        if kind == "append":
            messages.append(message)
        elif kind == "append2":
            messages += [message, {**message, "n": -1}]
        elif kind == "mark-last":
            messages[-1] = {**messages[-1], "cache_control": {"type": "ephemeral"}}
        elif kind == "edit-early":
            messages[0] = message
        elif kind == "drop-tail" and len(messages) > 1:
            messages.pop()
        elif kind == "change-head":
            head = {**head, "system": head["system"] + "!"}
        elif kind == "toggle-tail":
            tail = {**tail, "stream": not tail.get("stream", False)}
        value = request(order, head, messages, tail)
        body = FORMATS[fmt](value)
        read = reader.read(body)
        assert read == json.loads(body)
        assert list(read) == list(value)  # the keys, in their order
        if previous is not None:  # an unchanged leading message is the very object read before
            for i in range(reader.reused):
                assert read["messages"][i] is previous[i]
        previous = read["messages"]
        written = reader.layout.write(read["messages"])
        assert json.loads(written) == json.loads(body)
        for start, end in reader.spans:
            assert body[start:end] in written  # unchanged messages leave byte for byte


def test_a_grown_body_reuses_the_messages_it_had():
    reader = BodyReader()
    messages = [{"role": "user", "content": "x" * 1000}]
    for step in range(20):
        messages.append({"role": "assistant" if step % 2 == 0 else "user", "content": f"step {step} é"})
        read = reader.read(orjson.dumps({"model": "m", "messages": messages, "stream": True}))
        assert read["messages"] == messages
        assert reader.reused == (len(messages) - 1 if step else 0)


def test_a_changed_message_is_written_and_the_others_spliced():
    reader = BodyReader()
    body = b'{"messages": [ {"role": "user", "content": "caf\\u00e9"} ,  {"role": "assistant", "content": "b"} ], "x": 1}'
    read = reader.read(body)
    changed = [read["messages"][0], {"role": "assistant", "content": "cleared"}]
    written = reader.layout.write(changed)
    assert written == (b'{"messages": [{"role": "user", "content": "caf\\u00e9"},'
                       b'{"role":"assistant","content":"cleared"}], "x": 1}')


@pytest.mark.parametrize("body", [b"[1]", b"{}", b'{"messages": 3}', b'{"messages": [1,]}', b"\xff",
                                  b'{"a": 1 "b": 2}', b'{"messages": []} x'])
def test_what_is_not_a_request_is_refused(body):
    with pytest.raises(BodyError):
        BodyReader().read(body)


def test_common_prefix_over_chunks():
    a = b"x" * 200_000 + b"a"
    assert common_prefix(a, b"x" * 200_000 + b"b") == 200_000
    assert common_prefix(a, a) == len(a)
    assert common_prefix(b"", a) == 0


@pytest.mark.parametrize("grown", [False, True], ids=["read-whole", "read-after-the-unchanged-part"])
def test_repeated_messages_keys_are_read_as_the_provider_reads_them(grown):
    """The last key wins (as the provider parses it): that array is fitted and written back."""
    reader = BodyReader()
    small = b'{"model": "m", "messages": [{"role": "user", "content": "small"}]'
    big = b'[{"role": "user", "content": "big"}, {"role": "assistant", "content": "one"}]'
    if grown:  # the same conversation one step earlier, without the second key
        reader.read(small + b"}")
    body = small + b', "messages": ' + big + b"}"
    read = reader.read(body)
    assert read == json.loads(body) and read["messages"][0]["content"] == "big"
    written = reader.layout.write([read["messages"][0], {"role": "assistant", "content": "cleared"}])
    assert json.loads(written)["messages"][1]["content"] == "cleared"
    assert written.startswith(small)  # the first key's array goes on as sent


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(FORMATS)), st.lists(MESSAGE, min_size=2, max_size=6),
       st.lists(st.tuples(EDIT, MESSAGE, st.sets(st.integers(0, 30)), st.booleans()), min_size=1, max_size=10))
def test_a_body_written_back_from_where_it_changed_is_the_body_written_whole(fmt, messages, steps):
    """A reader writes each fitted body again only from the first message that is not the same
    object as last time: the bytes are those of writing it whole, as the history grows, results
    are cleared (a changed copy made once per message, as a session keeps it) and the start is
    left out."""
    reader = BodyReader()
    head, tail = {"model": "m", "system": "Be brief."}, {"max_tokens": 10}
    copies: dict[int, dict] = {}
    cleared: set[int] = set()
    for kind, message, clear, drop in [("none", messages[0], set(), False), *steps]:
        messages = list(messages)
        if kind in ("append", "append2", "mark-last"):
            messages.append(message)
        elif kind == "edit-early":
            messages[0] = message
        elif kind == "change-head":
            head = {**head, "system": head["system"] + "!"}
        elif kind == "toggle-tail":
            tail = {**tail, "stream": not tail.get("stream", False)}
        body = FORMATS[fmt](request("messages-middle", head, messages, tail))
        read = reader.read(body)["messages"]
        cleared |= {i for i in clear if i < len(read) - 1}  # (cleared results only grow)
        fitted = [copies.setdefault(id(m), {**m, "content": "cleared"}) if i in cleared else m
                  for i, m in enumerate(read)]
        if drop and len(fitted) > 2:
            fitted = fitted[:1] + fitted[2:]
        layout = reader.layout
        whole = layout._replace(written=None).write(fitted)
        assert layout.write(fitted) == whole
