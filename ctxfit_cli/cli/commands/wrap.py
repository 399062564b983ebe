"""The `ctxfit wrap` command: an agent behind its own proxy, in one command.

Parses and prints only; which agent is run how is `serve/agents.py`, starting, watching and
stopping the processes `serve/supervise.py`.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ...agents import REGISTRY
from ...errors import EXIT_USAGE, UsageProblem
from ..error_reporting import reports_errors

if TYPE_CHECKING:  # the module itself is imported when the command runs (start-up stays light)
    from ...serve.agents import Agent
from .proxy import (
    Budget,
    ClientTimeout,
    Conversations,
    FitTimeout,
    MaxBodyMb,
    MaxConnections,
    MemoryMb,
    ShutdownGrace,
    UpstreamTimeout,
    Window,
    proxy_settings,
)

#: The agents wrap runs by name (`Agent.wrap`).
AGENT_NAMES = tuple(sorted(agent.wrap.command for agent in REGISTRY if agent.wrap is not None))


@reports_errors
def wrap(
    command: Annotated[
        Optional[list[str]],
        typer.Argument(
            metavar="AGENT [-- AGENT-ARGS] | -- COMMAND ARGS...",
            show_default=False,
            help=f"The agent ({', '.join(AGENT_NAMES)}) and, after --, its own arguments; with --env, the "
            "command to run.",
        ),
    ] = None,
    env: Annotated[
        Optional[str],
        typer.Option(
            "--env",
            metavar="VAR",
            help="Run any command, pointing the "
            "base-URL variable VAR at the proxy (e.g. ANTHROPIC_BASE_URL, OPENAI_BASE_URL).",
            show_default=False,
        ),
    ] = None,
    upstream: Annotated[
        Optional[str],
        typer.Option(
            "--upstream",
            "-u",
            help="The provider's API (default: where the agent's variable points now, else the agent's provider).",
            show_default=False,
        ),
    ] = None,
    budget: Budget = None,
    window: Window = None,
    max_body_mb: MaxBodyMb = 32,
    memory_mb: MemoryMb = 512,
    conversations: Conversations = 256,
    upstream_timeout: UpstreamTimeout = 600.0,
    fit_timeout: FitTimeout = 30.0,
    shutdown_grace: ShutdownGrace = 5.0,
    client_timeout: ClientTimeout = 30.0,
    max_connections: MaxConnections = 512,
    workers: Annotated[
        Optional[int],
        typer.Option(
            "--workers",
            min=1,
            help="Processes that fit the requests (default: 1, plenty for one agent and its sub-agents, "
            "and the agent's first request waits for it to start; `ctxfit proxy` starts one per core).",
            show_default=False,
        ),
    ] = None,
    log: Annotated[
        Optional[Path],
        typer.Option(
            "--log",
            help="Where the proxy's lines go (default: wrap.log in $XDG_STATE_HOME/ctxfit, "
            "~/.local/state/ctxfit, rotated past 5 MB, 5 files kept; its path is printed).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run an agent behind a ctxfit proxy: one command, nothing left running after it.

    Starts the proxy on a free loopback port, points the agent at it, runs the agent in this
    terminal, and when it ends stops the proxy, prints a summary (with the requests it could
    not fit and why, and those the provider could not be reached for or refused) and exits with
    the agent's exit code. When the agent sent nothing through the proxy (a version that reads
    its base URL elsewhere), wrap says so on a last error line and exits 2 instead; so it does
    for an agent it cannot run (not found, not executable, not a program). The proxy's
    options work as for `ctxfit proxy`. Needs `pip install 'ctxfit[proxy]'`.

    To run Claude Code:  `ctxfit wrap claude`  (its own arguments after --: `ctxfit wrap claude -- --resume`)

    To run Codex CLI:  `ctxfit wrap codex`

    To run Gemini CLI:  `ctxfit wrap gemini`

    To run OpenCode (an Anthropic model):  `ctxfit wrap opencode`

    To run GitHub Copilot CLI (with your own provider, BYOK):  `ctxfit wrap copilot`

    To run Qwen Code (its openai auth type):  `ctxfit wrap qwen`

    Any other program:  `ctxfit wrap --env ANTHROPIC_BASE_URL --budget 150000 -- python my_agent.py`
    """
    from ...serve import agents, supervise

    argv, agent = _command(command or [], env, agents)
    if shutil.which(argv[0]) is None:  # before a proxy is started and a log written for nothing
        raise UsageProblem(f"{argv[0]}: command not found (is it installed and on PATH?)")
    target = agents.upstream_for(agent, upstream, dict(os.environ))
    if not target:
        raise UsageProblem(f"--upstream is needed: ctxfit does not know which provider {env} points at")
    if agent.says:  # how it signs in changed where it is pointed
        _say(agent.says.format(target=target))
    options = [
        "--upstream",
        target,
        "--max-body-mb",
        str(max_body_mb),
        "--memory-mb",
        str(memory_mb),
        "--conversations",
        str(conversations),
        "--upstream-timeout",
        str(upstream_timeout),
        "--fit-timeout",
        str(fit_timeout),
        "--shutdown-grace",
        str(shutdown_grace),
        "--client-timeout",
        str(client_timeout),
        "--max-connections",
        str(max_connections),
    ]
    options += ["--budget", budget] if budget is not None else []
    options += ["--window", str(window)] if window is not None else []
    options += ["--workers", str(workers or 1)]
    log_path = log or supervise.state_log(dict(os.environ), " ".join(command or []))
    # The proxy starts first, and the options are checked while it does (the check imports what
    # fitting needs: 0.2 s the agent would otherwise wait for); a bad one stops it at once.
    proxy = supervise.start_proxy(options, log_path)
    try:
        proxy_settings(
            target,
            budget,
            window,
            max_body_mb,
            conversations,
            upstream_timeout,
            print,  # usage errors now
            memory_mb=memory_mb,
            fit_timeout=fit_timeout,
            shutdown_grace=shutdown_grace,
            client_timeout=client_timeout,
            max_connections=max_connections,
            workers=workers,
        )
        extra = agents.environment_for(agent, dict(os.environ), supervise.state_folder(dict(os.environ)))
    except BaseException:
        supervise.stop(proxy[0])
        raise
    try:
        run = supervise.run_wrapped(argv, agent, proxy, log_path, _say, extra)
    except supervise.WrapFailed as error:
        raise UsageProblem(str(error)) from None
    first, *details = supervise.summary_lines(run.stats)
    _say(first + f" (log: {log_path})")
    for line in details:
        _say(line)
    if supervise.nothing_sent(run.stats):
        sys.stderr.write(f"ctxfit: error: {supervise.why_nothing(agent, run.exit_code)}\n")
        raise typer.Exit(EXIT_USAGE)
    raise typer.Exit(run.exit_code)


def _command(command: list[str], env: str | None, agents: ModuleType) -> tuple[list[str], Agent]:
    if env is not None:
        if not command:
            raise UsageProblem(
                "--env needs the command to run after --, e.g. ctxfit wrap --env "
                "ANTHROPIC_BASE_URL -- python my_agent.py"
            )
        return command, agents.agent_for_variable(env, command[0])
    if not command or command[0] not in agents.AGENTS:
        given = f" {command[0]!r}" if command else ""
        raise UsageProblem(
            f"unknown agent{given}: wrap knows {', '.join(AGENT_NAMES)}; for another program use --env VAR -- COMMAND"
        )
    agent = agents.agent_named(command[0], dict(os.environ))
    return [agent.command, *command[1:]], agent


def _say(line: str) -> None:
    sys.stderr.write(f"ctxfit wrap: {line}\n")
    sys.stderr.flush()
