"""An agent loop with LangChain messages, fitted to a budget by ctxfit before every call.

    OPENAI_API_KEY=... python examples/langchain_loop.py [--budget 60000] [--model gpt-4.1]

Needs `langchain-openai` (any LangChain chat model works the same way). `OPENAI_BASE_URL`
points it at another server, e.g. tests/fake_provider.py. `session.fit(history)` takes and
returns LangChain messages.
"""

from __future__ import annotations

import argparse
import sys

from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

import ctxfit_cli
from _tools import DESCRIPTION, SYSTEM, TASK, read_file


@tool(description=DESCRIPTION)
def read(path: str) -> str:
    return read_file(path)


read.name = "read_file"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=60_000)
    ap.add_argument("--model", default="gpt-4.1")
    ap.add_argument("--max-steps", type=int, default=100)
    args = ap.parse_args()

    model = ChatOpenAI(model=args.model).bind_tools([read])
    session = ctxfit_cli.Session(budget=args.budget, tools=[read])
    history = [SystemMessage(SYSTEM), HumanMessage(TASK)]
    for step in range(args.max_steps):
        reply = model.invoke(session.fit(history))
        plan = session.plan
        print(f"step {step}: {plan.tokens_before:,} -> {plan.tokens_after:,} tokens ({plan.stage})", file=sys.stderr)
        history.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            history.append(ToolMessage(read.invoke(call["args"]), tool_call_id=call["id"]))
    print(reply.content)


if __name__ == "__main__":
    main()
