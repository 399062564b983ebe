"""The readers of Cline / Roo Code, aider and OpenCode logs, on the real logs of
../shared/realworld and on small hand-made ones for their edge cases."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from conftest import REALWORLD, needs_realworld
from fuzzing import check_payloads, invoke
from test_realworld import INDEPENDENT, SHARES

from ctxfit_cli.core.model import PartKind, Role
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.formats import read_transcripts

CLINE = REALWORLD / "cline" / "api_conversation_history.json"
AIDER = REALWORLD / "aider" / "metadata-aider" / ".aider.chat.history.md"
OPENCODE = REALWORLD / "opencode" / "storage_v2"
#: Keys Cline and Roo Code write beside a message's role and content, and in its blocks.
AGENT_KEYS = (b'"ts"', b'"metrics"', b'"modelInfo"', b'"call_id"', b'"reasoning_details"')


def _whitespace_text(payload: dict) -> list[int]:
    """Indexes of messages holding a text block with nothing but whitespace."""
    found = []
    for i, message in enumerate(payload["messages"]):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if any(isinstance(b, dict) and b.get("type") == "text" and not b.get("text", "").strip() for b in blocks):
            found.append(i)
    return found


@needs_realworld
@pytest.mark.parametrize("path", [CLINE, AIDER, OPENCODE], ids=["cline", "aider", "opencode"])
def test_fit_at_every_share_gives_requests_the_provider_accepts(path):
    whole = invoke(["fit", "--budget", str(10**9), "--json", str(path)])
    assert whole.exit_code == 0, whole.stderr
    full = max(r["tokens_before"] for r in orjson.loads(whole.stdout_bytes)["reports"])
    for share in SHARES:
        budget = max(1, int(full * share))
        done = invoke(["fit", "--budget", str(budget), "--json", str(path)])
        assert done.exit_code in (0, 4) and "Traceback" not in done.stderr, (share, done.stderr)
        if done.exit_code == 4:
            continue
        document = orjson.loads(done.stdout_bytes)
        for report, payload in zip(document["reports"], document["payloads"]):
            assert validate_request(payload, report["dialect"]) == [], share
            assert INDEPENDENT[report["dialect"]](payload) == [], share
            assert _whitespace_text(payload) == [], share
            raw = orjson.dumps(payload)
            assert not any(key in raw for key in AGENT_KEYS), share
        raws = [orjson.dumps(p) for p in document["payloads"]]
        assert check_payloads(document["reports"], raws, str(budget)) == [], share


# --- Cline / Roo Code --------------------------------------------------------------------------


def _read(name: str, data: bytes):
    return [t.materialize() for t in read_transcripts(name, io.BytesIO(data))]


@needs_realworld
def test_the_cline_log_is_what_cline_sends():
    [t] = _read(str(CLINE), CLINE.read_bytes())
    assert (t.format, t.dialect, len(t.messages), t.repairs) == ("cline", "anthropic", 443, [])
    assert not any(key in m.raw for m in t.messages for key in AGENT_KEYS)
    # Every one of the 231 calls is answered as Cline answers it, before each request: its
    # "result missing" tool_result first, the text result Cline wrote right after it.
    results = [(k, p) for k, m in enumerate(t.messages) for p in m.parts if p.kind is PartKind.TOOL_RESULT]
    assert len(results) == 231 and {p.text for _, p in results} == {"result missing"}
    assert not any("interrupted" in p.text.lower() or "aborted" in p.text.lower() for _, p in results)
    with_text = sum(1 for k, p in results if any(
        q.kind is PartKind.TEXT and "] Result:" in q.text[:400] for q in t.messages[k].parts))
    assert with_text == 204  # the others: answered by the user's own reply (a question) or a resumed task
    # One recorded call per reply, with Cline's own prompt count.
    assert len(t.calls) == 221 and all(t.messages[c.message].role is Role.ASSISTANT for c in t.calls)
    assert t.calls[0].prompt_tokens == 10049 and t.calls[0].model == "claude_4_5_opus"


def _cline(messages: list[dict]) -> bytes:
    return orjson.dumps(messages)


def test_cline_answers_only_the_calls_of_the_reply_before_and_keeps_the_text():
    use = {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}, "call_id": "t1"}
    done = {"type": "tool_result", "tool_use_id": "t2", "content": "ok"}
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>go</task>"}], "ts": 1},
        {"role": "assistant", "content": [{"type": "text", "text": "Reading.", "call_id": "r1"}, use,
                                           {"type": "tool_use", "id": "t2", "name": "list_files", "input": {}}],
         "ts": 2, "modelInfo": {"modelId": "claude-sonnet-4-5", "providerId": "anthropic"},
         "metrics": {"tokens": {"prompt": 900, "completion": 20, "cached": 0}}},
        {"role": "user", "content": [{"type": "text", "text": "[read_file for 'a'] Result:\nA"}, done], "ts": 3},
    ]
    [t] = _read("api_conversation_history.json", _cline(history))
    last = orjson.loads(t.messages[-1].raw)["content"]
    assert last == [{"type": "tool_result", "tool_use_id": "t1", "content": "result missing"}, done,
                    {"type": "text", "text": "[read_file for 'a'] Result:\nA"}]
    assert b"call_id" not in t.messages[1].raw and b'"ts"' not in t.messages[0].raw
    assert t.calls[0]._replace(message=1) == t.calls[0] and t.calls[0].prompt_tokens == 900


def test_roo_code_condensed_messages_are_not_sent():
    history = [
        {"role": "user", "content": "task", "ts": 1},
        {"role": "assistant", "content": "old answer", "ts": 2, "condenseParent": "c1"},
        {"role": "user", "content": "old question", "ts": 3, "condenseParent": "c1"},
        {"role": "assistant", "content": "Summary of the work so far.", "ts": 4, "isSummary": True, "condenseId": "c1"},
        {"role": "user", "content": "next", "ts": 5},
    ]
    [t] = _read("api_conversation_history.json", _cline(history))
    assert [orjson.loads(m.raw)["content"] for m in t.messages] == ["task", "Summary of the work so far.", "next"]


def test_a_cline_history_that_cannot_be_read_says_what_it_looked_like():
    bad = [{"role": "user", "content": "go", "ts": 1}, {"role": "system", "content": "x", "ts": 2}]
    done = invoke(["estimate", "-"], input=_cline(bad))
    assert done.exit_code == 3
    assert "looks like a Cline / Roo Code task history" in done.stderr and "role" in done.stderr


# --- aider ---------------------------------------------------------------------------------------


HISTORY = """
# aider chat started at 2025-12-03 14:43:45

