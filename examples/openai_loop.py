"""An agent loop with the OpenAI SDK, fitted to a budget by ctxfit before every call.

    OPENAI_API_KEY=... python examples/openai_loop.py [--budget 60000] [--model gpt-4.1]

(`OPENAI_BASE_URL` points the SDK at another server, e.g. tests/fake_provider.py.) The SDK's
reply message goes into the history as it is; `session.fit(history)` returns the messages to send.
"""

from __future__ import annotations

import argparse
import json
import sys

import openai

import ctxfit_cli
from _tools import DESCRIPTION, SCHEMA, SYSTEM, TASK, read_file

TOOLS = [{"type": "function", "function": {"name": "read_file", "description": DESCRIPTION, "parameters": SCHEMA}}]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=60_000)
    ap.add_argument("--model", default="gpt-4.1")
    ap.add_argument("--max-steps", type=int, default=100)
    args = ap.parse_args()

    client = openai.OpenAI()
    session = ctxfit_cli.Session(budget=args.budget, tools=TOOLS)
    history = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    for step in range(args.max_steps):
        reply = client.chat.completions.create(model=args.model, tools=TOOLS, messages=session.fit(history))
        plan = session.plan
        print(f"step {step}: {plan.tokens_before:,} -> {plan.tokens_after:,} tokens ({plan.stage})", file=sys.stderr)
        message = reply.choices[0].message
        history.append(message)
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            path = json.loads(call.function.arguments)["path"]
            history.append({"role": "tool", "tool_call_id": call.id, "content": read_file(path)})
    print(message.content)


if __name__ == "__main__":
    main()
