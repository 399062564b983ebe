"""The proxy sizes each request from the count the provider reported for the one before
(DESIGN §11): a 60-step agent loop, driven by the real `anthropic` and `openai` SDKs through a
real `ctxfit proxy` process, against the fake provider counting every request exactly with a
real tokenizer (`fake_provider.py --usage exact`).

Every text of the conversation is one this repository does not change (the standard library's
code and reference): the figures once came from ctxfit's own source and README, and an edit of
them that changed no behaviour moved the largest request from 99.85% to 100.04% of the budget.

What is left to chance is the estimate of each step's new text, which the anchored count cannot
confirm before the reply (DESIGN §11): a 700-character piece of code can be 40% denser than the
ratio learned from the pieces before it. Counted at the high end of what the replies showed,
the same loop run in process (`Session.record`) on 40 texts in both dialects stayed within the
budget in all 80 runs (largest 99.98%), against 5 runs over it (by 0.08% at most) at the learned
ratio alone (`python tests/test_proxy_anchor.py --texts 40 [--spread 0]`). It is no guarantee:
with this repository's README and an earlier draft of its design document as the system prompt
and task, 3 runs of 80 went over, by 0.34% at most. So the in-process test checks the bound that
holds whatever the text — no count under the true size by more than half of its estimated
part — and the end-to-end one that the proxy keeps its budget.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import gzip
import inspect
import textwrap
from pathlib import Path
from pydoc_data.topics import topics

import anthropic
import httpx
import openai
import orjson
import pytest
from fake_provider import FILES, true_size
from servers import fake_provider, proxy, recorded

from ctxfit_cli import CLEARED_RESULT, Session
from ctxfit_cli.core.reported import Reported
from ctxfit_cli.serve.usage import ReplyUsage

BUDGET = 30_000
STEPS = 60
KEY = "sk-test-anchor"
REFERENCE = "".join(topics[key] for key in sorted(topics))  # the Python language reference, as prose
SYSTEM = REFERENCE[:50_000]  # a long system prompt, as agents have
TASK = "Read the files one by one, against this reference:\n\n" + REFERENCE[50_000:75_000]
TOOLS = [{"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}]
OPENAI_TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
SOURCE = "".join(Path(m.__file__).read_text("utf-8") for m in (argparse, dataclasses, difflib, inspect, textwrap))


def tool_output(step: int, text: int = 0) -> str:
    """What reading a file gives the agent: big files first, then small ones, so the request
    reaches the budget early and then creeps up on it by less than 1% a step. `text` picks
    other pieces of the source."""
    size = 8_000 if step < 6 else 700
    start = (step * 7_919 + text * 104_729) % (len(SOURCE) - size)
    return SOURCE[start : start + size]


def drive_anthropic(url: str) -> None:
    client = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
    history: list = [{"role": "user", "content": TASK}]
    for _ in range(STEPS + 1):
        with client.messages.stream(
            model="claude-sonnet-4-5", max_tokens=1024, system=SYSTEM, tools=TOOLS, messages=history
        ) as stream:
            reply = stream.get_final_message()
        history.append({"role": "assistant", "content": reply.content})
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            return
        step = int(calls[0].id.rsplit("_", 1)[1])
        history.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": calls[0].id, "content": tool_output(step)}],
            }
        )


def drive_openai(url: str) -> None:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0)
    history: list = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    for _ in range(STEPS + 1):
        reply = client.chat.completions.create(model="gpt-4.1", messages=history, tools=OPENAI_TOOLS)
        message = reply.choices[0].message
        history.append(message)
        if not message.tool_calls:
            return
        call = message.tool_calls[0]
        step = int(call.id.rsplit("_", 1)[1])
        history.append({"role": "tool", "tool_call_id": call.id, "content": tool_output(step)})


def run(dialect: str, usage: str, tmp: Path) -> tuple[list[dict], str, dict]:
    """The requests the provider received (each with its true size), the proxy's log and stats."""
    record = tmp / f"{dialect}-{usage}.jsonl"
    with fake_provider(record, steps=STEPS, usage=usage) as provider:
        with proxy(provider.url, "--budget", str(BUDGET)) as front:
            (drive_anthropic if dialect == "anthropic" else drive_openai)(front.url)
            stats = httpx.get(f"{front.url}/ctxfit/stats").json()
            log = front.stop()
    return recorded(record), log, stats


