"""The real agents are the test (DESIGN §14, issue #33): Claude Code, Codex CLI, Gemini CLI, OpenCode,
Qwen Code and GitHub Copilot CLI, as
installed from npm at the versions `.ci/run` pins, each run non-interactively through
`ctxfit wrap AGENT --budget 50000` on a 10-file reading task (~400 KB) against the scripted provider
(tests/scripted_provider.py), which plays the model with the tools the agent itself advertised.

Each agent runs once (a module fixture); the tests then read what the provider received and what
the agent left behind: its answer, every main-conversation request within the budget by the
provider's own count, no call without its result, the prefix changed only where more results were
cleared, wrap's summary, and the agent's own log read by `ctxfit sessions`, `estimate` and `watch`.

The agents are found in `$CTXFIT_AGENTS_BIN`, else `.agents/node_modules/.bin` in the checkout
(where `.ci/run` installs them), else on PATH. A missing agent is skipped here, with the command
that installs it, and fails under CI (CI=true). Each agent runs with a throwaway HOME, fake keys,
and its proxy variables pointed at a closed loopback port, so nothing it sends leaves the machine.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest
from agents_installed import agent_binary, pinned
from fake_provider import true_size
from scripted_provider import FINAL_ANSWER, Script
from servers import ROOT, Server, recorded

from ctxfit_cli import validate_request
from ctxfit_cli.core.notes import CLEARED_RESULT

BUDGET = 50_000
FILE_COUNT = 10
FILE_BYTES = 40_000
TASK = (f"Read the files f01.txt to f{FILE_COUNT:02d}.txt in this folder, one at a time, "
        "and then say in one line what they hold.")
#: How long an agent may run before it is stopped and its test fails (a hang guard, not a
#: measurement: each agent takes 5-30 s here).
HANG_GUARD = 300
#: Lines an agent prints when it cannot reach its provider and would retry forever.
STUCK = ("waiting for network",)


@dataclass(frozen=True)
class Setup:
    """How one agent is run non-interactively, and where it writes its log."""

    package: str
    args: tuple[str, ...]
    env: dict[str, str]
    logs: str
    #: What `ctxfit sessions` and `watch` call it.
    agent: str
    dialect: str
    files: dict[str, str] = field(default_factory=dict)
    #: The agent's command, where it is not the setup's name (one agent set up two ways).
    command: str = ""


SETUPS = {
    "claude": Setup(
        "@anthropic-ai/claude-code",
        # As root it refuses --dangerously-skip-permissions: the tools it needs are allowed instead.
        ("-p", TASK, "--allowedTools", "Read,Bash(cat:*)"),
        {"ANTHROPIC_API_KEY": "sk-ant-test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
        ".claude/projects/**/*.jsonl", "Claude Code", "anthropic"),
    "codex": Setup(
        "@openai/codex",
        ("exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
         "-c", "check_for_update_on_startup=false", "-c", "analytics.enabled=false", TASK),
        {"OPENAI_API_KEY": "sk-test"},
        ".codex/sessions/**/rollout-*.jsonl", "Codex", "responses"),
    "gemini": Setup(
        "@google/gemini-cli",
        ("-p", TASK, "--yolo", "--skip-trust"),
        {"GEMINI_API_KEY": "test-key"},
        ".gemini/tmp/**/chats/*", "Gemini CLI", "gemini",
        # As a user who chose "Gemini API key" in its sign-in dialog; no usage statistics or updates.
        {".gemini/settings.json": json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}})}),
    "opencode": Setup(
        "opencode-ai",
        ("run", "--auto", "-m", "anthropic/claude-sonnet-4-5", TASK),
        {"ANTHROPIC_API_KEY": "sk-ant-test"},
        ".local/share/opencode/opencode.db", "OpenCode", "anthropic",
        {".config/opencode/opencode.json": json.dumps({"autoupdate": False, "share": "disabled"})}),
    "qwen": Setup(
        "@qwen-code/qwen-code",
        ("--yolo", TASK),
        {"OPENAI_API_KEY": "sk-test", "OPENAI_MODEL": "qwen3-coder-plus", "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"},
        ".qwen/projects/*/chats/*.jsonl", "Qwen Code", "openai"),
    # With a provider of the user's own (BYOK): its default type (OpenAI Chat Completions), and
    # Anthropic's; offline: nothing is sent to GitHub.
    "copilot": Setup(
        "@github/copilot",
        ("-p", TASK, "--allow-all", "--no-auto-update"),
        {"COPILOT_PROVIDER_API_KEY": "sk-test", "COPILOT_MODEL": "gpt-5.4", "COPILOT_OFFLINE": "true"},
        ".copilot/session-state/*/events.jsonl", "GitHub Copilot CLI", "openai"),
    "copilot-anthropic": Setup(
        "@github/copilot",
        ("-p", TASK, "--allow-all", "--no-auto-update"),
        {"COPILOT_PROVIDER_TYPE": "anthropic", "COPILOT_PROVIDER_API_KEY": "sk-ant-test",
         "COPILOT_MODEL": "claude-sonnet-4.5", "COPILOT_OFFLINE": "true"},
        ".copilot/session-state/*/events.jsonl", "GitHub Copilot CLI", "anthropic", command="copilot"),
}
#: The user's own settings that would point an agent elsewhere: left out of the agent's environment.
FOREIGN = ("ANTHROPIC_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "CLAUDE_", "COPILOT_", "OPENCODE_", "QWEN_", "XDG_", "HTTP_PROXY", "HTTPS_PROXY",
           "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy")


def installed_version(binary: Path, package: str) -> str:
    """The version of the npm package the binary belongs to (its package.json, found upward from
    where the binary's link points; starting an agent only to ask takes seconds)."""
    for folder in binary.resolve().parents:
        manifest = folder / "package.json"
        if manifest.is_file():
            value = json.loads(manifest.read_text())
            if value.get("name") == package:
                return str(value.get("version"))
    return "unknown"


# --- one wrapped run per agent ------------------------------------------------------------------


@dataclass
class Run:
    name: str
    version: str
    exit_code: int
    stdout: str
    stderr: str
    seconds: float
    requests: list[dict]
    main: list[dict]
    home: Path
    proxy_log: str


def write_files(folder: Path) -> list[Path]:
    """FILE_COUNT text files of about FILE_BYTES each, of varied words (about 9,000 tokens each)."""
    words = ("river stone amber quiet ladder orbit velvet signal harbor cobalt meadow lantern ember"
             " copper willow prism falcon thistle glacier saffron marble canyon beacon juniper").split()
    folder.mkdir(parents=True)
    paths = []
    for number in range(1, FILE_COUNT + 1):
        lines, size, n = [], 0, 0
        while size < FILE_BYTES:
            line = f"f{number:02d} line {n}: " + " ".join(words[(n * 7 + k * number) % len(words)] for k in range(10))
            lines.append(line)
            size += len(line) + 1
            n += 1
        path = folder / f"f{number:02d}.txt"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


def agent_env(setup: Setup, binary: Path, home: Path) -> dict[str, str]:
    # CI is left out too: the agents run as on a developer's machine, whichever runs the test.
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN) and k != "CI"}
    # Whatever an agent would send past loopback (telemetry, update checks) goes to a closed port.
    dead = "http://127.0.0.1:9"
    env |= {"HOME": str(home), "PATH": f"{binary.parent}{os.pathsep}{env.get('PATH', '')}",
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p),
            "HTTPS_PROXY": dead, "HTTP_PROXY": dead, "ALL_PROXY": dead, "NO_PROXY": "127.0.0.1,localhost",
            **setup.env}
    return env


