"""Every real log of ../shared/realworld through `fit` at 100%, 50%, 20% and 5% of its size
(issue #9, DESIGN §8): exit 0 or 4; every payload accepted by `validate_request` *and* by the
independent check below (written from the providers' rules, sharing no code with ctxfit's
validator); read back by `estimate -` at exactly the size `fit` promised (less the unlogged part it counted,
which the payload does not hold); fitted again to the same bytes. The commands run in-process through the Typer app (as the fuzz test does), and once through
real processes and a real pipe.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from conftest import REALWORLD, ROOT, needs_realworld
from fuzzing import check_payloads, invoke, sent_in_payload

#: (Empty where ../shared is not beside the project: CI has it, a fresh clone elsewhere may not.)
LOGS = sorted(p for kind in ("claude-code", "codex", "openhands", "swe-agent")
              for p in (REALWORLD / kind).glob("*") if p.suffix in (".jsonl", ".json", ".traj"))
SHARES = (1.0, 0.5, 0.2, 0.05)


@needs_realworld
def test_the_real_logs_are_there():
    assert len(LOGS) >= 14, f"expected the logs of {REALWORLD}/SOURCES.md"


# --- an independent check of a request, from the providers' documented rules -------------------


def anthropic_problems(request: dict) -> list[str]:
    """The first message is the user's; roles alternate; an assistant's tool_use blocks are all
    answered by tool_result blocks at the start of the very next user message, and no other
    tool_result appears anywhere; ids are unique; no message is empty; no text block is empty or
    only whitespace (`text content blocks must contain non-whitespace text`); a message has
    only `role` and `content` (`Extra inputs are not permitted`)."""
    messages = request["messages"]
    out = []
    if not messages or messages[0]["role"] != "user":
        out.append("the first message is not the user's")
    seen_ids: set[str] = set()
    for i, message in enumerate(messages):
        if set(message) != {"role", "content"}:
            out.append(f"{i}: keys {sorted(message)}")
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if any(b.get("type") == "text" and b["text"].isspace() or b.get("text") == "" for b in blocks):
            out.append(f"{i}: a blank text block")
        if not blocks or all(b.get("type") == "text" and not b["text"].strip() for b in blocks):
            if not (i == len(messages) - 1 and message["role"] == "assistant"):
                out.append(f"{i}: empty")
        if i and message["role"] == messages[i - 1]["role"]:
            out.append(f"{i}: two {message['role']} messages in a row")
        calls = [b["id"] for b in blocks if b.get("type") in ("tool_use", "server_tool_use")]
        if message["role"] == "assistant":
            for call in calls:
                if call in seen_ids:
                    out.append(f"{i}: id {call} used twice")
                seen_ids.add(call)
            if calls:
                nxt = messages[i + 1]["content"] if i + 1 < len(messages) else []
                nxt = [] if isinstance(nxt, str) else nxt
                lead = []
                for block in nxt:
                    if block.get("type") != "tool_result":
                        break
                    lead.append(block["tool_use_id"])
                if sorted(lead) != sorted(calls):
                    out.append(f"{i}: calls {calls} answered by {lead}")
        results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
        if results:
            before = messages[i - 1] if i else None
            asked = [b["id"] for b in (before["content"] if before and not isinstance(before["content"], str) else [])
                     if b.get("type") == "tool_use"]
            if message["role"] != "user" or sorted(results) != sorted(asked):
                out.append(f"{i}: results {results} for calls {asked}")
            if [b.get("type") for b in blocks[:len(results)]] != ["tool_result"] * len(results):
                out.append(f"{i}: results do not come first")
    return out


#: The keys of a Chat Completions message, per role (`Additional properties are not allowed`).
OPENAI_KEYS = {"system": {"role", "content", "name"}, "developer": {"role", "content", "name"},
               "user": {"role", "content", "name"}, "tool": {"role", "content", "tool_call_id", "name"},
               "assistant": {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"}}


def openai_problems(request: dict) -> list[str]:
    """Every tool_calls id is answered by a `tool` message before any other message; no `tool`
    message without its call; ids unique within a message; roles are the four of the API, each
    message with only its role's keys; no blank text part in a content list."""
    out = []
    open_calls: list[str] = []
    for i, message in enumerate(request["messages"]):
        role = message["role"]
        if role not in ("system", "developer", "user", "assistant", "tool"):
            out.append(f"{i}: role {role}")
        elif not set(message) <= OPENAI_KEYS[role]:
            out.append(f"{i}: keys {sorted(set(message) - OPENAI_KEYS[role])}")
        if isinstance(message.get("content"), list) and any(
                p.get("type") == "text" and not p["text"].strip() for p in message["content"]):
            out.append(f"{i}: a blank text part")
        if role == "tool":
            if message["tool_call_id"] not in open_calls:
                out.append(f"{i}: result for {message['tool_call_id']} with no open call")
            else:
                open_calls.remove(message["tool_call_id"])
            continue
        if open_calls:
            out.append(f"{i}: calls {open_calls} unanswered before a {role} message")
            open_calls = []
        ids = [c["id"] for c in message.get("tool_calls") or []]
        if len(set(ids)) != len(ids):
            out.append(f"{i}: repeated call ids {ids}")
        open_calls = ids
    if open_calls:
        out.append(f"calls {open_calls} unanswered at the end")
    return out


INDEPENDENT = {"anthropic": anthropic_problems, "openai": openai_problems}