def figures(records: list[dict]) -> dict:
    """Largest true size over the budget, overall and once clearing has started."""
    sizes = [r["true_tokens"] for r in records]
    cleared = next(i for i, r in enumerate(records) if CLEARED_RESULT in orjson.dumps(r["body"]["messages"]).decode())
    return {
        "requests": len(sizes),
        "max": max(sizes) / BUDGET,
        "max_after_clearing": max(sizes[cleared:]) / BUDGET,
        "first_cleared": cleared,
    }


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
def test_every_request_fits_and_the_largest_is_within_one_percent(dialect, tmp_path):
    records, log, stats = run(dialect, "exact", tmp_path)
    assert len(records) == STEPS + 1 and "Traceback" not in log and KEY not in log
    seen = figures(records)
    assert seen["max"] <= 1.0, seen  # every forwarded request's true size within the budget
    # ... and the budget used: clearing starts within 1% of it. (Since issue 35 the proxy counts
    # each model as `fit` does, with its family's profile: where clearing then falls, and how
    # far it clears in one batch, moved, and in 60 steps of 700 characters the conversation no
    # longer grows back to the budget after it: 89% in Chat Completions, 94-99% in Messages.)
    assert seen["max"] >= 0.99 and seen["max_after_clearing"] >= 0.85, seen
    [conversation] = stats["conversations"].values()
    assert conversation["requests_anchored"] == STEPS  # every request after the first
    assert conversation["tokens_confirmed"] > 0
    assert conversation["tokens_after"] == conversation["tokens_confirmed"] + conversation["tokens_estimated"]
    assert "confirmed +" in log or "confirmed -" in log


def loop_in_process(dialect: str, text: int) -> list[int]:
    """The same agent loop through `Session.fit` and `Session.record`, each request counted as
    the fake provider counts it: the true size of every request sent."""
    path = lambda step: FILES[step % len(FILES)]  # noqa: E731 (as the fake provider's replies name them)
    if dialect == "anthropic":
        session, history = Session(BUDGET, system=SYSTEM, tools=TOOLS), [{"role": "user", "content": TASK}]
    else:
        session = Session(BUDGET, tools=OPENAI_TOOLS)
        history = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    sizes = []
    for step in range(STEPS + 1):
        sent = session.fit(history)
        if dialect == "anthropic":
            size = true_size({"system": SYSTEM, "tools": TOOLS, "messages": sent}, dialect)
            session.record({"usage": {"input_tokens": size}})
            history += [
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"Reading {path(step)}."},
                        {
                            "type": "tool_use",
                            "id": f"toolu_{step:04d}",
                            "name": "read_file",
                            "input": {"path": path(step)},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"toolu_{step:04d}", "content": tool_output(step, text)}
                    ],
                },
            ]
        else:
            size = true_size({"tools": OPENAI_TOOLS, "messages": sent}, dialect)
            session.record({"prompt_tokens": size})
            arguments = orjson.dumps({"path": path(step)}).decode()
            history += [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{step:04d}",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": arguments},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": f"call_{step:04d}", "content": tool_output(step, text)},
            ]
        sizes.append(size)
    return sizes


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
def test_the_count_errs_by_the_new_text_only_whatever_the_text(dialect):
    """On other pieces of code, no anchored count is under the request's true size by more than
    half of its estimated part (the new text, and what was cleared), so no request goes over the
    budget by more than that, and the budget is used once clearing has started."""
    counts: list[tuple[int, int]] = []
    fit = Session.fit

    def counted(session: Session, history: list) -> list:
        sent = fit(session, history)
        counts.append((session.plan.tokens_after, session.plan.confirmed))
        return sent

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Session, "fit", counted)
        for text in range(1, 9):
            counts.clear()
            sizes = loop_in_process(dialect, text)
            for size, (count, confirmed) in list(zip(sizes, counts))[1:]:
                assert confirmed and size - count <= abs(count - confirmed) / 2 + 10, (text, size, count)
            first_cleared = next(i for i in range(1, len(sizes)) if sizes[i] < sizes[i - 1])
            assert max(sizes) <= 1.005 * BUDGET, (text, max(sizes) / BUDGET)
            assert max(sizes[first_cleared:]) >= 0.99 * BUDGET, (text, max(sizes[first_cleared:]) / BUDGET)