def run_wrapped(argv: list[str], cwd: Path, env: dict[str, str], record: Path) -> tuple[int, str, str, float]:
    """Run `ctxfit wrap …` to its end: its exit code, stdout, stderr and wall seconds. An agent
    that says it cannot reach its provider while nothing has reached the provider (it would retry
    forever) is stopped then, and one still running after HANG_GUARD seconds is stopped too: -1."""
    started = time.monotonic()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    out: dict[str, list[str]] = {"stdout": [], "stderr": []}
    stuck = threading.Event()

    def drain(stream, lines: list[str]) -> None:
        for raw in stream:
            line = raw.decode("utf-8", "replace")
            lines.append(line)
            if any(sign in line for sign in STUCK):
                stuck.set()

    readers = [threading.Thread(target=drain, args=(process.stdout, out["stdout"]), daemon=True),
               threading.Thread(target=drain, args=(process.stderr, out["stderr"]), daemon=True)]
    for reader in readers:
        reader.start()
    stopped = False
    while process.poll() is None:
        unreachable = stuck.is_set() and not any(r["method"] == "POST" for r in recorded(record))
        if unreachable or time.monotonic() - started >= HANG_GUARD:
            _stop(process)
            stopped = True
            break
        try:
            process.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
    for reader in readers:
        reader.join(timeout=10)
    code = -1 if stopped else process.returncode
    return code, "".join(out["stdout"]), "".join(out["stderr"]), time.monotonic() - started


