"""Running an agent behind its own proxy (`ctxfit wrap`), and leaving nothing behind.

The proxy is a child process (`ctxfit proxy --port 0`) in a session of its own, so the
terminal's Ctrl-C reaches the agent, which decides what it means, and not the proxy. The agent
runs in the foreground with wrap's own terminal (stdin, tty, colours untouched), its base-URL
variable pointing at the proxy. Both children are bound to wrap's life: on Linux the kernel
sends them SIGTERM when wrap dies, however it dies (`prctl(PR_SET_PDEATHSIG)`), and wrap
passes SIGTERM, SIGHUP and SIGQUIT on to the agent. When the agent ends, wrap reads the
proxy's stats, stops it, and returns the agent's exit code (128 + N for a signal N, as a shell
does); `summary_lines` say what the proxy did, and what it could not do (requests left unfitted
and why, a provider that could not be reached or refused), and `nothing_sent` whether the agent
used the proxy at all (a newer agent may read its base URL elsewhere).

wrap's log is one file in the user's state folder (`$XDG_STATE_HOME/ctxfit/wrap.log`, default
`~/.local/state/ctxfit`), each run starting with a line of its own; past `LOG_BYTES` it is
rotated at the next start (`wrap.log.1` … `.{LOG_FILES - 1}`, the oldest dropped).

Which agent is run how (its variable, its provider): `agents.py`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .agents import Agent

#: How long the proxy may take to stop once asked, and to answer for its stats (it may still be
#: starting when a short-lived agent ends).
STOP_SECONDS, STATS_SECONDS = 10.0, 30.0
#: wrap's log is rotated at a start once past this size, and this many files are kept.
LOG_BYTES, LOG_FILES = 5 * 1024 * 1024, 5
_PR_SET_PDEATHSIG = 1


@dataclass
class Run:
    """What `wrap` did: the agent's exit code and the proxy's stats at the end (None if the
    proxy could not be asked)."""

    exit_code: int
    stats: dict | None


class WrapFailed(Exception):
    """The proxy did not start (the message holds the end of its log), or the agent could not."""


def run_wrapped(
    argv: Sequence[str],
    agent: Agent,
    started: tuple[subprocess.Popen, str],
    log_path: Path,
    say: Callable[[str], None],
    extra: dict[str, str] | None = None,
) -> Run:
    """Run `argv` (the agent and its arguments) pointed at the proxy `started` (`start_proxy`;
    `extra`: the other variables the agent needs, `agents.environment_for`), stop the proxy.

    The agent starts as the proxy does, not after: wrap binds the proxy's socket and hands it
    over, so the agent's first connections wait in its backlog while the proxy starts (Codex
    0.171's first request reached the provider 1.9 s after `ctxfit wrap codex` started when the
    agent waited for the proxy). Should the proxy stop while the agent runs, wrap says so and
    stops the agent (its requests would go nowhere)."""
    proxy, url = started
    watch = _Watch(proxy, log_path, say)
    try:
        base = url + agent.suffix
        options = agent.arguments(base)
        given = " ".join([f"{agent.variable}={base}", *options])
        say(f"proxy on {url} (log: {log_path}); running {agent.command} with {given}")
        if agent.key and not os.environ.get(agent.key):
            say(
                f"{agent.key} is not set: {agent.command} may send no API key (unless it keeps one stored), "
                "and the provider would refuse its requests"
            )
        env = {**os.environ, **(extra or {}), agent.variable: base}
        code = run_foreground([argv[0], *options, *argv[1:]], env, watch.started)
        if watch.failure:
            raise WrapFailed(watch.failure)
        return Run(code, read_stats(url))
    finally:
        watch.done = True
        stop(proxy)


def start_proxy(options: Sequence[str], log_path: Path) -> tuple[subprocess.Popen, str]:
    """`ctxfit proxy` on a free loopback port that wrap binds and hands over (it listens at
    once; the proxy serves it once started), its lines to `log_path`: (process, URL)."""
    listening = socket.create_server(("127.0.0.1", 0), backlog=512)
    port = listening.getsockname()[1]
    try:
        with open(log_path, "ab", opener=private) as log:
            proxy = subprocess.Popen(
                [sys.executable, "-m", "ctxfit_cli", "proxy", "--host", "127.0.0.1", "--port", str(port), *options]
                + ["--listen-fd", str(listening.fileno())],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
                pass_fds=(listening.fileno(),),
                preexec_fn=_dies_with(os.getpid()),
            )
    finally:
        listening.close()  # the proxy's now: connections are refused, not left waiting, once it ends
    return proxy, f"http://127.0.0.1:{port}"


class _Watch:
    """Watches the proxy while the agent runs: if it ends first, says why (the end of its log)
    and stops the agent."""

    def __init__(self, proxy: subprocess.Popen, log_path: Path, say: Callable[[str], None]) -> None:
        self.proxy, self.log_path, self.say = proxy, log_path, say
        self.agent: subprocess.Popen | None = None
        self.done = False
        self.failure = ""
        threading.Thread(target=self._wait, daemon=True).start()

    def started(self, agent: subprocess.Popen) -> None:
        self.agent = agent
        if self.failure:
            _pass_on(agent, signal.SIGTERM)

    def _wait(self) -> None:
        code = self.proxy.wait()
        if self.done:
            return
        tail = self.log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        self.failure = f"the proxy stopped (exit {code}) while the agent ran: " + (" / ".join(tail) or "no output")
        self.say(self.failure + "; stopping the agent")
        if self.agent is not None:
            _pass_on(self.agent, signal.SIGTERM)


def run_foreground(argv: Sequence[str], env: dict, started: Callable[[subprocess.Popen], None] | None = None) -> int:
    """Run the agent with this terminal; signals sent to wrap are passed on. Its exit code."""
    try:
        agent = subprocess.Popen(list(argv), env=env, preexec_fn=_dies_with(os.getpid()))
    except FileNotFoundError:
        raise WrapFailed(f"{argv[0]}: command not found (is it installed and on PATH?)") from None
    except OSError as error:  # not executable, not a program (Exec format error), a directory, ...
        why = f"{argv[0]}: cannot be run ({error.strerror}): give a program this system can execute"
        raise WrapFailed(why) from None
    if started is not None:
        started(agent)
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
        with urllib.request.urlopen(f"{url}/ctxfit/stats", timeout=STATS_SECONDS) as response:
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


def summary_lines(stats: dict | None) -> list[str]:
    """The summary, then a line for each kind of request the proxy could not fit or pass on:
    '11 requests not fitted: …', '21 requests failed upstream: the provider could not be
    reached: DNS lookup of …', '2 requests refused by the provider: 400 prompt is too long …'."""
    lines = [summary(stats)]
    totals = (stats or {}).get("totals", {})
    for key, what in (
        ("not_fitted", "not fitted: "),
        ("unreachable", "failed upstream: the provider could not be reached: "),
        ("refused", "refused by the provider: "),
    ):
        kinds = totals.get(key) or {}
        for kind, count in sorted(kinds.items(), key=lambda item: -item[1]):
            lines.append(f"{count:,} {'request' if count == 1 else 'requests'} {what}{kind}")
    return lines