def test_the_independent_checks_catch_what_the_providers_reject():
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}]}
    ask = {"role": "user", "content": "go"}
    assert anthropic_problems({"messages": [ask, use, result]}) == []
    assert anthropic_problems({"messages": [use, result]})  # the first message is the assistant's
    assert anthropic_problems({"messages": [ask, use, ask]})  # a call without its result
    assert anthropic_problems({"messages": [ask, result]})  # a result without its call
    late = {"role": "user", "content": [{"type": "text", "text": "hm"}, *result["content"]]}
    assert anthropic_problems({"messages": [ask, use, late]})  # a result after other content
    blank = {"role": "assistant", "content": [{"type": "text", "text": "\n\n"}, *use["content"]]}
    assert anthropic_problems({"messages": [ask, blank, result]})  # a whitespace-only text block
    assert anthropic_problems({"messages": [{**ask, "ts": 1}]})  # a key the API refuses
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}]}
    answer = {"role": "tool", "tool_call_id": "c1", "content": "r"}
    assert openai_problems({"messages": [{"role": "user", "content": "go"}, call, answer]}) == []
    assert openai_problems({"messages": [{"role": "user", "content": "go"}, call, {"role": "user", "content": "x"}]})
    assert openai_problems({"messages": [{"role": "user", "content": "go"}, answer]})


# --- the logs ------------------------------------------------------------------------------------


def _fit(path: Path, budget: int):
    return invoke(["fit", "--budget", str(budget), "--json", str(path)])


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fit_at_every_share_is_valid_reads_back_and_refits_the_same(path):
    whole = _fit(path, 10**9)
    assert whole.exit_code == 0, whole.stderr
    full = max(r["tokens_before"] for r in orjson.loads(whole.stdout_bytes)["reports"])
    for share in SHARES:
        budget = max(1, int(full * share))
        done = _fit(path, budget)
        assert done.exit_code in (0, 4) and "Traceback" not in done.stderr, (share, done.stderr)
        if done.exit_code == 4:
            assert done.stdout_bytes == b""
            continue
        document = orjson.loads(done.stdout_bytes)
        reports, payloads = document["reports"], document["payloads"]
        assert reports and len(reports) == len(payloads)
        for report, payload in zip(reports, payloads):
            assert INDEPENDENT[report["dialect"]](payload) == [], (share, report["path"])
            assert report["tokens_sent"] <= budget or report["overrun"], (share, report["path"])
        # ctxfit's own validator, the read-back at the promised size, the refit to the same bytes.
        raws = [orjson.dumps(p) for p in payloads]
        plain = invoke(["fit", "--budget", str(budget), str(path)])
        assert plain.stdout_bytes.splitlines() == raws, "fit and fit --json send the same requests"
        assert check_payloads(reports, raws, str(budget)) == [], share


@needs_realworld
def test_a_real_log_through_real_processes_and_a_pipe(tmp_path):
    """`ctxfit fit LOG --budget B | ctxfit estimate -` in a shell pipe, counted with the profile of
    the log's model: the size read back is the promised one less the unlogged part."""
    log = REALWORLD / "claude-code" / "spotter_4d5611e5.jsonl"
    report = tmp_path / "report.json"
    budget = 60_000
    ctxfit = f"{sys.executable} -m ctxfit_cli"
    shell = (f"set -o pipefail; {ctxfit} fit {log} --budget {budget} --report {report} 2>/dev/null"
             f" | {ctxfit} estimate - --json --profile claude")
    done = subprocess.run(["bash", "-c", shell], capture_output=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    facts = orjson.loads(report.read_bytes())
    facts = facts[-1] if isinstance(facts, list) else facts
    assert facts["counter"].startswith("profile:claude@") and facts["unlogged"]["tokens"] > 10_000
    assert orjson.loads(done.stdout)["total"]["tokens"] == sent_in_payload(facts)
    assert facts["tokens_sent"] <= budget


# --- a log being written: tests/test_live_logs.py (every agent's log, cut after every Nth line and
# inside lines, through every command) ----------------------------------------------------------


# --- every shared log, as agents write them in 2026 (issue #34) ------------------------------------

#: Logs of usage only: refused, naming the file that holds the conversation.
USAGE_ONLY = {"cline-ui": "the conversation is in api_conversation_history.json beside it"}


@needs_realworld
@pytest.mark.parametrize("path", sorted(p for p in REALWORLD.glob("*/*") if p.is_file()),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_shared_log_is_read_or_names_the_file_of_its_conversation(path):
    result = invoke(["estimate", str(path), "--top", "0"])
    if path.parent.name in USAGE_ONLY:
        assert result.exit_code == 3
        assert USAGE_ONLY[path.parent.name] in result.stderr and "Traceback" not in result.stderr
    else:
        assert result.exit_code == 0, result.stderr
        assert "skipped" not in result.stderr  # every record type of these logs is known to its reader


@needs_realworld
def test_sessions_lists_every_claude_code_log_of_2026(tmp_path):
    """The shared Claude Code logs as Claude Code keeps them (`projects/<project>/<id>.jsonl`):
    every one is a session, with its recorded cost, and nothing is partial."""
    folder = tmp_path / "projects" / "-work"
    folder.mkdir(parents=True)
    logs = sorted((REALWORLD / "claude-code").glob("*.jsonl"))
    for log in logs:
        (folder / log.name).write_bytes(log.read_bytes())
    result = invoke(["sessions", str(tmp_path / "projects"), "--json"])
    assert result.exit_code == 0, result.stderr
    rows = orjson.loads(result.stdout)["sessions"]
    assert sorted(Path(row["path"]).name for row in rows) == [log.name for log in logs]
    assert all(row["cost"]["usd"] for row in rows)