def _stop(process: subprocess.Popen) -> None:
    """Stop wrap and everything it started (its own process group)."""
    for number, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, number)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module", params=list(SETUPS))
def run(request, tmp_path_factory) -> Run:
    """The agent's one wrapped run, shared by the tests below (pytest groups them by agent)."""
    return run_agent(request.param, tmp_path_factory.mktemp(request.param))


def run_agent(name: str, base: Path, settings: bool = True) -> Run:
    """`ctxfit wrap NAME --budget 50000` on the reading task in `base/work`, with HOME `base/home`
    (holding the agent's settings files unless `settings` is false), against the scripted provider."""
    setup = SETUPS[name]
    command = setup.command or name
    binary = agent_binary(command)
    version = installed_version(binary, setup.package)
    wanted = pinned()[command].rsplit("@", 1)[1]
    if os.environ.get("CI"):
        assert wanted in version, f"{name} {version!r} is installed, .ci/run pins {wanted}"
    files = write_files(base / "work")
    home = base / "home"
    home.mkdir()
    for relative, text in setup.files.items() if settings else ():
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_text(text)
    record, proxy_log = base / "provider.jsonl", base / "proxy.log"
    provider = Server([sys.executable, str(ROOT / "tests" / "scripted_provider.py"), "--record", str(record),
                       "--files", *map(str, files)])
    try:
        argv = [sys.executable, "-m", "ctxfit_cli", "wrap", command, "--budget", str(BUDGET), "-u", provider.url,
                "--log", str(proxy_log), "--", *setup.args]
        code, stdout, stderr, seconds = run_wrapped(argv, base / "work", agent_env(setup, binary, home), record)
    finally:
        provider.stop()
    requests = recorded(record)
    done = Run(name, version, code, stdout, stderr, seconds, requests, [r for r in requests if r.get("main")],
               home, proxy_log.read_text(errors="replace") if proxy_log.exists() else "")
    sizes = [r["true_tokens"] for r in done.main]
    print(f"\n{name} {version}: exit {code} in {seconds:.1f} s, {len(requests)} requests "
          f"({len(sizes)} main, largest {max(sizes, default=0):,} tokens)")
    return done


def context(run: Run) -> str:
    """What a failure shows: the agent's and wrap's last words, and the proxy's last lines."""
    stopped = (f"\n--- {run.name} was stopped: it could not reach its provider (it printed one of {STUCK}) or ran "
               f"past {HANG_GUARD} s; did wrap point it at the proxy?" if run.exit_code == -1 else "")
    return (f"{stopped}\n--- {run.name} {run.version} exit {run.exit_code} in {run.seconds:.1f} s, "
            f"{len(run.requests)} requests reached the provider ({len(run.main)} main)"
            f"\n--- stdout (end):\n{run.stdout[-1500:]}\n--- stderr (end):\n{run.stderr[-2500:]}"
            f"\n--- proxy log (end):\n{run.proxy_log[-2500:]}")


# --- the requests -----------------------------------------------------------------------------------


def items_of(body: dict, dialect: str) -> list:
    return body.get({"anthropic": "messages", "openai": "messages", "responses": "input",
                     "gemini": "contents"}[dialect]) or []


def head_of(body: dict, dialect: str) -> dict:
    """What comes before the conversation's items: the tools and the system prompt."""
    keys = {"anthropic": ("tools", "system"), "openai": ("tools",), "responses": ("tools", "instructions"),
            "gemini": ("tools", "systemInstruction")}[dialect]
    return {k: body.get(k) for k in keys}


def normalized(value):
    """A request's items as the prompt cache sees them: without the `cache_control` markers the
    agent moves to its newest message, and a content of one text block read as that text (Claude
    Code sends the same message both ways)."""
    if isinstance(value, dict):
        value = {k: normalized(v) for k, v in value.items() if k != "cache_control"}
        content = value.get("content")
        if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) \
                and set(content[0]) == {"type", "text"} and content[0]["type"] == "text":
            value["content"] = content[0]["text"]
        return value
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def cleared(body: dict) -> int:
    return orjson.dumps(body).decode().count(CLEARED_RESULT)