> Aider v0.86.1  
> Model: anthropic/claude-sonnet-4-5 with diff edit format  

#### Add a greeting  
####   
#### in hello.py  

Here is the edit:

#### Heading inside the reply (no two trailing spaces)

> Tokens: 2.4k sent, 104 received. Cost: $0.01 message, $0.01 session.  
> Applied edit to hello.py  
> Commit 1b2614a feat: add greeting  

#### /add other.py  
> Added other.py to the chat  

#### /ask why?  

Because.

> Tokens: 12k sent, 3.1k cache write, 8.0k cache hit, 1.2k received.  

#### /clear  

#### Start over  

Fresh.

> Tokens: 950 sent, 12 received.  
"""


def test_aider_history_reads_as_the_chat_aider_sends():
    first, second = _read(".aider.chat.history.md", HISTORY.encode())
    sent = [orjson.loads(m.raw) for m in first.messages]
    assert sent == [
        {"role": "user", "content": "Add a greeting\n\nin hello.py"},
        {"role": "assistant", "content": "Here is the edit:\n\n#### Heading inside the reply (no two trailing spaces)"},
        {"role": "user", "content": "I committed the changes with git hash 1b2614a & commit msg: feat: add greeting"},
        {"role": "assistant", "content": "Ok."},
        {"role": "user", "content": "why?"},
        {"role": "assistant", "content": "Because."},
    ]
    assert [(c.message, c.prompt_tokens, c.output_tokens, c.model) for c in first.calls] == [
        (1, 2400, 104, "anthropic/claude-sonnet-4-5"), (5, 12000, 1200, "anthropic/claude-sonnet-4-5")]
    assert [orjson.loads(m.raw)["content"] for m in second.messages] == ["Start over", "Fresh."]
    assert second.calls[0].prompt_tokens == 950 and first.dialect == second.dialect == "openai"


@pytest.mark.parametrize("text", [b"# Notes\n\n#### A heading  \n\nSome text.\n", b"hello world\n",
                                  b"> quoted  \n#### x  \n"])
def test_other_markdown_or_text_is_not_taken_for_aider(text):
    done = invoke(["estimate", "-"], input=text)
    assert done.exit_code == 3 and "aider" not in done.stderr and "not valid JSON" in done.stderr


def test_an_aider_history_with_nothing_typed_is_no_conversation():
    done = invoke(["estimate", "-"], input=b"\n# aider chat started at 2025-01-01 10:00:00\n\n> Aider v0.86.1  \n")
    assert done.exit_code == 3 and "aider chat history" in done.stderr


# --- OpenCode ------------------------------------------------------------------------------------


def _storage(root: Path, provider: str = "anthropic", model: str = "claude-sonnet-4-5") -> Path:
    """A small OpenCode storage folder: one session, a prompt, a reply of two steps."""
    def write(path: str, value: dict) -> None:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(orjson.dumps(value))
    write("session/p1/ses_1.json", {"id": "ses_1", "projectID": "p1", "directory": "/work/app", "title": "t",
                                    "time": {"created": 1730000000000, "updated": 1730000009000}})
    write("message/ses_1/msg_1.json", {"id": "msg_1", "sessionID": "ses_1", "role": "user", "time": {"created": 1}})
    write("part/msg_1/prt_1.json", {"id": "prt_1", "type": "text", "text": "List the files"})
    write("message/ses_1/msg_2.json", {"id": "msg_2", "sessionID": "ses_1", "role": "assistant",
                                       "providerID": provider, "modelID": model, "time": {"created": 2}})
    tokens = {"input": 10, "output": 5, "reasoning": 1, "cache": {"read": 1000, "write": 20}}
    parts = [{"type": "step-start"}, {"type": "reasoning", "text": "hm"},
             {"type": "tool", "callID": "c1", "tool": "bash",
              "state": {"status": "completed", "input": {"command": "ls"}, "output": "a\nb"}},
             {"type": "step-finish", "tokens": tokens}, {"type": "step-start"},
             {"type": "text", "text": "Two files."}, {"type": "tool", "callID": "c2", "tool": "read",
                                                      "state": {"status": "running", "input": {}}},
             {"type": "step-finish", "tokens": {**tokens, "input": 40}}]
    for k, part in enumerate(parts):
        write(f"part/msg_2/prt_{k}.json", {"id": f"prt_{k}", **part})
    return root


def test_opencode_steps_are_calls_in_the_model_s_own_api(tmp_path):
    storage = _storage(tmp_path / "storage")
    done = invoke(["fit", "--budget", "100000", "--json", str(storage)])
    assert done.exit_code == 0, done.stderr
    [payload] = orjson.loads(done.stdout_bytes)["payloads"]
    assert validate_request(payload, "anthropic") == []
    assert [m["role"] for m in payload["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    assert payload["messages"][2]["content"][0]["content"] == "a\nb"
    assert payload["messages"][4]["content"][0] == {"type": "tool_result", "tool_use_id": "c2",
                                                    "content": "[Tool execution was interrupted]", "is_error": True}
    path = storage / "session" / "p1" / "ses_1.json"
    [t] = _read(str(path), path.read_bytes())
    assert [(c.message, c.prompt_tokens, c.output_tokens) for c in t.calls] == [(1, 1030, 6), (3, 1060, 6)]
    other = _storage(tmp_path / "openai", provider="openai", model="gpt-5")
    [t] = _read(str(other / "session/p1/ses_1.json"), (other / "session/p1/ses_1.json").read_bytes())
    assert t.dialect == "openai" and [m.role.value for m in t.messages] == ["user", "assistant", "tool", "assistant", "tool"]


def test_an_opencode_message_file_given_alone_says_to_give_the_session(tmp_path):
    storage = _storage(tmp_path / "storage")
    done = invoke(["estimate", str(storage / "message" / "ses_1" / "msg_1.json")])
    assert done.exit_code == 3 and "looks like an OpenCode session" in done.stderr and "session file" in done.stderr


# --- sessions in the agents' default folders ----------------------------------------------------


@needs_realworld
def test_sessions_with_no_path_lists_cline_and_opencode_in_a_new_user_s_home(tmp_path):
    import os
    import shutil
    import subprocess
    import sys
    from conftest import ROOT
    home = tmp_path / "home"
    task = home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks" / "1777073160794"
    task.mkdir(parents=True)
    shutil.copy(CLINE, task / CLINE.name)
    (task / "ui_messages.json").write_text("[]")  # Cline's own bookkeeping, not a conversation
    _storage(home / ".local" / "share" / "opencode" / "storage")
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME",
                                                             "CLINE_DIR", "CLINE_DATA_DIR")}
    done = subprocess.run([sys.executable, "-m", "ctxfit_cli", "sessions", "--json"], env={**env, "HOME": str(home)},
                          stdin=subprocess.DEVNULL, capture_output=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = {row["agent"]: row for row in orjson.loads(done.stdout)["sessions"]}
    assert sorted(rows) == ["Cline", "OpenCode"]
    assert rows["Cline"]["id"] == "1777073160794" and rows["Cline"]["peak_source"] == "recorded"
    assert rows["OpenCode"]["id"] == "ses_1" and rows["OpenCode"]["project"] == "/work/app"


# --- session identity -----------------------------------------------------------------------------


def _trajectory(answer: str) -> bytes:
    config = {"problem_statement": {"id": "pydicom__pydicom-1458"}, "agent": {"model": {"name": "gpt-4o"}}}
    return orjson.dumps({"environment": "swe_main", "replay_config": orjson.dumps(config).decode(), "info": {},
                         "trajectory": [], "history": [
                             {"role": "system", "content": "You are SWE-agent.", "agent": "main"},
                             {"role": "user", "content": "Fix the bug.", "agent": "main"},
                             {"role": "assistant", "content": answer, "agent": "main"}]})


def test_two_runs_of_one_swe_bench_instance_are_two_sessions_and_a_copy_is_one(tmp_path):
    (tmp_path / "run1").mkdir()
    (tmp_path / "run2").mkdir()
    (tmp_path / "copy").mkdir()
    (tmp_path / "run1" / "i.traj").write_bytes(_trajectory("First try."))
    (tmp_path / "run2" / "i.traj").write_bytes(_trajectory("Another run, another answer."))
    (tmp_path / "copy" / "i.traj").write_bytes(_trajectory("First try."))
    done = invoke(["sessions", "--json", str(tmp_path)])
    assert done.exit_code == 0, done.stderr
    rows = orjson.loads(done.stdout_bytes)["sessions"]
    assert len(rows) == 2 and all(r["id"].startswith("pydicom__pydicom-1458#") for r in rows)
    assert len({r["id"] for r in rows}) == 2
