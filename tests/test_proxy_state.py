"""The proxy's memory: conversations told apart, sessions bounded (LRU) by bytes, results independent of it."""

from __future__ import annotations

import subprocess
import sys

import orjson
from conftest import Chat, ascii_text

from ctxfit_cli.serve.body import READER_MEMORY, Readers
from ctxfit_cli.serve.conversations import SESSION_MEMORY, Conversations, conversation_key
from ctxfit_cli.serve.fitting import Limits, fit_body, parse


def request(agent: int, calls: int) -> bytes:
    chat = Chat("anthropic", system=None).user(f"Agent {agent}: read the files.")
    for i in range(calls):
        chat.round(ascii_text(600 + i))
    return orjson.dumps({"model": "m", "system": "Be brief.", "messages": chat.lines})


def fit(conversations: Conversations, readers: Readers, body: bytes) -> bytes:
    """As a fitting worker does (`worker.Fitting.fit`)."""
    request_value, layout = parse(readers, body)
    conversation = conversations.get(conversation_key("anthropic", request_value), "anthropic")
    fitted = fit_body(body, request_value, layout, "anthropic", conversation, Limits(3_000)).body
    conversations.fitted(conversation, len(body))
    readers.trim()
    return fitted


def test_conversations_are_told_apart_by_system_prompt_and_first_message():
    one = orjson.loads(request(1, 2))
    assert conversation_key("anthropic", one) == conversation_key("anthropic", orjson.loads(request(1, 5)))
    assert conversation_key("anthropic", one) != conversation_key("anthropic", orjson.loads(request(2, 2)))
    assert conversation_key("anthropic", one) != conversation_key("anthropic", {**one, "system": "Other."})


def test_sessions_are_bounded_and_a_dropped_one_gives_the_same_requests():
    bounded, readers = Conversations(capacity=2), Readers(capacity=2)
    roomy, other_readers = Conversations(capacity=100), Readers(capacity=100)
    for calls in range(1, 12):
        for agent in range(5):  # five agents take turns: sessions are dropped and rebuilt
            body = request(agent, calls)
            assert fit(bounded, readers, body) == fit(roomy, other_readers, body)
    assert len([c for c in bounded._known.values() if c.session is not None]) <= 2 == len(bounded)


def test_sessions_and_readers_are_bounded_by_bytes_and_give_the_same_requests():
    sizes = {agent: len(request(agent, 11)) for agent in range(5)}
    memory = 2 * max(sizes.values())  # room for about two conversations' state
    bounded = Conversations(capacity=100, memory=SESSION_MEMORY * memory)
    readers = Readers(capacity=100, memory=READER_MEMORY * memory)
    roomy, other_readers = Conversations(capacity=100), Readers(capacity=100)
    for calls in range(1, 12):
        for agent in range(5):
            body = request(agent, calls)
            assert fit(bounded, readers, body) == fit(roomy, other_readers, body)
            assert bounded.held() <= SESSION_MEMORY * memory and readers.held() <= READER_MEMORY * memory
    assert len([c for c in bounded._known.values() if c.session is not None]) <= 2


def test_each_body_of_a_team_is_read_by_its_own_conversation_s_reader():
    """Readers are found by the start of their array: agents whose first messages differ only
    past the first bytes, or only in length, and a system prompt that moves the array, each
    step on from their own reader (re-reading only the new messages), never another's."""
    readers = Readers(capacity=100)
    long_start = "Read every chapter of the book and summarise each one in turn. " * 3
    firsts = [f"{long_start}Agent {n}." for n in (1, 2, 12, 123)] + ["Hi", "Hi!"]
    systems = ["Be brief.", "Be brief and careful."]
    histories = {(s, f): [{"role": "user", "content": f}] for s in systems for f in firsts}
    for step in range(6):
        for (system, first), messages in histories.items():
            messages.append({"role": "assistant" if step % 2 == 0 else "user", "content": f"step {step}"})
            body = orjson.dumps({"model": "m", "system": system, "messages": messages})
            reader, _ = readers._lend(body)
            assert reader.read(body)["messages"] == messages
            assert reader.reused == (len(messages) - 1 if step else 0)
            with readers._shelf.guard:
                readers._shelf.put(reader)
    assert readers.held() == sum(2 * len(r.raw) for r in readers._shelf.idle)


def test_a_worker_collects_garbage_cycles_every_so_many_answers_and_young_ones_between():
    """What survives an answer is frozen (no full collection walks the conversations' state in
    the middle of a request); a cycle made garbage since is collected at the next full pass."""
    script = """
import gc, weakref
from ctxfit_cli.serve.worker import Collector

class Node:
    pass

collector = Collector(every=3)
old = Node(); old.me = old; held = weakref.ref(old)
collector.answered()
del old
gc.collect()
assert held() is not None, "a frozen cycle was walked"
collector.answered(); collector.answered()
assert held() is None, "the full pass did not collect the cycle"
young = Node(); young.me = young; made = weakref.ref(young); del young
gc.collect()
assert made() is None, "a cycle made since the last answer was not collected"
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