def unpaired(body: dict, dialect: str) -> list[str]:
    """Calls without their result and results without their call, in one request (independently
    of ctxfit's validator)."""
    calls, results = [], []
    for item in items_of(body, dialect):
        if not isinstance(item, dict):
            continue
        if dialect == "anthropic":
            for block in item.get("content") if isinstance(item.get("content"), list) else []:
                if block.get("type") in ("tool_use", "server_tool_use"):
                    calls.append(block.get("id"))
                elif block.get("type") == "tool_result":
                    results.append(block.get("tool_use_id"))
        elif dialect == "openai":
            calls += [c.get("id") for c in item.get("tool_calls") or [] if isinstance(c, dict)]
            if item.get("role") == "tool":
                results.append(item.get("tool_call_id"))
        elif dialect == "responses":
            kind = str(item.get("type", ""))
            if kind.endswith("_call_output"):
                results.append(item.get("call_id"))
            elif kind.endswith("_call") and "call_id" in item:
                calls.append(item.get("call_id"))
        else:
            for part in item.get("parts") or []:
                if isinstance(part.get("functionCall"), dict):
                    calls.append(part["functionCall"].get("id") or part["functionCall"].get("name"))
                if isinstance(part.get("functionResponse"), dict):
                    results.append(part["functionResponse"].get("id") or part["functionResponse"].get("name"))
    problems = [f"result {r!r} has no call" for r in results if r not in calls]
    return problems + [f"call {c!r} has no result" for c in calls if c not in results]


def conversation_bodies(run: Run) -> list[dict]:
    """Every recorded request in the agent's dialect (main and side), with its body."""
    paths = {"anthropic": ("/v1/messages",), "openai": ("/v1/chat/completions",), "responses": ("/v1/responses",),
             "gemini": (":generateContent", ":streamGenerateContent")}[SETUPS[run.name].dialect]
    return [r for r in run.requests if r["method"] == "POST" and r["path"].endswith(paths)
            and isinstance(r.get("body"), dict)]


def ctxfit(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, "-m", "ctxfit_cli", *args], capture_output=True, text=True, env=env,
                          timeout=120)


# --- the tests --------------------------------------------------------------------------------------


def test_agent_finishes_with_the_providers_answer(run):
    final = Script([str(Path(f"f{n:02d}.txt")) for n in range(1, FILE_COUNT + 1)], None).final_text()
    assert run.exit_code == 0, "the agent did not finish" + context(run)
    assert final in run.stdout, f"the agent did not print the provider's final answer ({FINAL_ANSWER})" + context(run)
    steps = [r["step"] for r in run.main]
    assert steps and max(steps) == FILE_COUNT, f"the agent did not read every file: steps {steps}" + context(run)


def test_every_main_request_is_within_the_budget(run):
    assert run.main, "no main-conversation request reached the provider" + context(run)
    over = [(r["n"], r["true_tokens"]) for r in run.main if r["true_tokens"] > BUDGET]
    assert not over, (f"{len(over)} of {len(run.main)} main requests over {BUDGET:,} tokens by the provider's "
                      f"count (request number, tokens): {over}" + context(run))


def test_no_pair_is_broken(run):
    bodies = conversation_bodies(run)
    assert bodies, "no request in the agent's dialect reached the provider" + context(run)
    dialect = SETUPS[run.name].dialect
    invalid = [(r["n"], r["path"], validate_request(r["body"], dialect)[:3]) for r in bodies]
    invalid = [entry for entry in invalid if entry[2]]
    assert not invalid, f"ctxfit's validator refuses {len(invalid)} recorded requests: {invalid}" + context(run)
    broken = [(r["n"], problems) for r in bodies if (problems := unpaired(r["body"], dialect))]
    assert not broken, f"calls and results apart: {broken}" + context(run)


def test_the_prefix_changes_only_where_more_results_are_cleared(run):
    dialect = SETUPS[run.name].dialect
    assert len(run.main) > 1, "fewer than two main requests" + context(run)
    breaks = []
    for before, after in zip(run.main, run.main[1:]):
        if cleared(after["body"]) > cleared(before["body"]):
            continue  # a clearing batch: the cache is written anew from the first cleared result
        old, new = normalized(items_of(before["body"], dialect)), normalized(items_of(after["body"], dialect))
        if normalized(head_of(before["body"], dialect)) != normalized(head_of(after["body"], dialect)):
            breaks.append((after["n"], "tools or system changed"))
        elif new[: len(old)] != old:
            first = next(i for i, item in enumerate(old) if i >= len(new) or new[i] != item)
            breaks.append((after["n"], f"item {first} changed"))
    assert not breaks, f"the prefix changed with no more results cleared: {breaks}" + context(run)