def nothing_sent(stats: dict | None) -> bool:
    """Whether the agent sent the proxy nothing at all (False when the stats could not be read)."""
    if stats is None:
        return False
    totals = stats.get("totals", {})
    return not totals.get("requests") and not totals.get("websockets_refused")


def why_nothing(agent: Agent, code: int) -> str:
    """The error line of a run whose agent sent nothing through the proxy."""
    ended = f"exited {code} and " if code else ""
    return (
        f"{agent.command} {ended}sent nothing through the proxy: it did not use {agent.pointed_by()}"
        f"{', or stopped before its first request' if code else ''}, so nothing was fitted "
        f"(a newer {agent.command} may read its base URL elsewhere: see README, `ctxfit wrap`; "
        "to point a program yourself: ctxfit wrap --env VAR -- COMMAND)"
    )


def state_folder(environ: dict) -> Path:
    """The user's state folder for ctxfit ($XDG_STATE_HOME/ctxfit, default ~/.local/state/ctxfit)."""
    state = environ.get("XDG_STATE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".local" / "state")
    folder = Path(state) / "ctxfit"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def state_log(environ: dict, command: str) -> Path:
    """wrap's log in the user's state folder, rotated when it grew past `LOG_BYTES`, with a
    first line for this run."""
    log = state_folder(environ) / "wrap.log"
    if log.exists() and log.stat().st_size > LOG_BYTES:
        log.with_name(f"wrap.log.{LOG_FILES - 1}").unlink(missing_ok=True)
        for n in range(LOG_FILES - 2, 0, -1):
            older = log.with_name(f"wrap.log.{n}")
            if older.exists():
                older.replace(log.with_name(f"wrap.log.{n + 1}"))
        log.replace(log.with_name("wrap.log.1"))
    with open(log, "a", encoding="utf-8", opener=private) as out:
        out.write(f"--- ctxfit wrap {command}, {time.strftime('%Y-%m-%d %H:%M:%S %z')}, pid {os.getpid()}\n")
    return log


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


def private(path: str, flags: int) -> int:
    """Opens a log created readable by its owner only (0600): it names the agent's requests."""
    return os.open(path, flags, 0o600)


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
