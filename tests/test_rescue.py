"""A stuck session goes on (DESIGN §14, issue 33 item 7): the real Claude Code resumes a real
session past a provider's window, directly and through `ctxfit wrap`.

The provider is `fake_provider.py --window N`, which refuses past N tokens exactly as Anthropic
does ("prompt is too long: S tokens > N maximum"; "input length and `max_tokens` exceed context
limit: S + M > N", on which Claude Code lowers `max_tokens`). The session is a real Claude Code
2.1 log (one compaction, 157 messages sent on resume, 75,000 tokens by the provider's count),
placed in a throwaway HOME as Claude Code keeps it. At each window tried, through wrap the agent
answers (exit 0), never fails where it recovers alone, and the request answered holds the newest
work: the newest round before the prompt, not the prompt alone.

    CLAUDE=/path/to/claude pytest tests/test_rescue.py    # another Claude Code than the shared one
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from conftest import REALWORLD
from servers import ROOT, fake_provider, recorded

AGENTS = Path(os.environ.get("AGENTS_BIN", "/tmp/agents/node_modules/.bin"))
CLAUDE = Path(os.environ.get("CLAUDE", AGENTS / "claude"))
SESSION = REALWORLD / "claude-code" / "spotter_4d5611e5.jsonl"
#: Windows tried: the prompt alone barely fits the first, most of the session the second.
WINDOWS = (45_000, 70_000)
NOTE = "Earlier conversation was trimmed"


# --- the provider refuses as each provider does ------------------------------------------------


def test_past_its_window_the_fake_provider_refuses_as_each_provider_does(tmp_path):
    """Each dialect's refusal, shaped as its provider's, so the agents' recovery reads it."""
    long = "word " * 3_000
    with fake_provider(tmp_path / "upstream.jsonl", 30, "--window", "1000", usage="exact") as provider:
        post = lambda path, body: httpx.post(provider.url + path, json=body, timeout=30)  # noqa: E731
        anthropic = post("/v1/messages", {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": long}]})
        room = post("/v1/messages", {"model": "m", "max_tokens": 990, "messages": [{"role": "user", "content": "hi"}]})
        chat = post("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": long}]})
        responses = post("/v1/responses", {"model": "m", "input": long})
        stream = post("/v1/responses", {"model": "m", "input": long, "stream": True})
        gemini = post("/v1beta/models/g:generateContent", {"contents": [{"role": "user", "parts": [{"text": long}]}]})
        fits = post("/v1/messages", {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]})
    assert anthropic.status_code == 400 and anthropic.json()["error"]["type"] == "invalid_request_error"
    assert re.fullmatch(r"prompt is too long: \d+ tokens > 1000 maximum", anthropic.json()["error"]["message"])
    assert re.fullmatch(r"input length and `max_tokens` exceed context limit: \d+ \+ 990 > 1000, decrease input "
                        r"length or `max_tokens` and try again", room.json()["error"]["message"])
    assert chat.status_code == 400 and chat.json()["error"]["code"] == "context_length_exceeded"
    assert chat.json()["error"]["message"].startswith("This model's maximum context length is 1000 tokens.")
    assert responses.status_code == 400 and responses.json()["error"]["code"] == "context_length_exceeded"
    assert stream.status_code == 200 and "event: response.failed" in stream.text and "context_length_exceeded" in stream.text
    assert gemini.status_code == 400 and gemini.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert re.fullmatch(r"The input token count \(\d+\) exceeds the maximum number of tokens allowed \(1000\)\.",
                        gemini.json()["error"]["message"])
    assert fits.status_code == 200


# --- the real Claude Code, resumed past the window ---------------------------------------------

needs_claude = pytest.mark.skipif(
    not CLAUDE.exists() or not SESSION.exists(),
    reason=f"needs the real Claude Code at {CLAUDE} (npm i @anthropic-ai/claude-code) and ../shared/realworld",
)


def resume(tmp_path: Path, window: int, through_wrap: bool) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """Claude Code `-p --resume SESSION continue` against the provider's window: (its run, the
    main requests the provider got, each with `ok`, `messages` and its `true_tokens`)."""
    home = tmp_path / ("wrap" if through_wrap else "direct") / str(window)
    work = home / "work"
    work.mkdir(parents=True)
    session = next(json.loads(line)["sessionId"] for line in SESSION.open() if '"sessionId"' in line)
    project = home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(work))
    project.mkdir(parents=True)
    shutil.copy(SESSION, project / f"{session}.jsonl")
    record = home / "upstream.jsonl"
    agent = ["-p", "--resume", session, "continue", "--allowedTools", "Read,Bash(cat:*)"]
    env = {**os.environ, "HOME": str(home), "ANTHROPIC_API_KEY": "test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "PATH": f"{CLAUDE.parent}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    env.pop("ANTHROPIC_BASE_URL", None)
    with fake_provider(record, 0, "--window", str(window), usage="exact") as provider:
        if through_wrap:
            argv = [sys.executable, "-m", "ctxfit_cli", "wrap", "claude", "-u", provider.url, "--window", str(window),
                    "--", *agent]
        else:
            argv, env["ANTHROPIC_BASE_URL"] = [str(CLAUDE), *agent], provider.url
        run = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=240)
    main = []
    for line in recorded(record):
        if line["path"] != "/v1/messages":
            continue
        messages = line["body"]["messages"]
        main.append({"ok": b'"error"' not in base64.b64decode(line["reply"])[:200], "messages": messages,
                     "true_tokens": line.get("true_tokens")})
    return run, main


@needs_claude
@pytest.mark.parametrize("window", WINDOWS)
def test_a_resumed_session_past_the_window_goes_on_through_wrap_with_its_newest_work(tmp_path, window):
    direct, _ = resume(tmp_path, window, through_wrap=False)
    wrapped, requests = resume(tmp_path, window, through_wrap=True)
    assert wrapped.returncode == 0, wrapped.stdout[-500:] + wrapped.stderr[-1500:]
    assert direct.returncode != 0 or wrapped.returncode == 0  # never fails where the agent recovers alone
    answered = [r for r in requests if r["ok"]]
    assert answered, "the provider answered no request"
    messages = answered[0]["messages"]
    assert answered[0]["true_tokens"] <= window
    assert "continue" in json.dumps(messages[-1])  # the prompt, last
    assert NOTE in json.dumps(messages[0])  # trimmed, and says so
    assert any(m["role"] == "assistant" for m in messages[1:-1]), "the newest round before the prompt was left out"