def test_wraps_summary_says_what_it_fitted(run):
    found = re.search(r"ctxfit wrap: ([\d,]+) requests?, ([\d,]+) fitted, ([\d,]+) results? cleared", run.stderr)
    assert found, "wrap printed no summary" + context(run)
    requests, fitted, results = (int(g.replace(",", "")) for g in found.groups())
    with_cleared = sum(1 for r in run.main if cleared(r["body"]))
    assert fitted >= max(with_cleared, 1) and results > 0, (
        f"wrap says {fitted} fitted and {results} results cleared; the provider received {len(run.main)} main "
        f"requests, {with_cleared} with results cleared" + context(run))
    assert requests >= len(run.main), f"wrap counted {requests} requests, the provider {len(run.main)}" + context(run)


def test_codex_falls_back_from_its_websocket_at_once(run):
    """Codex 0.171 tries the Responses API over a WebSocket first: the proxy refuses the upgrade
    with 426, the one answer on which Codex turns to HTTPS at once (others cost it 7 tries, ~7 s)."""
    if run.name != "codex":
        pytest.skip("only Codex opens a WebSocket")
    assert run.proxy_log.count("GET /v1/responses 426") == 1, context(run)


def test_the_agents_own_log_reads_cleanly(run):
    setup = SETUPS[run.name]
    logs = sorted(p for p in run.home.glob(setup.logs) if p.is_file())
    assert logs, f"{run.name} left no log matching ~/{setup.logs}" + context(run)
    log = str(logs[-1])
    estimate = ctxfit("estimate", log, home=run.home)
    assert estimate.returncode == 0 and not estimate.stderr.strip(), (
        f"ctxfit estimate {log}: exit {estimate.returncode}\n{estimate.stderr[-2000:]}")
    for command in (("sessions", log, "--json"), ("watch", log, "--once", "--json")):
        done = ctxfit(*command, home=run.home)
        assert done.returncode == 0 and not done.stderr.strip(), (
            f"ctxfit {' '.join(command)}: exit {done.returncode}\n{done.stderr[-2000:]}")
        sessions = json.loads(done.stdout)["sessions"]
        assert len(sessions) == 1, f"ctxfit {command[0]} read {len(sessions)} sessions from {log}: {done.stdout[:1500]}"
        assert sessions[0]["agent"] == setup.agent and sessions[0]["calls"] >= FILE_COUNT, (
            f"ctxfit {command[0]} of {log}: {json.dumps(sessions[0])[:1500]}")


def test_gemini_cli_with_only_an_api_key_in_its_environment(tmp_path):
    """A user who never opened Gemini CLI's sign-in dialog has no `selectedType` in its settings,
    only GEMINI_API_KEY; the base URL then makes Gemini CLI 0.61 choose its `gateway` sign-in,
    which `-p` refuses ("Invalid auth method selected.", exit 41) unless wrap says which it is."""
    run = run_agent("gemini", tmp_path, settings=False)
    assert run.exit_code == 0 and run.main, "gemini did not run through wrap" + context(run)
    assert all(r["true_tokens"] <= BUDGET for r in run.main), context(run)


# --- the harness itself (no agent needed): the checks can fail, the provider answers each form ------


def test_the_checks_catch_what_they_look_for():
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}
    assert unpaired({"messages": [{"role": "user", "content": "hi"}, use, result]}, "anthropic") == []
    assert unpaired({"messages": [{"role": "user", "content": "hi"}, result]}, "anthropic") == [
        "result 't1' has no call"]
    assert unpaired({"input": [{"type": "custom_tool_call", "call_id": "c1", "name": "exec", "input": ""}]},
                    "responses") == ["call 'c1' has no result"]
    call = {"role": "model", "parts": [{"functionCall": {"id": "g1", "name": "read_file", "args": {}}}]}
    assert unpaired({"contents": [{"role": "user", "parts": [{"text": "hi"}]}, call]}, "gemini") == [
        "call 'g1' has no result"]
    # Claude Code sends a message as one text block with a cache marker, then as a string: the same prefix.
    marked = {"role": "system", "content": [{"type": "text", "text": "env", "cache_control": {"type": "ephemeral"}}]}
    assert normalized(marked) == normalized({"role": "system", "content": "env"})
    assert normalized([marked]) != normalized([{"role": "system", "content": "other"}])
    assert cleared({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                                 "content": CLEARED_RESULT}]}]}) == 1


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    files = write_files(tmp_path_factory.mktemp("provider") / "work")[:2]
    with Server([sys.executable, str(ROOT / "tests" / "scripted_provider.py"), "--files", *map(str, files)]) as server:
        yield server, [str(f) for f in files]


