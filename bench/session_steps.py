"""What one step of an agent loop costs in `Session.fit`, as its history grows to thousands of messages.

    python bench/session_steps.py [--rounds 1600] [--steps 100] [--budget 400000] [--no-doc]

An agent loop calls `session.fit(history)` before each request with its whole history, grown by
one tool round (an assistant `tool_use`, then a `tool_result` of 100-1,500 characters of mixed
text, as most of a Claude Code session's are) since the last call. The history is built as the
SDKs' plain dicts, `--rounds` rounds long (1,600: 3,201 messages, ~390,000 tokens), for the
Anthropic and the OpenAI Chat dialects; the session steps through all of it, one request per
round, and the last `--steps` steps are timed (the first fit of the whole history apart, in a
fresh session). The proxy's fitting workers run the same `Session` for every request they fit.

A step should cost about what its new messages cost, not what the history holds: the figures
are the median and p99 of the timed steps, against the first fit of the same history. Each call
is timed with the cyclic GC off (a collection's pause belongs to no one step).
"""

from __future__ import annotations

import argparse
import gc
import time
from random import Random

import _common as c

from ctxfit_cli import Session


def history(dialect: str, rounds: int, seed: int = 3) -> list[dict]:
    """An agent loop's history of `rounds` tool rounds, as the SDKs' dicts."""
    rng = Random(seed)
    messages: list[dict] = [{"role": "user", "content": "Read every file of the project and fix the failing tests."}]
    for i in range(rounds):
        call, text = f"call_{i:05d}", c.mixed_text(rng.randint(100, 1_500), seed=f"step{i % 97}")
        path = {"path": f"src/module_{i}.py"}
        if dialect == "anthropic":
            messages.append({"role": "assistant", "content": [
                {"type": "text", "text": "Next file."},
                {"type": "tool_use", "id": call, "name": "read_file", "input": path}]})
            messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": text}]})
        else:
            messages.append({"role": "assistant", "content": "Next file.", "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "read_file", "arguments": str(path)}}]})
            messages.append({"role": "tool", "tool_call_id": call, "content": text})
    return messages


def timed(call) -> float:
    gc.disable()
    try:
        start = time.perf_counter()
        call()
        return time.perf_counter() - start
    finally:
        gc.enable()


def run(dialect: str, rounds: int, steps: int, budget: int) -> dict:
    messages = history(dialect, rounds)
    session = Session(budget=budget, dialect=dialect)
    times = []
    for end in range(3, len(messages) + 1, 2):  # a request before each assistant message
        took = timed(lambda: session.fit(messages[:end]))
        if end > len(messages) - 2 * steps:
            times.append(took)
    stage = session.plan.stage if session.plan else "-"
    first = c.median([timed(lambda: Session(budget=budget, dialect=dialect).fit(messages)) for _ in range(3)])
    ordered = sorted(times)
    return {"messages": len(messages), "stage": stage, "first": first, "p50": c.median(times),
            "p99": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], "max": ordered[-1]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1_600)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--budget", type=int, default=400_000)
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    rows = []
    for dialect in ("anthropic", "openai"):
        r = run(dialect, args.rounds, args.steps, args.budget)
        rows.append([dialect, f"{r['messages']:,}", r["stage"], c.fmt_s(r["first"]), c.fmt_s(r["p50"]),
                     c.fmt_s(r["p99"]), c.fmt_s(r["max"]), f"{r['p50'] / r['first']:.1%}"])
        print(f"{dialect}: {r['messages']:,} messages, first fit {c.fmt_s(r['first'])}; a step p50 "
              f"{c.fmt_s(r['p50'])}, p99 {c.fmt_s(r['p99'])}", flush=True)
    table = c.table(["dialect", "messages at the end", "stage at the end", "first fit of the whole history",
                     "a step, p50", "a step, p99", "a step, max", "p50 step / first fit"], rows)
    print(table)
    if not args.no_doc:
        c.write_section("session-steps", c.section(
            "A step of an agent loop in Session.fit (bench/session_steps.py)",
            f"`Session(budget={args.budget:,}).fit(history)` before each request of an agent loop whose history "
            f"grows by one tool round (results of 100-1,500 characters) to {args.rounds:,} rounds; the last "
            f"{args.steps} steps timed, the cyclic GC off during each call.",
            c.command_line(), table,
            "A step costs about what its new messages cost: its median is a small share of the first fit of "
            "the whole history, whatever the history's length (the proxy's one-conversation target, p99 < 20 ms "
            "for a step, includes this and the HTTP and the worker's channel: bench/proxy.py)."))


if __name__ == "__main__":
    main()
