"""Per-step cost of `ctxfit_cli.Session.fit` in agent loops written with the real SDK objects.

    python bench/loop.py [--calls 200] [--budget 60000] [--loops anthropic,openai,langchain] [--no-doc]

Three loops, as a user writes them (examples/ has the runnable versions): the Anthropic SDK
(`{"role": "assistant", "content": resp.content}` with the SDK's pydantic blocks, tool results
as dicts), the OpenAI SDK (`resp.choices[0].message` appended as it is, `role: "tool"` dicts),
and LangChain (`AIMessage` / `ToolMessage`). Each makes `--calls` model calls; every reply is
built by the SDK's own response class from JSON (`Message.model_validate`,
`ChatCompletion.model_validate`), as the SDK does when a response arrives, and each tool result
is 3,000-40,000 characters of mixed English, Russian, Chinese, Japanese and code. Before every
call the loop runs `session.fit(history)` with a 60,000-token budget.

Per step it measures (a) the `session.fit` call and (b) what estimating only the new messages
costs (`ctxfit_cli.count(new_messages)`: reading them into the model and estimating them, on
the same objects). The overhead is (a) - (b): what ctxfit adds to a step beyond the new
messages. Target: median overhead ≤ 1 ms.

GC pauses are timed with `gc.callbacks` (start to stop of every collection, wall and CPU time)
over the whole loop, SDK reply parsing included, with the SDKs imported; the largest pause inside
`session.fit` and overall are reported. Target: no pause above 10 ms (CPU time: on a shared
machine a collection can be descheduled mid-way; the wall time is reported beside it). Every request is checked to be valid
(`validate_request`, inside `fit`) and within the budget.
"""

from __future__ import annotations

import argparse
import gc
import time
from random import Random

import _common as c

import ctxfit_cli

TARGET_OVERHEAD = 1e-3
TARGET_PAUSE = 10e-3
SYSTEM = "You are a careful research assistant. Read the files you are asked to read and report what they say."
TASK = "Read the chapters one by one with read_file and summarise each."


class Pauses:
    """Every cyclic GC pass: its wall and CPU duration, generation, and whether it ran inside
    ctxfit. (On a shared machine a pass can be descheduled: the CPU time is its own work.)"""

    def __init__(self) -> None:
        self.inside = False
        self.all: list[tuple[float, float, int, bool]] = []
        self._start = self._cpu = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start, self._cpu = time.perf_counter(), time.thread_time()
        else:
            self.all.append((time.perf_counter() - self._start, time.thread_time() - self._cpu,
                             info["generation"], self.inside))


def results(calls: int, seed: int) -> list[str]:
    rng = Random(seed)
    return [c.mixed_text(rng.randint(3_000, 40_000), seed=f"loop{i % 97}") for i in range(calls)]


class AnthropicLoop:
    name = "Anthropic SDK"

    def __init__(self) -> None:
        from anthropic.types import Message
        self.Message = Message
        self.tools = [{"name": "read_file", "description": "Read a file.",
                       "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]

    def start(self) -> list:
        return [{"role": "user", "content": TASK}]

    def session(self, budget: int) -> ctxfit_cli.Session:
        return ctxfit_cli.Session(budget=budget, system=SYSTEM, tools=self.tools)

    def step(self, history: list, i: int, result: str) -> list:
        resp = self.Message.model_validate({
            "id": f"msg_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": f"Reading chapter {i}."},
                        {"type": "tool_use", "id": f"toolu_{i:06d}", "name": "read_file",
                         "input": {"path": f"chapter_{i}.md"}}],
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 1000, "output_tokens": 40}})
        new = [{"role": "assistant", "content": resp.content},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": resp.content[1].id,
                                              "content": result}]}]
        history.extend(new)
        return new