def post(url: str, body: dict | None = None, method: str = "POST", headers: dict | None = None) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    data = orjson.dumps(body) if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            raw = reply.read()
            return reply.status, orjson.loads(raw) if raw else {}
    except urllib.error.HTTPError as error:
        return error.code, {}


def test_the_provider_reads_with_claude_codes_read_then_answers(provider):
    server, files = provider
    tools = [{"name": "Read", "input_schema": {"type": "object", "required": ["file_path"],
                                               "properties": {"file_path": {"type": "string"}}}}]
    body = {"model": "m", "max_tokens": 10, "tools": tools, "messages": [{"role": "user", "content": "read"}]}
    status, reply = post(server.url + "/v1/messages", body)
    assert status == 200 and reply["content"][1]["input"] == {"file_path": files[0]}
    assert reply["usage"]["input_tokens"] + reply["usage"]["cache_read_input_tokens"] == true_size(body, "anthropic")
    # The newest result is step 1's (whatever came before it was cleared): the 2 files are read.
    result = {"type": "tool_result", "tool_use_id": "toolu_ctxfit_step_0001", "content": "…"}
    body["messages"] += [{"role": "assistant", "content": reply["content"]}, {"role": "user", "content": [result]}]
    status, reply = post(server.url + "/v1/messages", body)
    assert reply["content"][0]["text"].startswith(FINAL_ANSWER)
    status, counted = post(server.url + "/v1/messages/count_tokens", {"model": "m", "messages": body["messages"]})
    assert counted["input_tokens"] == true_size({"messages": body["messages"]}, "anthropic")


@pytest.mark.parametrize("tool, expected", [
    ({"type": "custom", "name": "exec"}, "custom_tool_call"),
    ({"type": "function", "name": "exec_command", "parameters": {}}, "function_call"),
    ({"type": "function", "name": "shell", "parameters": {}}, "function_call"),
])
def test_the_provider_answers_codex_in_its_tools_form(provider, tool, expected):
    server, files = provider
    tools = [{"type": "additional_tools", "tools": [{"type": "namespace", "name": "functions", "tools": [tool]}]}]
    status, reply = post(server.url + "/v1/responses", {"model": "m", "input": [
        *tools, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "read"}]}]})
    call = reply["output"][-1]
    assert status == 200 and call["type"] == expected and call["name"] == tool["name"]
    written = call.get("input") or call.get("arguments")
    assert f"cat {files[0]}" in written, written


def test_the_provider_answers_gemini_clis_router_with_json_of_its_schema(provider):
    server, _ = provider
    schema = {"type": "OBJECT", "required": ["complexity_reasoning", "complexity_score"], "properties": {
        "complexity_reasoning": {"type": "STRING"}, "complexity_score": {"type": "INTEGER"}}}
    body = {"contents": [{"role": "user", "parts": [{"text": "a"}]}, {"role": "user", "parts": [{"text": "b"}]}],
            "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": schema}}
    status, reply = post(server.url + "/v1beta/models/flash-lite:generateContent", body)
    answer = orjson.loads(reply["candidates"][0]["content"]["parts"][0]["text"])
    assert status == 200 and set(answer) == {"complexity_reasoning", "complexity_score"}
    assert reply["usageMetadata"]["promptTokenCount"] == true_size(body, "gemini")


def test_the_provider_turns_codexs_websocket_away_and_answers_head(provider):
    server, _ = provider
    upgrade = {"connection": "Upgrade", "upgrade": "websocket", "sec-websocket-version": "13",
               "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ=="}
    assert post(server.url + "/v1/responses", method="GET", headers=upgrade)[0] == 426
    assert post(server.url + "/", method="HEAD")[0] == 200
