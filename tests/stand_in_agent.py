"""A stand-in for an agent CLI, for `ctxfit wrap`'s tests: it reads its API's base URL from the
variable the real agent honours and talks to it with the real SDK, as the agent would.

    python tests/stand_in_agent.py anthropic|openai|responses [--steps N] [--exit CODE]
                                   [--wait PIDFILE]

It runs `--steps` requests of a growing tool loop, prints what it saw on stdout, then exits with
`--exit`; with `--wait` it writes its pid to PIDFILE and waits to be signalled (it exits 0 on
SIGINT, as an agent that handles Ctrl-C may, and dies on SIGTERM).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time


def anthropic_loop(steps: int) -> int:
    import anthropic
    client = anthropic.Anthropic(max_retries=0)  # ANTHROPIC_BASE_URL, as Claude Code reads it
    history = [{"role": "user", "content": "Read the files (stand-in)."}]
    for _ in range(steps):
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=history,
                                       tools=[{"name": "read_file", "input_schema": {"type": "object"}}])
        tool = next(b for b in reply.content if b.type == "tool_use")
        history += [{"role": "assistant", "content": reply.content},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": "x" * 40_000}]}]
    return len(history)


def responses_loop(steps: int) -> int:
    import openai
    client = openai.OpenAI(max_retries=0)  # OPENAI_BASE_URL, as Codex reads it
    items: list = [{"role": "user", "content": "Read the files (stand-in)."}]
    for _ in range(steps):
        response = client.responses.create(model="gpt-5-codex", input=items, instructions="Be brief.",
                                           tools=[{"type": "function", "name": "read_file", "parameters": {}}])
        items += response.output
        call = next(o for o in response.output if o.type == "function_call")
        items.append({"type": "function_call_output", "call_id": call.call_id, "output": "y" * 40_000})
    return len(items)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("api", choices=["anthropic", "responses"])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--exit", type=int, default=0)
    parser.add_argument("--wait")
    args = parser.parse_args()
    seen = (anthropic_loop if args.api == "anthropic" else responses_loop)(args.steps)
    print(f"stand-in: {seen} items, base URL {os.environ.get('ANTHROPIC_BASE_URL') or os.environ.get('OPENAI_BASE_URL')}",
          flush=True)
    if args.wait:
        signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
        with open(args.wait, "w") as f:
            f.write(str(os.getpid()))
        while True:
            time.sleep(3600)
    sys.exit(args.exit)


if __name__ == "__main__":
    main()
