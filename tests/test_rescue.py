"""A stuck session goes on (DESIGN §14, issue 33 item 7): the real Claude Code resumes a real
session past a provider's window, directly and through `ctxfit wrap`.

The provider is `fake_provider.py --window N`, which refuses past N tokens exactly as Anthropic
does ("prompt is too long: S tokens > N maximum"; "input length and `max_tokens` exceed context
limit: S + M > N", on which Claude Code lowers `max_tokens`). The session is a real Claude Code
2.1 log (one compaction, 157 messages sent on resume, 75,000 tokens by the provider's count),
placed in a throwaway HOME as Claude Code keeps it. At each window tried, through wrap the agent
answers (exit 0), never fails where it recovers alone, and the request answered holds the newest
work: the newest round before the prompt, not the prompt alone.

The agents are found as `test_real_agents.py` finds them (`agents_installed.py`).
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
from agents_installed import agent_binary
from conftest import REALWORLD
from fake_provider import true_size
from servers import ROOT, fake_provider, recorded

SESSION = REALWORLD / "claude-code" / "spotter_4d5611e5.jsonl"
#: Windows tried: the prompt alone barely fits the first, most of the session the second.
WINDOWS = (45_000, 70_000)
NOTE = "Earlier conversation was trimmed"
#: The messages Claude Code sends on resuming SESSION (those since its compaction, and the prompt).
SENT_ON_RESUME = 157


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

needs_session = pytest.mark.skipif(not SESSION.exists(), reason="needs the shared real logs in ../shared/realworld")


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
    claude = agent_binary("claude")
    agent = ["-p", "--resume", session, "continue", "--allowedTools", "Read,Bash(cat:*)"]
    env = {**os.environ, "HOME": str(home), "ANTHROPIC_API_KEY": "test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "PATH": f"{claude.parent}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    env.pop("ANTHROPIC_BASE_URL", None)
    with fake_provider(record, 0, "--window", str(window), usage="exact") as provider:
        if through_wrap:
            argv = [sys.executable, "-m", "ctxfit_cli", "wrap", "claude", "-u", provider.url, "--window", str(window),
                    "--", *agent]
        else:
            argv, env["ANTHROPIC_BASE_URL"] = [str(claude), *agent], provider.url
        run = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=240, start_new_session=True)
    main = []
    for line in recorded(record):
        if line["path"] != "/v1/messages":
            continue
        messages = line["body"]["messages"]
        main.append({"ok": b'"error"' not in base64.b64decode(line["reply"])[:200], "messages": messages,
                     "true_tokens": line.get("true_tokens")})
    return run, main


@needs_session
@pytest.mark.parametrize("window", WINDOWS)
def test_a_resumed_session_past_the_window_goes_on_through_wrap_with_its_newest_work(tmp_path, window):
    """Claude Code 2.1.337 recovers alone at these windows (it lowers `max_tokens`, drops its
    oldest messages and compacts): through wrap it must too -- it answers at every window."""
    wrapped, requests = resume(tmp_path, window, through_wrap=True)
    assert wrapped.returncode == 0, wrapped.stdout[-500:] + wrapped.stderr[-1500:]
    answered = [r for r in requests if r["ok"]]
    assert answered, "the provider answered no request"
    messages = answered[0]["messages"]
    assert answered[0]["true_tokens"] <= window
    assert "continue" in json.dumps(messages[-1])  # the prompt, last
    assert NOTE in json.dumps(messages[0]) or len(messages) == SENT_ON_RESUME  # trimmed, and says so
    assert any(m["role"] == "assistant" for m in messages[1:-1]), "the newest round before the prompt was left out"
    first = requests[0]
    if first["true_tokens"] <= window:  # (refused for its `max_tokens` alone: Claude Code lowers it, the prompt stays)
        assert len(messages) >= len(first["messages"]), "the retry after a refusal of the reply's room was cut tighter"


# --- the real Codex CLI, resumed past the window ------------------------------------------------

ROLLOUT = REALWORLD / "codex" / "skills_6cfb81c05ca9-0_full.jsonl"
needs_rollout = pytest.mark.skipif(not ROLLOUT.exists(), reason="needs the shared real logs in ../shared/realworld")


def resume_codex(tmp_path: Path, window: int, through_wrap: bool) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """Codex `exec resume ROLLOUT continue` against the provider's window: (its run, the
    Responses requests the provider got, each with `ok`, `items` and `true_tokens`). Codex 0.171
    reads its base URL from `-c openai_base_url`, not OPENAI_BASE_URL: wrap passes it."""
    codex = agent_binary("codex")
    session = json.loads(ROLLOUT.open().readline())["payload"]["id"]
    flags = ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
             "-c", "check_for_update_on_startup=false"]
    home = tmp_path / ("codex-wrap" if through_wrap else "codex-direct") / str(window)
    (home / "work").mkdir(parents=True)
    day = home / ".codex" / "sessions" / "2026" / "04" / "10"
    day.mkdir(parents=True)
    shutil.copy(ROLLOUT, day / f"rollout-2026-04-10T20-02-04-{session}.jsonl")
    env = {**os.environ, "HOME": str(home), "OPENAI_API_KEY": "test", "PYTHONPATH": str(ROOT),
           "PATH": f"{codex.parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("OPENAI_BASE_URL", None)
    with fake_provider(home / "upstream.jsonl", 0, "--window", str(window), usage="exact") as provider:
        if through_wrap:
            argv = [sys.executable, "-m", "ctxfit_cli", "wrap", "codex", "-u", provider.url, "--window", str(window),
                    "--", *flags, "resume", session, "continue"]
        else:
            argv = [str(codex), *flags, "-c", f"openai_base_url={provider.url}/v1", "resume", session, "continue"]
        run = subprocess.run(argv, cwd=home / "work", env=env, capture_output=True, text=True, timeout=240,
                             start_new_session=True)
    requests = []
    for line in recorded(home / "upstream.jsonl"):
        if line["path"] == "/v1/responses" and line["method"] == "POST":
            reply = base64.b64decode(line["reply"])
            ok = b"response.failed" not in reply and b'"error"' not in reply[:300]
            requests.append({"ok": ok, "items": line["body"]["input"], "true_tokens": true_size(line["body"], "responses")})
    return run, requests


@needs_rollout
def test_a_resumed_codex_rollout_past_the_window_goes_on_through_wrap(tmp_path):
    """Codex 0.171 stops once refused ("Codex ran out of room in the model's context window"):
    a real rollout (2 prompts, 33 tool calls, 37,000 tokens) resumed at a 30,000-token window
    fails directly and answers through wrap, the newest reply and tool calls before the prompt kept
    (before: the first message, the note and the prompt alone)."""
    direct, _ = resume_codex(tmp_path, 30_000, through_wrap=False)
    wrapped, requests = resume_codex(tmp_path, 30_000, through_wrap=True)
    assert direct.returncode != 0 and "ran out of room" in direct.stderr
    assert wrapped.returncode == 0, wrapped.stderr[-1500:]
    items = next(r for r in requests if r["ok"])["items"]
    users = [i for i in items if i.get("role") == "user"]
    assert NOTE in json.dumps(users[0]) and users[-1]["content"][0]["text"] == "continue"
    assert any(i.get("role") == "assistant" for i in items), "the newest reply before the prompt was left out"
    assert any(i.get("type") == "function_call" for i in items), "every tool call before the prompt was left out"
