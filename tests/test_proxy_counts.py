"""The proxy counts as `ctxfit fit` does (issue 35 item 2, DESIGN §15): a request nothing has
anchored yet is counted with the counter `fit` picks for its model (the claude profile for a
Claude model), so a fresh proxy never sends a request past the model's window by it; and a
provider's "prompt too long" refusal makes the conversation's next attempt tighter, so a retry is
not refused again.

The conversation is Claude Code's own: each round's tool result is real tool output from a real
Claude Code session (`claude-code/spotter_4d5611e5.jsonl`: code, listings, command output),
denser than the seed rule's four characters per token. The fake provider counts every request
with a real tokenizer (`fake_provider.py --usage hidden`: its replies report no usage, as a
resumed session, a restarted proxy or a balancer leaves a request un-anchored) and refuses one
past its window as Anthropic does. Before this, the seed rule fitted this conversation to
168,000 of its own tokens, which the provider counted at up to 195,000: with 32,000 of reply
room, refused from round 54 on, and refused again on every retry.

    python tests/test_proxy_counts.py   # the figures: the largest request by the provider's count
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from pathlib import Path

import anthropic
import orjson
from conftest import REALWORLD, needs_realworld
from servers import fake_provider, proxy, recorded

from ctxfit_cli.core.choice import counter_for_model

MODEL, ROOM, WINDOW = "claude-sonnet-4-5", 32_000, 200_000  # (the table's window for it)
ROUNDS = 70
KEY = "sk-test-counts"
SYSTEM = "You are Claude Code, Anthropic's official CLI for Claude."
TOOLS = [{"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}]
LOG = REALWORLD / "claude-code" / "spotter_4d5611e5.jsonl"
#: Characters of real tool output per round: 70 rounds come to ~250,000 tokens by the provider's count.
ROUND_CHARS = 12_000


def tool_outputs() -> list[str]:
    """The texts of the log's tool results, in order."""
    texts = []
    for line in LOG.read_text("utf-8").splitlines():
        content = (json.loads(line).get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            inner = block.get("content") if block.get("type") == "tool_result" else None
            if isinstance(inner, list):
                inner = "".join(part.get("text", "") for part in inner if isinstance(part, dict))
            if isinstance(inner, str) and inner.strip():
                texts.append(inner)
    return texts


def rounds(count: int) -> list[str]:
    """`count` tool results of `ROUND_CHARS` each, cut from the log's tool output in order."""
    stream = "\n".join(tool_outputs())
    pieces = [stream[i : i + ROUND_CHARS] for i in range(0, len(stream) - ROUND_CHARS, ROUND_CHARS)]
    return list(itertools.islice(itertools.cycle(pieces), count))


def converse(url: str, results: list[str], retry: bool = False, sent: list | None = None) -> list[str]:
    """Claude Code's loop through the proxy: each tool call answered with the next real result.
    What became of each request ('ok', 'refused'); with `retry`, a refused request is sent again
    unchanged (what an agent's retry does)."""
    client = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
    history: list = [{"role": "user", "content": "Read the project's files one by one and sum them up."}]
    outcomes = []
    while len(outcomes) < 2 * len(results) + 2:
        if sent is not None:  # (what the agent sends, for `figures`)
            sent.append(orjson.dumps({"model": MODEL, "max_tokens": ROOM, "system": SYSTEM, "tools": TOOLS,
                                      "messages": history}))
        try:
            reply = client.messages.create(model=MODEL, max_tokens=ROOM, system=SYSTEM, tools=TOOLS, messages=history,
                                           timeout=120)
        except anthropic.BadRequestError as error:
            outcomes.append("refused")
            assert "too long" in str(error) or "exceed context limit" in str(error), error
            if retry:
                continue
            return outcomes
        outcomes.append("ok")
        calls = [block for block in reply.content if block.type == "tool_use"]
        if not calls:
            return outcomes
        step = int(calls[0].id.rsplit("_", 1)[1])
        history.append({"role": "assistant", "content": [block.model_dump() for block in reply.content]})
        content = [{"type": "tool_result", "tool_use_id": calls[0].id, "content": results[step]}]
        history.append({"role": "user", "content": content})
    return outcomes


@needs_realworld
def test_a_fresh_proxy_keeps_a_70_round_claude_conversation_within_the_window(tmp_path):
    record = tmp_path / "upstream.jsonl"
    results = rounds(ROUNDS)
    with fake_provider(record, ROUNDS, "--window", str(WINDOW), usage="hidden") as provider:
        with proxy(provider.url) as front:
            outcomes = converse(front.url, results)
            log = front.stop()
    sizes = [r["true_tokens"] for r in recorded(record)]
    assert outcomes == ["ok"] * (ROUNDS + 1), (outcomes, log[-2000:])
    assert max(sizes) + ROOM <= WINDOW, max(sizes)
    assert max(sizes) > 100_000  # (the conversation was fitted: it holds ~250,000 tokens in all)
    assert "results cleared" in log and KEY not in log


@needs_realworld
def test_a_refusal_makes_the_retry_tighter_and_it_is_accepted(tmp_path):
    """The provider's window is smaller than the proxy believes (a gateway in front of a smaller
    model, say): its refusal says its count and its limit, and the retry is fitted under them."""
    record = tmp_path / "upstream.jsonl"
    results = rounds(ROUNDS)
    with fake_provider(record, ROUNDS, "--window", "150000", usage="hidden") as provider:
        with proxy(provider.url) as front:
            outcomes = converse(front.url, results, retry=True)
            log = front.stop()
    sent = recorded(record)
    refused = [i for i, outcome in enumerate(outcomes) if outcome == "refused"]
    assert len(refused) == 1 and outcomes.count("ok") == ROUNDS + 1, outcomes
    first = refused[0]
    assert sent[first + 1]["true_tokens"] < sent[first]["true_tokens"]  # the retry: tighter ...
    assert sent[first + 1]["true_tokens"] + ROOM <= 150_000  # ... and within the provider's window
    assert "the conversation's next request is fitted to" in log and "since the provider refused one" in log


@needs_realworld
def test_a_refusal_of_the_reply_room_alone_leaves_the_retry_as_it_was(tmp_path):
    """Anthropic refuses a prompt that fits its window when `max_tokens` does not ("input length
    and `max_tokens` exceed context limit: S + M > N"), and Claude Code lowers `max_tokens` to
    what is left and sends again: the prompt was not too long, so its retry is fitted as before,
    its newest steps kept, and accepted (issue 33 item 7: the real Claude Code resumed at a
    70,000-token window through wrap kept 3 of the 45 messages of its first request before)."""
    record, window, room = tmp_path / "upstream.jsonl", 70_000, 64_000
    history: list = [{"role": "user", "content": "Read the project's files one by one and sum them up."}]
    for step, result in enumerate(rounds(20)):
        call = {"type": "tool_use", "id": f"toolu_{step:04d}", "name": "read_file", "input": {"path": f"f{step}.txt"}}
        history.append({"role": "assistant", "content": [call]})
        history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": result}]})
    with fake_provider(record, 1, "--window", str(window), usage="hidden") as provider:
        with proxy(provider.url, "--window", str(window)) as front:
            client = anthropic.Anthropic(base_url=front.url, api_key=KEY, max_retries=0)
            ask = lambda most: client.messages.create(model=MODEL, max_tokens=most, system=SYSTEM,  # noqa: E731
                                                      tools=TOOLS, messages=history, timeout=120)
            try:
                ask(room)
                raise AssertionError("the provider took a prompt with 64,000 tokens of room out of 70,000")
            except anthropic.BadRequestError as error:
                counted = int(re.search(r"limit: (\d+) \+ 64000 > 70000", str(error)).group(1))
            ask(window - counted - 1_000)  # (Claude Code's own retry: `max_tokens` lowered to what is left)
            log = front.stop()
    first, retry = recorded(record)
    assert first["body"]["messages"] != history  # (fitted: the whole is ~60,000 tokens by the provider's count)
    assert retry["body"]["messages"] == first["body"]["messages"], log[-2000:]
    assert "not tightened" in log and "fitted to 50%" not in log


def figures() -> None:
    """The largest request of the 70-round conversation by the provider's count, and the CPU one
    count of it costs by the counter the proxy now uses and the seed rule it used."""
    import tempfile
    import time

    from ctxfit_cli.serve import fitting
    from ctxfit_cli.serve.limits import LimitRule
    from ctxfit_cli.serve.worker import Fitting, Setup

    results, bodies = rounds(ROUNDS), []
    with tempfile.TemporaryDirectory() as folder:
        record = Path(folder) / "upstream.jsonl"
        with fake_provider(record, ROUNDS, "--window", str(WINDOW), usage="hidden") as provider:
            with proxy(provider.url) as front:
                outcomes = converse(front.url, results, sent=bodies)
        sizes = [r["true_tokens"] for r in recorded(record)]
    print(f"{outcomes.count('ok')} accepted, {outcomes.count('refused')} refused; largest request "
          f"{max(sizes):,} + {ROOM:,} reply room = {max(sizes) + ROOM:,} (window {WINDOW:,})")
    # A worker's CPU per request over the same 71 bodies, by each counter (best of 3 runs).
    for model in (MODEL, ""):
        fitting.counter_for_model = lambda _model, chosen=counter_for_model(model): chosen  # type: ignore
        best = float("inf")
        for _ in range(3):
            worker = Fitting(Setup(LimitRule(), 512 << 20, 256))
            started = time.process_time()
            for ticket, body in enumerate(bodies):
                worker.fit(ticket, "anthropic", body)
            best = min(best, time.process_time() - started)
        counter = counter_for_model(model)[0]
        print(f"{counter.name}: {best / len(bodies) * 1e3:.2f} ms CPU per request in the worker "
              f"({len(bodies)} requests, {sum(map(len, bodies)) / len(bodies) / 1e3:,.0f} KB each on average)")


if __name__ == "__main__":
    sys.exit(figures())
