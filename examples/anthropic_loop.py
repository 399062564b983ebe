"""An agent loop with the Anthropic SDK, fitted to a budget by ctxfit before every call.

    ANTHROPIC_API_KEY=... python examples/anthropic_loop.py [--budget 60000] [--model claude-sonnet-4-5]

(`ANTHROPIC_BASE_URL` points the SDK at another server, e.g. tests/fake_provider.py.) The loop
keeps its own history the usual way; `session.fit(history)` returns the messages to send.
"""

from __future__ import annotations

import argparse
import sys

import anthropic

import ctxfit_cli
from _tools import DESCRIPTION, SCHEMA, SYSTEM, TASK, read_file

TOOLS = [{"name": "read_file", "description": DESCRIPTION, "input_schema": SCHEMA}]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=60_000)
    ap.add_argument("--model", default="claude-sonnet-4-5")
    ap.add_argument("--max-steps", type=int, default=100)
    args = ap.parse_args()

    client = anthropic.Anthropic()
    session = ctxfit_cli.Session(budget=args.budget, system=SYSTEM, tools=TOOLS)
    history = [{"role": "user", "content": TASK}]
    for step in range(args.max_steps):
        reply = client.messages.create(model=args.model, max_tokens=1024, system=SYSTEM, tools=TOOLS,
                                       messages=session.fit(history))
        plan = session.plan
        print(f"step {step}: {plan.tokens_before:,} -> {plan.tokens_after:,} tokens ({plan.stage})", file=sys.stderr)
        history.append({"role": "assistant", "content": reply.content})
        if reply.stop_reason != "tool_use":
            break
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": block.id, "content": read_file(block.input["path"])}
            for block in reply.content if block.type == "tool_use"]})
    print("".join(block.text for block in reply.content if block.type == "text"))


if __name__ == "__main__":
    main()
