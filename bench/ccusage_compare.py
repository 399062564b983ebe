"""ctxfit's recorded cost per session against ccusage's, in a new user's home holding every agent's
real log (../shared/realworld/ laid out by `fake_home.py` where each agent keeps its logs).

In a temporary HOME, runs each of ccusage's per-agent session reports (`ccusage <agent> session
--json --offline`) and `ctxfit sessions --json` with no path (its default folders), then with the
folder holding the logs no agent keeps in a folder of its own (aider's, exports, trajectories).
Both see only that HOME: every other variable is left out of their environment, so no agent
variable (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `XDG_DATA_HOME`, …) leads them to the machine's own
logs. Sessions are paired by file (ccusage names Claude Code and Codex sessions by file name) or by
the id the log names. One row per log placed (docs/cost.md). `CCUSAGE_DIR`: a folder where ccusage
is installed (`npm install ccusage@20.0.24`); else it is installed into a temporary one.

    python bench/ccusage_compare.py [REALWORLD_DIR]

Where ccusage 20.0.24 looks (its docs' "Environment Variables" page and experiment), and what
`fake_home.py` places there:

| ccusage  | variable (default)                                    | reads                                    |
|----------|-------------------------------------------------------|------------------------------------------|
| claude   | CLAUDE_CONFIG_DIR (~/.config/claude, ~/.claude)       | projects/**/*.jsonl, session = file name |
| codex    | CODEX_HOME (~/.codex)                                 | sessions/**/*.jsonl, session = path      |
| gemini   | GEMINI_DATA_DIR (~/.gemini/tmp)                       | */chats/*.json(l), session = sessionId   |
| pi       | PI_AGENT_DIR (~/.pi/agent/sessions)                   | */*.jsonl, usage of each message         |
| copilot  | COPILOT_HOME (~/.copilot)                             | session-state/<id>/events.jsonl: only    |
|          |                                                       | `session.shutdown`'s modelMetrics        |
| opencode | OPENCODE_DATA_DIR (~/.local/share/opencode)           | storage/message/*/*.json tokens, or      |
|          |                                                       | opencode.db                              |
| kilo     | KILO_DATA_DIR (~/.local/share/kilo)                   | kilo.db (SQLite)                         |
| goose    | GOOSE_PATH_ROOT (~/.local/share/goose/sessions)       | sessions.db (SQLite)                     |
| qwen     | QWEN_DATA_DIR (~/.qwen)                               | tmp/*/chats/*.jsonl usageMetadata        |
| amp      | AMP_DATA_DIR (~/.local/share/amp)                     | threads/*.json usage ledger              |
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_home import WORK, Placed, build  # noqa: E402  (a sibling script, run from anywhere)

ROOT = Path(__file__).resolve().parent.parent
REALWORLD = ROOT.parent / "shared" / "realworld"
#: The ccusage release compared with (its native build for linux-x64 exists from 20.0.11 to 20.0.24).
CCUSAGE = "ccusage@20.0.24"
#: ccusage's per-agent reports, each with the realworld folders whose logs it reads. Those with no
#: log to read are run too: a session they list would be one from outside the fake home.
CCUSAGE_AGENTS: dict[str, tuple[str, ...]] = {
    "claude": ("claude-code",),
    "codex": ("codex",),
    "gemini": ("gemini-cli",),
    "pi": ("pi",),
    "copilot": ("copilot-cli",),
    "opencode": ("opencode",),
    "kilo": (),
    "goose": (),
    "qwen": (),
    "amp": (),
}
#: What either tool is given of the caller's environment: nothing that names a folder of logs.
KEPT = ("PATH", "PYTHONPATH", "VIRTUAL_ENV", "LANG", "LC_ALL", "SYSTEMROOT", "TMPDIR")


def install_ccusage(folder: Path) -> Path:
    """ccusage installed in `folder` with npm (the registry must be reachable)."""
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--silent", CCUSAGE],
        cwd=folder,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return folder


def clean_environment(home: Path) -> dict[str, str]:
    """The environment of a user whose home is `home` and who sets no agent's variable."""
    kept = {name: os.environ[name] for name in KEPT if name in os.environ}
    return {**kept, "HOME": str(home), "NO_COLOR": "1", "LOG_LEVEL": "0", "TZ": "UTC"}


def ccusage_sessions(ccusage: Path, home: Path, agent: str) -> list[dict]:
    """ccusage's sessions of one agent, as `ccusage AGENT session --json --offline` gives them."""
    done = subprocess.run(
        [str(ccusage / "node_modules" / ".bin" / "ccusage"), agent, "session", "--json", "--offline"],
        cwd=home,
        env=clean_environment(home),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout).get("sessions") or []