class OpenAILoop:
    name = "OpenAI SDK"

    def __init__(self) -> None:
        from openai.types.chat import ChatCompletion
        self.ChatCompletion = ChatCompletion
        self.tools = [{"type": "function", "function": {
            "name": "read_file", "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]

    def start(self) -> list:
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]

    def session(self, budget: int) -> ctxfit_cli.Session:
        return ctxfit_cli.Session(budget=budget, tools=self.tools)

    def step(self, history: list, i: int, result: str) -> list:
        resp = self.ChatCompletion.model_validate({
            "id": f"chatcmpl-{i}", "object": "chat.completion", "created": 1700000000, "model": "gpt-4.1",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None, "message": {
                "role": "assistant", "content": None, "refusal": None,
                "tool_calls": [{"id": f"call_{i:06d}", "type": "function", "function": {
                    "name": "read_file", "arguments": f'{{"path": "chapter_{i}.md"}}'}}]}}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 40, "total_tokens": 1040}})
        message = resp.choices[0].message
        new = [message, {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": result}]
        history.extend(new)
        return new


class LangChainLoop:
    name = "LangChain"

    def __init__(self) -> None:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
        self.AIMessage, self.HumanMessage, self.SystemMessage, self.ToolMessage = (
            AIMessage, HumanMessage, SystemMessage, ToolMessage)

    def start(self) -> list:
        return [self.SystemMessage(SYSTEM), self.HumanMessage(TASK)]

    def session(self, budget: int) -> ctxfit_cli.Session:
        return ctxfit_cli.Session(budget=budget)

    def step(self, history: list, i: int, result: str) -> list:
        call_id = f"call_{i:06d}"
        new = [self.AIMessage(content=f"Reading chapter {i}.", tool_calls=[
                   {"name": "read_file", "args": {"path": f"chapter_{i}.md"}, "id": call_id}]),
               self.ToolMessage(content=result, tool_call_id=call_id)]
        history.extend(new)
        return new


LOOPS = {"anthropic": AnthropicLoop, "openai": OpenAILoop, "langchain": LangChainLoop}


def run(loop, calls: int, budget: int, texts: list[str]) -> dict:
    pauses = Pauses()
    history = loop.start()
    session = loop.session(budget)
    session.fit(history)
    fit_times, new_times, stages = [], [], {}
    gc.collect()
    gc.callbacks.append(pauses)
    try:
        for i in range(calls):
            new = loop.step(history, i, texts[i])
            start = time.perf_counter()
            ctxfit_cli.count(new, dialect=session.dialect)
            new_times.append(time.perf_counter() - start)
            pauses.inside = True
            start = time.perf_counter()
            sent = session.fit(history)
            fit_times.append(time.perf_counter() - start)
            pauses.inside = False
            plan = session.plan
            if plan.tokens_after > budget:
                raise SystemExit(f"{loop.name}: step {i} is over the budget ({plan.tokens_after:,})")
            stages[plan.stage] = stages.get(plan.stage, 0) + 1
            del sent
    finally:
        gc.callbacks.remove(pauses)
    overhead = [f - n for f, n in zip(fit_times, new_times)]
    return {
        "fit": c.median(fit_times), "new": c.median(new_times), "overhead": c.median(overhead),
        "overhead_p90": sorted(overhead)[int(0.9 * len(overhead))],
        "max_pause_inside": max((d for d, _, _, inside in pauses.all if inside), default=0.0),
        "max_pause": max((d for d, _, _, _ in pauses.all), default=0.0),
        "max_pause_cpu": max((cpu for _, cpu, _, _ in pauses.all), default=0.0),
        "collections": len(pauses.all), "full": sum(1 for _, _, g, _ in pauses.all if g == 2),
        "messages": len(history), "stages": stages, "last": session.plan,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--budget", type=int, default=60_000)
    ap.add_argument("--loops", default="anthropic,openai,langchain")
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()

    loops = [LOOPS[name]() for name in args.loops.split(",")]  # every SDK imported before timing
    texts = results(args.calls, seed=5)
    rows, ok = [], True
    for loop in loops:
        r = run(loop, args.calls, args.budget, texts)
        good = r["overhead"] <= TARGET_OVERHEAD and r["max_pause_cpu"] <= TARGET_PAUSE
        ok = ok and good
        stages = ", ".join(f"{k} {v}" for k, v in sorted(r["stages"].items()))
        rows.append([loop.name, r["messages"], c.fmt_s(r["fit"]), c.fmt_s(r["new"]), c.fmt_s(r["overhead"]),
                     c.fmt_s(r["overhead_p90"]), f"{r['collections']} ({r['full']} full)",
                     c.fmt_s(r["max_pause_inside"]), c.fmt_s(r["max_pause"]), c.fmt_s(r["max_pause_cpu"]),
                     stages, c.verdict(good)])
        print(f"{loop.name}: fit {c.fmt_s(r['fit'])}, new messages {c.fmt_s(r['new'])}, overhead median "
              f"{c.fmt_s(r['overhead'])} (p90 {c.fmt_s(r['overhead_p90'])}); GC {r['collections']} passes, "
              f"{r['full']} full, max pause {c.fmt_s(r['max_pause'])} wall, {c.fmt_s(r['max_pause_cpu'])} CPU "
              f"(inside fit {c.fmt_s(r['max_pause_inside'])}); "
              f"last request {r['last'].tokens_before:,} -> {r['last'].tokens_after:,} tokens ({r['last'].stage})")
    table = c.table(["loop", "messages", "fit (median)", "new messages alone", "overhead (median)",
                     "overhead p90", "GC passes", "max GC pause in fit", "max GC pause in loop",
                     "max GC pause, CPU time",
                     "stages", "verdict"], rows)
    if not args.no_doc:
        c.write_section("loop", c.section(
            "Library in an agent loop (bench/loop.py)",
            f"{args.calls} model calls per loop, budget {args.budget:,}, tool results of 3,000-40,000 "
            "characters of mixed text, SDK replies built by the SDKs' own classes. Overhead = "
            "`session.fit(history)` minus estimating only the new messages (`ctxfit_cli.count`). "
            "GC pauses from `gc.callbacks`, over the whole loop.",
            c.command_line(), table,
            "Targets: median overhead ≤ 1 ms; no GC pause above 10 ms, judged on the pause's CPU time "
            "(on this shared machine a pass is sometimes descheduled, which its wall time shows). "
            f"Overall: {c.verdict(ok)}"))
    print(table)


if __name__ == "__main__":
    main()
