"""`ctxfit wrap`: the agent runs behind its own proxy and nothing is left when it ends, however
it ends. Real processes: wrap, its proxy, a stand-in agent using the real SDKs with the agent's
own variables (`stand_in_agent.py`, installed as `claude` / `codex` / `gemini` on PATH), the fake provider."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ctxfit_cli import count, validate_request
from servers import ROOT, eventually, fake_provider, recorded

STAND_IN = ROOT / "tests" / "stand_in_agent.py"
GEMINI_PATH = r"/v1(beta)?/models/gemini-2\.5-pro:(generateContent|streamGenerateContent)"
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-test-wrap", "OPENAI_API_KEY": "sk-test-wrap", "GEMINI_API_KEY": "AIza-test-wrap"}



def alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def proxies_for(upstream: str) -> list[int]:
    """The `ctxfit proxy` processes forwarding to `upstream` (each test has its own provider)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"proxy" in argv and upstream.encode() in argv and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


@pytest.fixture
def world(tmp_path):
    """The fake provider, and `claude` / `codex` / `gemini` commands on PATH that are the stand-in."""
    record = tmp_path / "upstream.jsonl"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, api in (("claude", "anthropic"), ("codex", "responses"), ("gemini", "gemini")):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STAND_IN}" {api} "$@"\n')
        script.chmod(0o755)
    with fake_provider(record, steps=1000) as provider:
        env = {**os.environ, **KEYS, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        for variable in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_API_KEY"):
            env.pop(variable, None)
        env["XDG_STATE_HOME"] = str(tmp_path / "state")  # wrap's log, when no --log is given
        yield provider.url, record, env, tmp_path


def wrap(env: dict, *args: str, **options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ctxfit_cli", "wrap", *args], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **options)


@pytest.mark.parametrize("agent, path, dialect", [("claude", "/v1/messages", "anthropic"),
                                                  ("codex", "/v1/responses", "responses"),
                                                  ("gemini", GEMINI_PATH, "gemini")])
def test_the_agent_runs_fitted_and_its_exit_code_is_returned(world, agent, path, dialect):
    upstream, record, env, tmp = world
    log = tmp / "proxy.log"
    process = wrap(env, agent, "--upstream", upstream, "--budget", "20000", "--log", str(log),
                   "--", "--steps", "8", "--exit", "7")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 7, err.decode()
    assert b"stand-in: " in out  # the agent's own output, on the terminal as it is
    base = out.decode().split("base URL ")[1].strip()
    assert base.startswith("http://127.0.0.1:") and base != upstream  # pointed at the proxy
    records = recorded(record)
    assert [bool(re.fullmatch(path, r["path"])) for r in records] == [True] * 8
    for r in records:
        body = r["body"]
        assert validate_request(body, dialect) == []
        conversation = body.get({"anthropic": "messages", "responses": "input"}.get(dialect, "contents"))
        system = body.get("systemInstruction") if dialect == "gemini" else body.get("instructions")
        assert count(conversation, tools=body.get("tools"), system=system, dialect=dialect) <= 20_000
    text = err.decode()
    assert f"log: {log}" in text and "is not set" not in text
    summary = text.strip().splitlines()[-1]
    assert "8 requests" in summary and "fitted" in summary and "tokens kept out" in summary and "cache reads" in summary
    assert len(re.findall(f"POST {path} 200", log.read_text())) == 8
    assert "Traceback" not in log.read_text()
    assert eventually(lambda: not proxies_for(upstream))


def test_any_command_with_env_and_the_upstream_it_pointed_at(world):
    upstream, record, env, tmp = world
    env = {**env, "ANTHROPIC_BASE_URL": upstream}  # where the program pointed: the proxy's upstream
    log = tmp / "any.log"
    process = wrap(env, "--env", "ANTHROPIC_BASE_URL", "--workers", "2", "--log", str(log),
                   "--", sys.executable, str(STAND_IN), "anthropic", "--steps", "2")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err.decode()
    assert len(recorded(record)) == 2
    assert "; 2 fitting workers; " in log.read_text()  # the proxy's options work the same under wrap (its default: 1)
    assert "2 requests" in err.decode().strip().splitlines()[-1]


def test_a_genai_program_with_env_goes_through_the_proxy_to_where_it_pointed(world):
    upstream, record, env, tmp = world
    env = {**env, "GOOGLE_GEMINI_BASE_URL": upstream}
    process = wrap(env, "--env", "GOOGLE_GEMINI_BASE_URL", "--budget", "20000", "--log", str(tmp / "proxy.log"),
                   "--", sys.executable, str(STAND_IN), "gemini", "--steps", "4")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err.decode()
    assert upstream not in out.decode()  # the program was pointed at the proxy, which forwarded to its upstream
    records = recorded(record)
    assert len(records) == 4 and all(validate_request(r["body"], "gemini") == [] for r in records)
    assert records[-1]["headers"]["x-goog-api-key"] == KEYS["GEMINI_API_KEY"]
    assert re.match(r"4 requests, [1-4] fitted", err.decode().strip().splitlines()[-1].split(": ", 1)[-1])


def test_gemini_set_to_an_api_key_it_lacks_is_told_its_requests_may_not_come_through(world):
    upstream, record, env, tmp = world
    settings = tmp / "home" / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    env = {k: v for k, v in env.items() if k != "GEMINI_API_KEY"} | {"GOOGLE_API_KEY": "AIza-test-google",
                                                                     "HOME": str(tmp / "home")}
    process = wrap(env, "gemini", "--upstream", upstream, "--", "--steps", "1")
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err.decode()
    assert "GEMINI_API_KEY is not set: gemini may send no API key" in err.decode()
    assert len(recorded(record)) == 1  # (this stand-in, the SDK, also takes GOOGLE_API_KEY)


@pytest.mark.parametrize("settings", [{"security": {"auth": {"selectedType": "oauth-personal"}}},
                                      {"selectedAuthType": "oauth-personal"}])
def test_gemini_signed_in_with_google_is_fitted_on_its_way_to_code_assist(world, settings):
    """Signed in with Google (its settings say so), Gemini
    CLI talks to Google's Code Assist API at CODE_ASSIST_ENDPOINT: Gemini's request wrapped in
    {"model", "project", "request"}. wrap points that variable at the proxy, which fits the
    inner contents and forwards to Code Assist (here the fake provider's)."""
    upstream, record, env, tmp = world
    home = tmp / "home"
    (home / ".gemini").mkdir(parents=True)
    if settings is not None:
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    env = {k: v for k, v in env.items() if k != "GEMINI_API_KEY"} | {"HOME": str(home)}
    log = tmp / "google.log"
    process = wrap(env, "gemini", "--upstream", upstream, "--budget", "20000", "--log", str(log),
                   "--", "--steps", "6")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err.decode()
    assert "signed in with Google" in err.decode() and "is not set" not in err.decode()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", out.decode().split("base URL ")[1].strip())
    records = recorded(record)
    assert [r["path"] for r in records] == [f"/v1internal:{m}" for m in ("generateContent", "streamGenerateContent")] * 3
    for r in records:
        assert r["body"]["model"] == "gemini-2.5-pro" and r["body"]["project"] == "stand-in-project"
        inner = r["body"]["request"]
        assert validate_request(inner, "gemini") == []
        assert count(inner["contents"], tools=inner["tools"], system=inner["systemInstruction"], dialect="gemini") <= 20_000
    assert records[-1]["headers"].get("authorization", "").startswith("Bearer ya29.")
    lines = re.findall(r"POST /v1internal:\w+ 200 .*", log.read_text())
    assert len(lines) == 6 and not any("not fitted" in line or "passed through" in line for line in lines)
    assert any("results cleared" in line for line in lines) and "gemini-2.5-pro" in lines[-1]
    assert "confirmed" in lines[-1]  # anchored on the usage a Code Assist reply reports (response.usageMetadata)


def test_unknown_agent_and_missing_command_are_usage_errors(world):
    _, _, env, _ = world
    for args in (["aider"], ["--env", "ANTHROPIC_BASE_URL"], ["--env", "MY_URL", "--", "true"]):
        process = wrap(env, *args)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 2, (args, err)
        assert b"ctxfit: error:" in err


def test_an_agent_that_is_not_installed_is_told_before_a_proxy_starts(world):
    _, _, env, tmp = world
    env = {**env, "PATH": os.path.dirname(sys.executable), "TMPDIR": str(tmp)}  # (no claude there)
    process = wrap(env, "claude")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert err.decode().splitlines() == ["ctxfit: error: claude: command not found (is it installed and on PATH?)"]
    assert not (tmp / "state" / "ctxfit").exists()  # no log of a proxy that never ran


def started(world, *extra: str) -> tuple[subprocess.Popen, int, int, str]:
    """wrap running a stand-in that waits: (wrap, agent pid, proxy pid, upstream)."""
    upstream, _, env, tmp = world
    pid_file = tmp / "agent.pid"
    process = wrap(env, "claude", "--upstream", upstream, "--", "--steps", "1", "--wait", str(pid_file),
                   start_new_session=True)  # its own process group, as a terminal gives it
    assert eventually(lambda: pid_file.exists() and pid_file.read_text())
    agent = int(pid_file.read_text())
    assert eventually(lambda: len(proxies_for(upstream)) == 1)
    return process, agent, proxies_for(upstream)[0], upstream


@pytest.mark.parametrize("how, code", [
    ("SIGTERM to wrap", 128 + signal.SIGTERM),  # passed on to the agent, which dies of it
    ("SIGKILL to wrap", -signal.SIGKILL),  # the kernel takes the agent and the proxy down with it
    ("SIGKILL to the agent", 128 + signal.SIGKILL),
    ("SIGTERM to the agent", 128 + signal.SIGTERM),
    ("Ctrl-C", 0),  # SIGINT to the foreground group: the agent decides (this one exits 0), wrap goes on
])
def test_no_process_is_left_however_it_ends(world, how, code):
    process, agent, proxy, upstream = started(world)
    target = process.pid if "wrap" in how else agent
    if how == "Ctrl-C":
        os.killpg(process.pid, signal.SIGINT)
    else:
        os.kill(target, signal.SIGKILL if "SIGKILL" in how else signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == code, err.decode()
    assert eventually(lambda: not alive(agent) and not alive(proxy)), how
    assert not proxies_for(upstream)
    if "to wrap" not in how or "SIGTERM" in how:
        assert "requests" in err.decode().strip().splitlines()[-1]  # the summary, at the end


def test_codex_signed_in_with_chatgpt_is_fitted_on_its_way_to_the_chatgpt_backend(world):
    """Signed in with ChatGPT, Codex talks to chatgpt.com/backend-api/codex, and posts to its
    base URL + /responses: wrap points it at the proxy's root and forwards to that backend."""
    upstream, record, env, tmp = world
    home = tmp / "codex-home"
    home.mkdir()
    tokens = {"id_token": "x", "access_token": "chatgpt-token", "refresh_token": "r", "account_id": "acct"}
    (home / "auth.json").write_text(json.dumps({"auth_mode": "chatgpt", "OPENAI_API_KEY": None, "tokens": tokens}))
    env = {**env, "CODEX_HOME": str(home)}
    log = tmp / "chatgpt.log"
    process = wrap(env, "codex", "--upstream", f"{upstream}/backend-api/codex", "--budget", "20000",
                   "--log", str(log), "--", "--steps", "6")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err.decode()
    base = out.decode().split("base URL ")[1].strip()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", base)  # the proxy's root: Codex adds /responses
    assert "signed in with ChatGPT" in err.decode()
    records = recorded(record)
    assert [r["path"] for r in records] == ["/backend-api/codex/responses"] * 6
    for r in records:
        assert validate_request(r["body"], "responses") == []
        assert count(r["body"]["input"], tools=r["body"]["tools"], system="Be brief.", dialect="responses") <= 20_000
    lines = re.findall(r"POST /responses 200 .*", log.read_text())
    assert len(lines) == 6 and not any("passed through" in line or "not fitted" in line for line in lines)


def test_which_provider_is_behind_codex_comes_from_its_auth_file(tmp_path):
    from ctxfit_cli.agents import codex
    from ctxfit_cli.serve import agents

    def agent(auth: object | None) -> agents.Agent:
        if auth is not None:
            (tmp_path / "auth.json").write_text(json.dumps(auth))
        return agents.agent_named("codex", {"CODEX_HOME": str(tmp_path)})

    assert agent(None) is agents.AGENTS["codex"]  # no login saved
    assert agent({"auth_mode": "apikey", "OPENAI_API_KEY": "sk-x", "tokens": None}) is agents.AGENTS["codex"]
    assert agent({"OPENAI_API_KEY": "sk-x"}) is agents.AGENTS["codex"]
    assert agent({"OPENAI_API_KEY": None, "tokens": {"access_token": "t"}}) is codex.WITH_CHATGPT
    chatgpt = agent({"auth_mode": "chatgpt", "tokens": {"access_token": "t"}})
    assert agents.upstream_for(chatgpt, None, {}) == "https://chatgpt.com/backend-api/codex"
    assert (tmp_path / "auth.json").write_text("not json") and agent(None) is agents.AGENTS["codex"]


def test_gemini_with_nothing_selected_is_pointed_by_its_base_url_variable(tmp_path):
    """Gemini CLI 0.61 with no way to sign in selected picks its `gateway` auth type from
    GOOGLE_GEMINI_BASE_URL alone (`getAuthTypeFromEnv`), key or not: not Code Assist."""
    from ctxfit_cli.agents import gemini_cli
    from ctxfit_cli.serve import agents

    home = {"HOME": str(tmp_path)}
    assert agents.agent_named("gemini", home) is agents.AGENTS["gemini"]
    assert agents.agent_named("gemini", home | {"GOOGLE_GENAI_USE_GCA": "true"}) is gemini_cli.WITH_GOOGLE
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType": "gateway"}}}))
    assert agents.agent_named("gemini", home) is agents.AGENTS["gemini"]


def test_codex_is_pointed_by_its_config_key_and_a_gateway_in_its_config_is_the_upstream(tmp_path):
    """Codex 0.171 reads `openai_base_url` (`-c`), no longer OPENAI_BASE_URL; its own
    config.toml may name the user's gateway, which becomes the proxy's upstream."""
    from ctxfit_cli.agents import codex as codex_agent
    from ctxfit_cli.serve import agents

    codex = agents.AGENTS["codex"]
    assert codex.arguments("http://127.0.0.1:9/v1") == ["-c", 'openai_base_url="http://127.0.0.1:9/v1"']
    assert codex_agent.WITH_CHATGPT.arguments("http://x")[-2:] == ["-c", "features.enable_request_compression=false"]
    assert codex.pointed_by() == "openai_base_url (-c) or OPENAI_BASE_URL"
    environ = {"CODEX_HOME": str(tmp_path)}
    assert agents.upstream_for(codex, None, environ) == "https://api.openai.com"
    (tmp_path / "config.toml").write_text('openai_base_url = "https://gateway.example/v1"\n')
    assert agents.upstream_for(codex, None, environ) == "https://gateway.example"


def test_copilot_is_pointed_by_its_provider_variable_in_the_form_of_its_provider_type():
    """Copilot CLI 1.0.102 with a provider of the user's own (BYOK): COPILOT_PROVIDER_BASE_URL in
    the form of COPILOT_PROVIDER_TYPE (openai, the default, ends in /v1; anthropic does not), and
    the user's endpoint, an Ollama say, is where the proxy forwards."""
    from ctxfit_cli.agents import copilot_cli
    from ctxfit_cli.serve import agents

    openai_type = agents.agent_named("copilot", {})
    anthropic_type = agents.agent_named("copilot", {"COPILOT_PROVIDER_TYPE": "Anthropic"})
    assert openai_type is agents.AGENTS["copilot"] and anthropic_type is copilot_cli.WITH_ANTHROPIC
    assert (openai_type.variable, openai_type.suffix) == ("COPILOT_PROVIDER_BASE_URL", "/v1")
    assert anthropic_type.suffix == "" and anthropic_type.upstream == "https://api.anthropic.com"
    ollama = {"COPILOT_PROVIDER_BASE_URL": "http://localhost:11434/v1"}
    assert agents.upstream_for(openai_type, None, ollama) == "http://localhost:11434"
    assert agents.upstream_for(openai_type, None, {}) == "https://api.openai.com"


def test_opencode_and_qwen_are_pointed_as_their_sdks_read_base_urls_and_claude_keeps_its_form():
    """OpenCode's Anthropic provider and Qwen Code's OpenAI one take base URLs ending in /v1;
    `--env ANTHROPIC_BASE_URL` stays in Claude Code's and the Anthropic SDKs' form, without it."""
    from ctxfit_cli.serve import agents

    assert (agents.AGENTS["opencode"].variable, agents.AGENTS["opencode"].suffix) == ("ANTHROPIC_BASE_URL", "/v1")
    assert (agents.AGENTS["qwen"].variable, agents.AGENTS["qwen"].suffix) == ("OPENAI_BASE_URL", "/v1")
    assert agents.agent_for_variable("ANTHROPIC_BASE_URL", "python").suffix == ""
    gateway = {"ANTHROPIC_BASE_URL": "https://gateway.example/v1"}
    assert agents.upstream_for(agents.AGENTS["opencode"], None, gateway) == "https://gateway.example"


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_an_agent_that_sends_nothing_through_the_proxy_is_an_error_of_its_own(world, agent):
    """A newer agent that reads its base URL from somewhere wrap did not set talks to the
    provider directly: wrap says so on a last error line and exits 2, whatever the agent's code."""
    upstream, record, env, tmp = world
    process = wrap(env, agent, "--upstream", upstream, "--", "--steps", "2", "--elsewhere", upstream)
    _, err = process.communicate(timeout=120)
    lines = err.decode().strip().splitlines()
    assert process.returncode == 2, err.decode()
    assert len(recorded(record)) == 2  # it ran, straight to the provider: nothing fitted
    assert "0 requests, 0 fitted" in lines[-2]
    pointed = "ANTHROPIC_BASE_URL" if agent == "claude" else "openai_base_url (-c) or OPENAI_BASE_URL"
    assert lines[-1].startswith(f"ctxfit: error: {agent} sent nothing through the proxy: it did not use {pointed}")
    assert (tmp / "state" / "ctxfit" / "wrap.log").exists()  # the default log, in the state folder


def test_wrap_logs_to_the_state_folder_and_rotates_it(tmp_path):
    from ctxfit_cli.serve import supervise

    environ = {"XDG_STATE_HOME": str(tmp_path)}
    log = supervise.state_log(environ, "claude")
    assert log == tmp_path / "ctxfit" / "wrap.log" and log.read_text().startswith("--- ctxfit wrap claude, ")
    for run in range(supervise.LOG_FILES + 2):
        log.write_text(f"run {run}\n" + "x" * supervise.LOG_BYTES)
        supervise.state_log(environ, "codex")
    names = sorted(p.name for p in log.parent.iterdir())
    assert names == ["wrap.log", *(f"wrap.log.{n}" for n in range(1, supervise.LOG_FILES))]
    assert (log.parent / "wrap.log.1").read_text().startswith(f"run {supervise.LOG_FILES + 1}")
    assert log.stat().st_size < 200  # the new run's line only
    assert supervise.state_log({"HOME": str(tmp_path / "home")}, "x") == tmp_path / "home/.local/state/ctxfit/wrap.log"


def test_a_proxy_that_stops_while_the_agent_runs_stops_the_agent_and_says_so(world):
    """The agent starts as the proxy does (wrap hands the proxy its listening socket); should the
    proxy end while the agent runs, the agent's requests would go nowhere: wrap stops it."""
    process, agent, proxy, upstream = started(world)
    os.kill(proxy, signal.SIGKILL)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2, err.decode()
    assert "the proxy stopped (exit -9) while the agent ran" in err.decode()
    assert eventually(lambda: not alive(agent))
