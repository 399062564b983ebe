"""Running an agent behind its own proxy (`ctxfit wrap`), and leaving nothing behind.

The proxy is a child process (`ctxfit proxy --port 0`) in a session of its own, so the
terminal's Ctrl-C reaches the agent, which decides what it means, and not the proxy. The agent
runs in the foreground with wrap's own terminal (stdin, tty, colours untouched), its base-URL
variable pointing at the proxy. Both children are bound to wrap's life: on Linux the kernel
sends them SIGTERM when wrap dies, however it dies (`prctl(PR_SET_PDEATHSIG)`), and wrap
passes SIGTERM, SIGHUP and SIGQUIT on to the agent. When the agent ends, wrap reads the
proxy's stats, stops it, and returns the agent's exit code (128 + N for a signal N, as a shell
does).

Which variable each agent honours, from each agent's own source and docs: Claude Code
`ANTHROPIC_BASE_URL`; Codex CLI `OPENAI_BASE_URL` (read by its built-in `openai` provider,
codex-rs `model_provider_info.rs`; it ends in `/v1`, and Codex posts to `{it}/responses`;
signed in with ChatGPT rather than an API key, Codex talks to `chatgpt.com/backend-api/codex`
with the same variable overriding it, so wrap reads `$CODEX_HOME/auth.json` to know which
provider is behind it and points the variable at the proxy without `/v1`); Gemini CLI `GOOGLE_GEMINI_BASE_URL`
(its `contentGenerator.ts` passes it to `@google/genai` as the base URL with API-key auth,
`GEMINI_API_KEY`; signed in with Google it talks to Google's Code Assist API instead, at
`CODE_ASSIST_ENDPOINT` when that is set, gemini-cli `code_assist/server.ts`: wrap reads which
way it signs in from its settings, `security.auth.selectedType` or the older `selectedAuthType`
in `~/.gemini/settings.json` and the project's `.gemini/settings.json`).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Agent:
    command: str
    #: The variable the agent reads its API's base URL from.
    variable: str
    #: The provider it talks to when the variable is not set.
    upstream: str
    #: What follows the proxy's address in the variable (the OpenAI SDKs expect `/v1`).
    suffix: str = ""
    #: The variable of the API key without which the agent does not use the base URL at all.
    key: str = ""


AGENTS = {
    "claude": Agent("claude", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
    "codex": Agent("codex", "OPENAI_BASE_URL", "https://api.openai.com", "/v1"),
    "gemini": Agent(
        "gemini", "GOOGLE_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com", key="GEMINI_API_KEY"
    ),
}
#: Codex CLI signed in with ChatGPT: the ChatGPT backend behind the same variable.
CODEX_WITH_CHATGPT = Agent("codex", "OPENAI_BASE_URL", "https://chatgpt.com/backend-api/codex")
#: Gemini CLI signed in with Google: Google's Code Assist API, at the endpoint the variable names.
GEMINI_WITH_GOOGLE = Agent("gemini", "CODE_ASSIST_ENDPOINT", "https://cloudcode-pa.googleapis.com")
#: Gemini CLI's ways to sign in that talk to Code Assist (`selectedType` in its settings).
GOOGLE_SIGN_INS = ("oauth-personal", "cloud-shell", "compute-default-credentials")
#: For `ctxfit wrap --env VAR -- COMMAND`: the provider a well-known variable points at.
KNOWN_VARIABLES = {agent.variable: agent for agent in AGENTS.values()}
#: How long the proxy may take to start, and to stop once asked.
START_SECONDS, STOP_SECONDS = 30.0, 10.0
_PR_SET_PDEATHSIG = 1


def agent_named(name: str, environ: dict) -> Agent:
    """The agent `ctxfit wrap NAME` runs, as it is set up here (Codex: how it signs in)."""
    if name == "codex" and codex_signed_in_with_chatgpt(environ):
        return CODEX_WITH_CHATGPT
    if name == "gemini" and gemini_signed_in_with_google(environ):
        return GEMINI_WITH_GOOGLE
    return AGENTS[name]


def gemini_signed_in_with_google(environ: dict, project: Path | None = None) -> bool:
    """Whether Gemini CLI talks to Code Assist: the way to sign in its settings select (the
    project's over the user's), else, with none selected, whether no API key is set."""
    home = Path(environ.get("HOME") or Path.home())
    selected = None
    for settings in (home / ".gemini" / "settings.json", (project or Path.cwd()) / ".gemini" / "settings.json"):
        selected = _selected_sign_in(settings) or selected
    if selected is not None:
        return selected in GOOGLE_SIGN_INS
    return not environ.get(AGENTS["gemini"].key)


def _selected_sign_in(path: Path) -> str | None:
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(settings, dict):
        return None
    auth = settings.get("security", {}).get("auth", {}) if isinstance(settings.get("security"), dict) else {}
    selected = (auth.get("selectedType") if isinstance(auth, dict) else None) or settings.get("selectedAuthType")
    return selected if isinstance(selected, str) else None


def codex_signed_in_with_chatgpt(environ: dict) -> bool:
    """Whether Codex uses a ChatGPT login ($CODEX_HOME/auth.json, default ~/.codex): its
    `auth_mode`, or, in files from before it was written, tokens and no API key."""
    home = Path(environ.get("CODEX_HOME") or Path(environ.get("HOME") or Path.home()) / ".codex")
    try:
        auth = json.loads((home / "auth.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # no login saved: an API key, if anything
    if not isinstance(auth, dict):
        return False
    mode = auth.get("auth_mode")
    if isinstance(mode, str):
        return mode.lower().startswith("chatgpt")
    return bool(auth.get("tokens")) and not auth.get("OPENAI_API_KEY")


def agent_for_variable(variable: str, command: str) -> Agent:
    """The agent description for `--env VAR -- COMMAND`."""
    known = KNOWN_VARIABLES.get(variable)
    return Agent(command, variable, known.upstream if known else "", known.suffix if known else "")


def upstream_for(agent: Agent, given: str | None, environ: dict) -> str:
    """The provider to forward to: `--upstream`, else where the agent's variable pointed
    already (the user's own gateway), else the agent's provider."""
    if given:
        return given
    current = environ.get(agent.variable, "").rstrip("/")
    if current:
        return current[: -len(agent.suffix)] if agent.suffix and current.endswith(agent.suffix) else current
    return agent.upstream


@dataclass
class Run:
    """What `wrap` did: the agent's exit code and the proxy's stats at the end (None if the
    proxy could not be asked)."""

    exit_code: int
    stats: dict | None


class WrapFailed(Exception):
    """The proxy did not start (the message holds the end of its log), or the agent could not."""


def run_wrapped(
    argv: Sequence[str], agent: Agent, proxy_options: Sequence[str], log_path: Path, say: Callable[[str], None]
) -> Run:
    """Start the proxy, run `argv` (the agent and its arguments) pointed at it, stop the proxy."""
    proxy, url = start_proxy(proxy_options, log_path)
    try:
        say(f"proxy on {url} (log: {log_path}); running {agent.command} with {agent.variable}={url}{agent.suffix}")
        if agent.key and not os.environ.get(agent.key):
            say(
                f"{agent.key} is not set: {agent.command} uses {agent.variable} only with API-key auth "
                "(signed in with Google, its requests go to Google directly and nothing is fitted)"
            )
        env = {**os.environ, agent.variable: url + agent.suffix}
        code = run_foreground(argv, env)
        return Run(code, read_stats(url))
    finally:
        stop(proxy)


def start_proxy(options: Sequence[str], log_path: Path) -> tuple[subprocess.Popen, str]:
    """`ctxfit proxy` on a free loopback port, its lines to `log_path`: (process, URL)."""
    with open(log_path, "ab") as log:
        proxy = subprocess.Popen(
            [sys.executable, "-m", "ctxfit_cli", "proxy", "--port", "0", "--host", "127.0.0.1", *options],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
            preexec_fn=_dies_with(os.getpid()),
        )
    assert proxy.stdout is not None  # (stdout=PIPE)
    ready, _, _ = select.select([proxy.stdout], [], [], START_SECONDS)
    line = proxy.stdout.readline().decode("utf-8", "replace").strip() if ready else ""  # its first line: its URL
    if not line.startswith("http://"):
        stop(proxy)
        tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        raise WrapFailed("the proxy did not start: " + (" / ".join(tail) or "no output"))
    proxy.stdout.close()
    return proxy, line


def run_foreground(argv: Sequence[str], env: dict) -> int:
    """Run the agent with this terminal; signals sent to wrap are passed on. Its exit code."""
    try:
        agent = subprocess.Popen(list(argv), env=env, preexec_fn=_dies_with(os.getpid()))
    except FileNotFoundError:
        raise WrapFailed(f"{argv[0]}: command not found (is it installed and on PATH?)") from None
    forwarded = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
    previous = {sig: signal.getsignal(sig) for sig in (*forwarded, signal.SIGINT)}
    # Ctrl-C reaches the agent from the terminal itself (same process group): what it means is
    # the agent's to decide (Claude Code stops a reply). A handler, not SIG_IGN, which the
    # agent would inherit.
    signal.signal(signal.SIGINT, _ignore)
    for sig in forwarded:
        signal.signal(sig, lambda number, _frame: _pass_on(agent, number))
    try:
        code = agent.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - code if code < 0 else code


def read_stats(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(f"{url}/ctxfit/stats", timeout=5) as response:
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


def stop(proxy: subprocess.Popen) -> None:
    """Ask the proxy to stop (SIGTERM: it closes its connections), kill it past the deadline."""
    if proxy.poll() is None:
        proxy.terminate()
        try:
            proxy.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            proxy.kill()
            proxy.wait()
    if proxy.stdout is not None and not proxy.stdout.closed:
        proxy.stdout.close()


def summary(stats: dict | None) -> str:
    """One line: requests, fitted, results cleared, tokens kept out, cache-read share."""
    if stats is None:
        return "summary unavailable (the proxy's stats could not be read)"
    totals = stats.get("totals", {})
    conversations = stats.get("conversations", {}).values()
    cleared = sum(c.get("results_cleared", 0) for c in conversations)
    kept_out = sum(c.get("tokens_kept_out", 0) for c in conversations)
    prompt = sum(c.get("prompt_tokens_reported", 0) for c in conversations)
    cached = sum(c.get("cache_read_tokens", 0) for c in conversations)
    share = f"{cached / prompt:.0%} of the prompt tokens the provider reported" if prompt else "not reported"
    return (
        f"{totals.get('requests', 0):,} requests, {totals.get('fitted', 0):,} fitted, {cleared:,} results "
        f"cleared, {kept_out:,} tokens kept out; cache reads {share}"
    )


def _dies_with(parent: int) -> Callable[[], None] | None:
    """A `preexec_fn` that has the kernel send the child SIGTERM when `parent` dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def bind() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the binding: too late to be told
            os._exit(1)

    return bind


def _pass_on(agent: subprocess.Popen, number: int) -> None:
    if agent.poll() is None:
        agent.send_signal(number)


def _ignore(_number: int, _frame: object) -> None:
    pass
