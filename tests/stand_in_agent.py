"""A stand-in for an agent CLI, for `ctxfit wrap`'s tests: it reads its API's base URL from the
variable the real agent honours and talks to it with the real SDK, as the agent would.

    python tests/stand_in_agent.py anthropic|responses|gemini [-c KEY=VALUE]... [--steps N]
                                   [--exit CODE] [--wait PIDFILE] [--elsewhere URL]

It runs `--steps` requests of a growing tool loop, prints what it saw on stdout, then exits with
`--exit`; with `--wait` it writes its pid to PIDFILE and waits to be signalled (it exits 0 on
SIGINT, as an agent that handles Ctrl-C may, and dies on SIGTERM). `-c openai_base_url="URL"`
is read as Codex 0.171 reads it (over `OPENAI_BASE_URL`); `--elsewhere URL` talks to URL whatever
it was given, as a newer agent that reads its base URL from somewhere wrap does not set.
"""

from __future__ import annotations

import argparse
import json
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


def gemini_loop(steps: int) -> int:
    from google import genai
    from google.genai import types
    client = genai.Client()  # GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY, as Gemini CLI reads them
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(name="read_file", parameters=types.Schema(
        type="OBJECT", properties={"path": types.Schema(type="STRING")}))])
    config = types.GenerateContentConfig(system_instruction="Be brief.", tools=[tool], max_output_tokens=8192)
    contents = [types.Content(role="user", parts=[types.Part.from_text(text="Read the files (stand-in).")])]
    for step in range(steps):
        if step % 2:  # streamed, as Gemini CLI asks (streamGenerateContent?alt=sse)
            chunks = list(client.models.generate_content_stream(model="gemini-2.5-pro", contents=contents,
                                                                config=config))
            content = types.Content(role="model", parts=[p for c in chunks for p in c.candidates[0].content.parts])
        else:
            content = client.models.generate_content(model="gemini-2.5-pro", contents=contents,
                                                     config=config).candidates[0].content
        call = next(p.function_call for p in content.parts if p.function_call)
        answer = types.FunctionResponse(id=call.id, name=call.name, response={"output": "z" * 40_000})
        contents += [content, types.Content(role="user", parts=[types.Part(function_response=answer)])]
    return len(contents)


def code_assist_loop(steps: int) -> int:
    """Gemini CLI signed in with Google: its requests to Code Assist, at CODE_ASSIST_ENDPOINT,
    as gemini-cli's `code_assist/server.ts` sends them (no SDK speaks this API: plain HTTP)."""
    import httpx
    endpoint = os.environ["CODE_ASSIST_ENDPOINT"].rstrip("/")
    headers = {"authorization": "Bearer ya29.stand-in-google-login", "content-type": "application/json"}
    contents = [{"role": "user", "parts": [{"text": "Read the files (stand-in)."}]}]
    tools = [{"functionDeclarations": [{"name": "read_file", "parameters": {"type": "OBJECT"}}]}]
    with httpx.Client(timeout=60) as client:
        for step in range(steps):
            request = {"contents": contents, "systemInstruction": {"role": "user", "parts": [{"text": "Be brief."}]},
                       "tools": tools, "generationConfig": {"maxOutputTokens": 8192}, "session_id": "stand-in"}
            body = {"model": "gemini-2.5-pro", "project": "stand-in-project", "user_prompt_id": f"p{step}",
                    "request": request}
            if step % 2:  # streamed, as Gemini CLI asks
                reply = client.post(f"{endpoint}/v1internal:streamGenerateContent", params={"alt": "sse"},
                                    json=body, headers=headers)
                chunks = [json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:")]
                parts = [p for c in chunks for p in c["response"]["candidates"][0]["content"]["parts"]]
            else:
                reply = client.post(f"{endpoint}/v1internal:generateContent", json=body, headers=headers)
                parts = reply.json()["response"]["candidates"][0]["content"]["parts"]
            reply.raise_for_status()
            call = next(p["functionCall"] for p in parts if "functionCall" in p)
            answer = {"functionResponse": {"id": call["id"], "name": call["name"], "response": {"output": "z" * 40_000}}}
            contents += [{"role": "model", "parts": parts}, {"role": "user", "parts": [answer]}]
    return len(contents)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("api", choices=["anthropic", "responses", "gemini"])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--exit", type=int, default=0)
    parser.add_argument("--wait")
    parser.add_argument("-c", dest="config", action="append", default=[])
    parser.add_argument("--elsewhere")
    args = parser.parse_args()
    config = dict(option.split("=", 1) for option in args.config)
    if "openai_base_url" in config:
        os.environ["OPENAI_BASE_URL"] = config["openai_base_url"].strip('"')
    if args.elsewhere:
        for variable in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "CODE_ASSIST_ENDPOINT"):
            if os.environ.get(variable):
                os.environ[variable] = args.elsewhere + ("/v1" if variable == "OPENAI_BASE_URL" else "")
    loop = {"anthropic": anthropic_loop, "responses": responses_loop, "gemini": gemini_loop}[args.api]
    if args.api == "gemini" and os.environ.get("CODE_ASSIST_ENDPOINT"):
        loop = code_assist_loop  # (as Gemini CLI signed in with Google)
    seen = loop(args.steps)
    base = next(os.environ[v] for v in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL",
                                        "CODE_ASSIST_ENDPOINT") if os.environ.get(v))
    print(f"stand-in: {seen} items, base URL {base}", flush=True)
    if args.wait:
        signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
        with open(args.wait, "w") as f:
            f.write(str(os.getpid()))
        while True:
            time.sleep(3600)
    sys.exit(args.exit)


if __name__ == "__main__":
    main()