def test_json_replies_compressed_or_not_and_streams_report_their_prompt():
    completion = orjson.dumps(
        {
            "id": "x",
            "choices": [{"message": {"content": '"usage": {"prompt_tokens": 1}'}}],
            "usage": {"prompt_tokens": 2048, "prompt_tokens_details": {"cached_tokens": 1024}},
        }
    )
    for encoding, body in (("", completion), ("gzip", gzip.compress(completion))):
        usage = ReplyUsage("application/json", encoding)
        for at in range(0, len(body), 7):
            usage.feed(body[at : at + 7])
        assert usage.reported() == Reported(2048, 1024)
    stream = (
        b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'
        b'data: {"choices":[],"usage":{"prompt_tokens":900,"completion_tokens":3}}\n\ndata: [DONE]\n\n'
    )
    usage = ReplyUsage("text/event-stream; charset=utf-8", "")
    for at in range(0, len(stream), 5):
        usage.feed(stream[at : at + 5])
    assert usage.reported() == Reported(900)
    unasked = ReplyUsage("text/event-stream", "")
    unasked.feed(b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n')
    assert unasked.reported() is None
    assert ReplyUsage("application/json", "br").reported() is None


def texts_figures(texts: int) -> None:
    """Over the in-process loop on `texts` texts, per dialect: runs over the budget, the largest
    request, and the lowest largest once clearing started."""
    for dialect in ("anthropic", "openai"):
        largest, after = [], []
        for text in range(texts):
            sizes = loop_in_process(dialect, text)
            first_cleared = next(i for i in range(1, len(sizes)) if sizes[i] < sizes[i - 1])
            largest.append(max(sizes) / BUDGET)
            after.append(max(sizes[first_cleared:]) / BUDGET)
        print(
            f"{dialect:9} {texts} texts: {sum(x > 1 for x in largest)} over the budget, largest {max(largest):.3%}, "
            f"lowest largest once clearing started {min(after):.2%}"
        )


if __name__ == "__main__":
    # The figures: python tests/test_proxy_anchor.py [--texts 40 [--spread 0]]
    import sys
    import tempfile

    if "--texts" in sys.argv:  # the in-process loop on many texts (--spread: core.anchor.SPREAD)
        if "--spread" in sys.argv:
            from ctxfit_cli.core import anchor

            anchor.SPREAD = float(sys.argv[sys.argv.index("--spread") + 1])
        texts_figures(int(sys.argv[sys.argv.index("--texts") + 1]))
        sys.exit(0)
    for dialect in ("anthropic", "openai"):
        for usage in ("exact", "hidden"):
            seen = figures(run(dialect, usage, Path(tempfile.mkdtemp()))[0])
            print(
                f"{dialect:9} {'anchored' if usage == 'exact' else 'estimate alone':14} largest {seen['max']:.2%} "
                f"of the budget, {seen['max_after_clearing']:.2%} once clearing started "
                f"(request {seen['first_cleared']})"
            )