@dataclass
class Run:
    """One `ctxfit sessions --json` run."""

    exit_code: int
    sessions: list[dict]
    #: The files it could not read (`errors` of its JSON) and what it said on stderr.
    errors: list
    stderr: str


def ctxfit_sessions(home: Path, *paths: Path) -> Run:
    """`ctxfit sessions --json` as the user whose home is `home` runs it (no path: the default folders)."""
    done = subprocess.run(
        [sys.executable, "-m", "ctxfit_cli", "sessions", "--json", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=clean_environment(home),
    )
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError:
        document = {}
    return Run(done.returncode, document.get("sessions") or [], document.get("errors") or [], done.stderr)


@dataclass
class Survey:
    """Both tools on one fake home."""

    placed: list[Placed]
    #: One per log placed: agent, session (its realworld name), path (under HOME), default (in a
    #: folder the agent keeps its logs in), ctxfit_sessions (how many ctxfit lists from it),
    #: ctxfit (their cost, None where none is recorded), ccusage (the id of ccusage's session
    #: that counts it, None where none does).
    logs: list[dict]
    #: One per session ccusage lists: agent, ccusage_agent, session (the realworld name of its
    #: log), logs (the realworld names of the logs it counts: a Claude Code session's sub-agents'
    #: too), ccusage and ctxfit (the cost of ctxfit's sessions of those logs), difference.
    costs: list[dict]
    #: ccusage's sessions paired with no log placed (none, unless the home leaks).
    strays: list[dict]
    #: `ctxfit sessions` with no path, and on HOME/work.
    default: Run
    work: Run


def _cost(row: dict) -> float:
    return float(row.get("totalCost", row.get("costUSD")) or 0.0)


def _ccusage_keys(row: dict) -> set[str]:
    """How ccusage names a session: a Claude Code log's file name, a Codex log's path under
    sessions/ (and its file name), the id a Gemini CLI, Pi or Copilot CLI log names."""
    keys = {str(row.get("sessionId", "")), str(row.get("sessionFile", ""))}
    keys.add(str(row.get("sessionId", "")).rsplit("/", 1)[-1])
    return keys - {""}


def _names(log: Placed, listed: list[dict]) -> set[str]:
    """What the session of a log placed may be called: its file's name or folder's, the ids it
    names, ctxfit's ids of it; a Claude Code sub-agent's log, its session's folder."""
    if log.path.parent.name == "subagents":
        return {log.path.parent.parent.name}
    return {log.path.stem, log.path.parent.name, *log.ids, *(str(row.get("id", "")) for row in listed)}


def _usd(listed: list[dict]) -> float | None:
    costs = [row["cost"]["usd"] for row in listed if (row.get("cost") or {}).get("usd") is not None]
    return sum(costs) if costs else None


def _session_name(log: Placed) -> str:
    """The log's name in realworld: its file name without its suffix (aider's: its project's)."""
    return log.source.parent.name if log.source.name.startswith(".") else log.source.stem


def pair(placed: list[Placed], theirs: dict[str, list[dict]], ours: list[dict], home: Path) -> Survey:
    """Each log placed with ctxfit's sessions of it (by path) and ccusage's session counting it."""
    by_path: dict[Path, list[dict]] = {}
    for row in ours:
        by_path.setdefault(Path(row["path"]).resolve(), []).append(row)
    logs, counted = [], {}
    for log in placed:
        listed = by_path.get(log.path.resolve(), [])
        names = _names(log, listed)
        owner = next(
            (
                (agent, k)
                for agent, sources in CCUSAGE_AGENTS.items()
                if log.agent in sources
                for k, row in enumerate(theirs.get(agent, []))
                if _ccusage_keys(row) & names
            ),
            None,
        )
        row = {
            "agent": log.agent,
            "session": _session_name(log),
            "path": str(log.path.relative_to(home)),
            "default": log.default,
            "ctxfit_sessions": len(listed),
            "ctxfit": _usd(listed),
            "ccusage": None if owner is None else str(theirs[owner[0]][owner[1]].get("sessionId")),
        }
        logs.append(row)
        if owner is not None:
            counted.setdefault(owner, []).append(row)
    costs = [_cost_row(agent, theirs[agent][k], counted[agent, k]) for agent, k in counted]
    strays = [
        {"ccusage": agent, **row}
        for agent, sessions in theirs.items()
        for k, row in enumerate(sessions)
        if (agent, k) not in counted
    ]
    return Survey(placed, logs, costs, strays, Run(0, [], [], ""), Run(0, [], [], ""))


def _cost_row(agent: str, theirs: dict, logs: list[dict]) -> dict:
    """ccusage's session beside ctxfit's sessions of the logs it counts."""
    costs = [log["ctxfit"] for log in logs if log["ctxfit"] is not None]
    ctxfit = sum(costs) if costs else None
    ccusage = _cost(theirs)
    return {
        "agent": logs[0]["agent"],
        "ccusage_agent": agent,
        "session": logs[0]["session"],
        "logs": [log["session"] for log in logs],
        "ccusage": ccusage,
        "ctxfit": ctxfit,
        "ctxfit_listed": all(log["ctxfit_sessions"] for log in logs),
        "difference": (ctxfit - ccusage) / ccusage if ccusage and ctxfit is not None else None,
    }


def survey(realworld: Path = REALWORLD, ccusage_dir: str | None = None) -> Survey:
    """Every realworld log in one fake home; both tools' sessions of it, paired. ccusage is
    `ccusage_dir`'s, else `CCUSAGE_DIR`'s, else installed for the run."""
    ccusage_dir = ccusage_dir or os.environ.get("CCUSAGE_DIR")
    with tempfile.TemporaryDirectory() as scratch:
        scratch_path = Path(scratch)
        home = scratch_path / "home"
        home.mkdir()
        placed = build(realworld, home)
        default = ctxfit_sessions(home)
        work = ctxfit_sessions(home, home / WORK)
        if ccusage_dir:
            ccusage = Path(ccusage_dir)
        else:
            (scratch_path / "npm").mkdir()
            ccusage = install_ccusage(scratch_path / "npm")
        theirs = {agent: ccusage_sessions(ccusage, home, agent) for agent in CCUSAGE_AGENTS}
        result = pair(placed, theirs, default.sessions + work.sessions, home)
    result.default, result.work = default, work
    return result


def compare(realworld: Path = REALWORLD, ccusage_dir: str | None = None) -> list[dict]:
    """One row per Claude Code or Codex session ccusage reports: both costs and their difference."""
    rows = [
        {
            "session": row["session"],
            "agent": row["ccusage_agent"],
            "ccusage": row["ccusage"],
            "ctxfit": row["ctxfit"],
            "difference": row["difference"],
            "skipped_by_ctxfit": not row["ctxfit_listed"],
        }
        for row in survey(realworld, ccusage_dir).costs
        if row["ccusage_agent"] in ("claude", "codex")
    ]
    return sorted(rows, key=lambda row: -row["ccusage"])


def _dollars(value: float | None) -> str:
    return "—" if value is None else f"${value:.4f}"


def main() -> None:
    realworld = Path(sys.argv[1]) if len(sys.argv) > 1 else REALWORLD
    result = survey(realworld)
    version = CCUSAGE.split("@")[1]
    print(f"ctxfit sessions: exit {result.default.exit_code} (default folders), {result.work.exit_code} (~/{WORK})")
    print(f"\n| agent | session (logs) | ccusage ({version}) | ctxfit | difference |")
    print("|---|---|--:|--:|--:|")
    for row in result.costs:
        difference = "—" if row["difference"] is None else f"{row['difference']:+.2%}"
        name = row["session"] + (f" (+{len(row['logs']) - 1} sub-agent)" if len(row["logs"]) > 1 else "")
        print(f"| {row['agent']} | {name} | {_dollars(row['ccusage'])} | {_dollars(row['ctxfit'])} | {difference} |")
    print("\n| agent | logs placed | in a default folder | listed by ccusage | listed by ctxfit | ccusage | ctxfit |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for agent in dict.fromkeys(row["agent"] for row in result.logs):
        logs = [row for row in result.logs if row["agent"] == agent]
        costs = [row for row in result.costs if row["agent"] == agent]
        print(
            f"| {agent} | {len(logs)} | {sum(row['default'] for row in logs)} | {len(costs)} "
            f"| {sum(row['ctxfit_sessions'] > 0 for row in logs)} "
            f"| {_dollars(sum(row['ccusage'] for row in costs) if costs else None)} "
            f"| {_dollars(sum(row['ctxfit'] or 0 for row in costs) if costs else None)} |"
        )
    for run in (result.default, result.work):
        for error in run.errors:
            print(f"ctxfit could not read: {error}")
    for stray in result.strays:
        print(f"ccusage {stray['ccusage']}: a session from no log placed: {stray.get('sessionId')}")


if __name__ == "__main__":
    main()
