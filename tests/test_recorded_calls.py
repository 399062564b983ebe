"""Replay makes one request per model call the log records, no more and no fewer (issue #19).

For every real log of ../shared/realworld that records its calls, the calls are counted here
straight from the raw file, with none of ctxfit's code — Claude Code by `requestId` (else
`message.id`), Codex by its `token_count` events, Gemini CLI by its replies with `tokens`, Cline
by its replies with `metrics`, aider by its `> Tokens:` lines, OpenHands by its model responses,
SWE-agent by `info.model_stats.api_calls` — and `replay` must count the same for every policy.
Where the log names each call, the ids the reader gives its calls are the log's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import orjson
import pytest
from conftest import REALWORLD, needs_realworld
from fuzzing import invoke

from ctxfit_cli.formats import read_transcripts


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def claude_code(path: Path) -> tuple[int, set[str]]:
    """One call per request: a reply's records share its `requestId` (and `message.id`, the id
    returned with the call's other ids). A main
    log's sub-agent records (`isSidechain`) are another conversation; a sub-agent's own log is
    all sidechain. Replies Claude Code wrote itself (model `<synthetic>`) are no call."""
    records = [r for r in _lines(path) if r.get("type") in ("user", "assistant")]
    side = bool(records[0].get("isSidechain"))
    requests, ids = set(), set()
    for record in records:
        message = record.get("message") or {}
        if record["type"] == "assistant" and bool(record.get("isSidechain")) == side:
            if message.get("model") != "<synthetic>":
                requests.add(record.get("requestId") or message["id"])
                ids.add(message["id"])
    return len(requests), ids


def codex(path: Path) -> tuple[int, None]:
    """One call per `token_count` event with usage; Codex writes some twice in a row (the same
    running total)."""
    totals = []
    for record in _lines(path):
        payload = record.get("payload") or {}
        if record.get("type") == "event_msg" and payload.get("type") == "token_count" and payload.get("info"):
            total = json.dumps(payload["info"]["total_token_usage"], sort_keys=True)
            if not totals or totals[-1] != total:
                totals.append(total)
    return len(totals), None


def gemini_cli(path: Path) -> tuple[int, set[str]]:
    """One call per reply (`type: gemini`) with `tokens`; in the JSON Lines layout a message's
    last record is its final state."""
    if path.suffix == ".json":
        messages = json.loads(path.read_text(encoding="utf-8"))["messages"]
    else:
        final: dict[str, dict] = {}
        for record in _lines(path):
            assert "$rewindTo" not in record and "messages" not in record.get("$set", {})  # (not in these logs)
            if "id" in record and "type" in record:
                final[record["id"]] = record
        messages = list(final.values())
    ids = {m["id"] for m in messages if m["type"] == "gemini" and m.get("tokens")}
    return len(ids), ids


def cline(path: Path) -> tuple[int, None]:
    """One call per reply that records its `metrics`."""
    history = json.loads(path.read_text(encoding="utf-8"))
    return sum(1 for m in history if m["role"] == "assistant" and "metrics" in m), None


def aider(path: Path) -> tuple[int, None]:
    """One call per `> Tokens: N sent, M received` line aider prints after each reply."""
    return len(re.findall(r"^> Tokens: \S+ sent", path.read_text(encoding="utf-8"), re.M)), None


def openhands(path: Path) -> tuple[int, set[str]]:
    """One call per model response: an event list names it in its actions' `tool_call_metadata`;
    evaluation output lists each in `metrics.token_usages`."""
    if path.suffix == ".json":
        events = json.loads(path.read_text(encoding="utf-8"))
        ids = {e["tool_call_metadata"]["model_response"]["id"] for e in events if e.get("tool_call_metadata")}
    else:
        ids = {u["response_id"] for instance in _lines(path) for u in instance["metrics"]["token_usages"]}
    return len(ids), ids


def swe_agent(path: Path) -> tuple[int, None]:
    """The run's own count of its API calls."""
    return json.loads(path.read_text(encoding="utf-8"))["info"]["model_stats"]["api_calls"], None


LOGS = [
    *((p, claude_code) for p in sorted((REALWORLD / "claude-code").glob("*.jsonl"))),
    # (jazzyalex_codex_small is a schema fixture: its token_count events are not its calls')
    *((p, codex) for p in sorted((REALWORLD / "codex").glob("*.jsonl")) if "jazzyalex" not in p.name),
    *((p, gemini_cli) for p in sorted((REALWORLD / "gemini-cli").glob("*"))),
    (REALWORLD / "cline" / "api_conversation_history.json", cline),
    (REALWORLD / "aider" / "metadata-aider" / ".aider.chat.history.md", aider),
    *((p, openhands) for p in sorted((REALWORLD / "openhands").glob("*"))),
    # (function_calling_simple.traj is a demonstration with no `info`: it records no calls)
    (REALWORLD / "swe-agent" / "pydicom-1458_gpt4.traj", swe_agent),
]


@needs_realworld
@pytest.mark.parametrize("path,count", LOGS, ids=lambda v: v.name if isinstance(v, Path) else "")
def test_replay_counts_the_calls_the_log_records(path, count):
    expected, ids = count(path)
    done = invoke(["replay", "--json", "--no-chart", str(path)])
    assert done.exit_code == 0, done.stderr
    policies = orjson.loads(done.stdout_bytes)["policies"]
    assert {name: p["calls"] for name, p in policies.items()} == dict.fromkeys(policies, expected)
    if ids is not None:
        with path.open("rb") as stream:
            read = {c.id for t in read_transcripts(str(path), stream) for c in t.materialize().calls}
        assert read == ids


@needs_realworld
def test_the_independent_counts_are_not_empty():
    """(A count that finds nothing would agree with a replay that makes no request.)"""
    counted = {path.name: count(path)[0] for path, count in LOGS}
    assert sum(1 for n in counted.values() if n > 0) >= len(LOGS) - 1, counted  # simonw's rollout: no reply yet
    assert counted[".aider.chat.history.md"] == 12 and counted["api_conversation_history.json"] == 221


def test_a_demonstration_is_sent_but_no_call_of_the_run_made_it(tmp_path):
    """SWE-agent sends its demonstrations (`is_demo`) with every request: their replies are in the
    history, but no request of this run was made before them."""
    history = [
        {"role": "system", "content": "You are an agent.", "agent": "main"},
        {"role": "user", "content": "Here is a demonstration.", "agent": "main", "is_demo": True},
        {"role": "assistant", "content": "ls", "agent": "main", "is_demo": True},
        {"role": "user", "content": "Now the task.", "agent": "main"},
        {"role": "assistant", "content": "cat a.py", "agent": "main"},
        {"role": "user", "content": "print(1)", "agent": "main"},
        {"role": "assistant", "content": "submit", "agent": "main"},
    ]
    path = tmp_path / "run.traj"
    path.write_bytes(orjson.dumps({"trajectory": [], "history": history, "info": {}}))
    done = invoke(["replay", "--json", "--no-chart", "-p", "none", "-p", "ctxfit", "-p", "turns", str(path)])
    assert done.exit_code == 0, done.stderr
    assert [p["calls"] for p in orjson.loads(done.stdout_bytes)["policies"].values()] == [2, 2, 2]
    with path.open("rb") as stream:
        [transcript] = read_transcripts(str(path), stream)
    assert [c.message for c in transcript.materialize().calls] == [3, 5]  # (the demonstration's reply is 1)
