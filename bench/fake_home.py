"""A new user's home folder holding one log of every agent in ../shared/realworld/, each laid out
where its agent keeps it (the default folders ctxfit and ccusage both read).

| realworld folder | placed at (under HOME)                                                    |
|------------------|---------------------------------------------------------------------------|
| claude-code      | `.claude/projects/realworld/<file>.jsonl`; a sub-agent's log              |
|                  | (`<session>_agent-<id>.jsonl`) at `<session>/subagents/agent-<id>.jsonl`  |
| codex            | `.codex/sessions/2026/01/01/<file>.jsonl`                                 |
| gemini-cli       | `.gemini/tmp/<projectHash>/chats/<file>`                                  |
| cline            | `.cline/data/tasks/<first ts>/api_conversation_history.json`              |
| cline-ui         | `.cline/data/tasks/<first ts>/ui_messages.json` (a task of its own)       |
| opencode         | `.local/share/opencode/storage/` (the storage folder as it is)            |
| copilot-cli      | `.copilot/session-state/<sessionId>/events.jsonl`                         |
| pi               | `.pi/agent/sessions/--<cwd with / as ->--/<timestamp>_<id>.jsonl`         |
| continue         | `.continue/sessions/<sessionId>.json`                                     |
| cursor           | `.cursor/projects/<workspace>/agent-transcripts/<id>/<id>.jsonl`          |
| aider            | `work/<project>/.aider.chat.history.md` (aider writes into the project)   |
| opencode-export  | `work/exports/<id>.json` (`opencode export` prints it; the user saves it) |
| openhands        | `work/openhands/<file>`                                                   |
| swe-agent        | `work/trajectories/<file>`                                                |

The last four have no default folder: `ctxfit sessions` reads them when given `HOME/work`.
Claude Code's logs keep their realworld names, which stand for their session ids (ccusage names a
Claude Code session by its file, and a sub-agent's log by its session's folder).
"""

from __future__ import annotations

import json
import shutil
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: Where logs with no default folder are put (given to `ctxfit sessions` as a path).
WORK = "work"


@dataclass
class Placed:
    """One real log (or OpenCode's storage folder) copied into the fake home."""

    agent: str  # the realworld folder it came from ("claude-code")
    source: Path
    path: Path  # the copy (for OpenCode's storage, its session file)
    #: In a folder the agent keeps its logs in (read by `ctxfit sessions` with no path).
    default: bool = True
    #: The session ids the log names in its first record (ccusage names some sessions by them).
    ids: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return self.source.name


def _first_record(path: Path) -> object:
    """The log's first JSON record (its whole document for a .json file), or None."""
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        first = text.split("\n", 1)[0]
        try:
            return json.loads(first)
        except json.JSONDecodeError:
            return None


def _ids(record: object) -> set[str]:
    """Session ids named in a first record: `sessionId` (Gemini CLI, Continue), a Pi header's `id`,
    Copilot CLI's `data.sessionId`, an OpenCode export's `info.id`."""
    if isinstance(record, list):
        return set()
    if not isinstance(record, dict):
        return set()
    found = {record.get("sessionId")}
    if record.get("type") == "session":
        found.add(record.get("id"))
    for inner in ("data", "info"):
        if isinstance(record.get(inner), dict):
            found |= {record[inner].get("sessionId"), record[inner].get("id") if inner == "info" else None}
    return {value for value in found if isinstance(value, str) and value}


def _first_ts(path: Path) -> str:
    """A Cline task's id: the time of its first message (as Cline names its task folders)."""
    record = _first_record(path)
    if isinstance(record, list) and record and isinstance(record[0], dict) and "ts" in record[0]:
        return str(record[0]["ts"])
    return str(zlib.crc32(path.name.encode()))


def _copy(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def _claude(source: Path, home: Path) -> Path:
    project = home / ".claude" / "projects" / "realworld"
    parent, _, agent = source.stem.partition("_agent-")
    if agent and (source.parent / f"{parent}.jsonl").is_file():  # a sub-agent's log, beside its session's
        return _copy(source, project / parent / "subagents" / f"agent-{agent}.jsonl")
    return _copy(source, project / source.name)


def _codex(source: Path, home: Path) -> Path:
    return _copy(source, home / ".codex" / "sessions" / "2026" / "01" / "01" / source.name)


def _gemini(source: Path, home: Path) -> Path:
    record = _first_record(source)
    project = record.get("projectHash", "project") if isinstance(record, dict) else "project"
    return _copy(source, home / ".gemini" / "tmp" / project / "chats" / source.name)


def _cline(source: Path, home: Path) -> Path:
    task = home / ".cline" / "data" / "tasks" / _first_ts(source)
    name = "ui_messages.json" if source.parent.name == "cline-ui" else "api_conversation_history.json"
    return _copy(source, task / name)


def _copilot(source: Path, home: Path) -> Path:
    session = next(iter(sorted(_ids(_first_record(source)))), source.stem)
    return _copy(source, home / ".copilot" / "session-state" / session / "events.jsonl")


def _pi(source: Path, home: Path) -> Path:
    header = _first_record(source)
    header = header if isinstance(header, dict) else {}
    cwd = str(header.get("cwd", "/project"))
    stamp = str(header.get("timestamp", "2026-01-01T00:00:00.000Z")).replace(":", "-").replace(".", "-")
    project = "--" + cwd.strip("/").replace("/", "-") + "--"
    name = f"{stamp}_{header.get('id', source.stem)}.jsonl"
    return _copy(source, home / ".pi" / "agent" / "sessions" / project / name)


def _continue(source: Path, home: Path) -> Path:
    session = next(iter(sorted(_ids(_first_record(source)))), source.stem)
    return _copy(source, home / ".continue" / "sessions" / f"{session}.json")


def _cursor(source: Path, home: Path) -> Path:
    # `<repo>_<checkpoint>-<n>_raw_transcript`: the checkpoint stands for the transcript's id.
    workspace, _, rest = source.name.partition("_")
    transcript = rest.split("-", 1)[0] or source.stem
    folder = home / ".cursor" / "projects" / workspace / "agent-transcripts" / transcript
    return _copy(source, folder / f"{transcript}.jsonl")


def _elsewhere(where: str) -> Callable[[Path, Path], Path]:
    def place(source: Path, home: Path) -> Path:
        return _copy(source, home / WORK / where / source.name)

    return place


def _export(source: Path, home: Path) -> Path:
    session = next(iter(sorted(_ids(_first_record(source)))), source.stem)
    return _copy(source, home / WORK / "exports" / f"{session}.json")


def _aider(source: Path, home: Path) -> Path:
    return _copy(source, home / WORK / source.parent.name / source.name)


#: Each realworld folder: the files in it that are logs, and where one is put.
LAYOUT: dict[str, tuple[Callable[[Path], list[Path]], Callable[[Path, Path], Path], bool]] = {
    "claude-code": (lambda f: sorted(f.glob("*.jsonl")), _claude, True),
    "codex": (lambda f: sorted(f.glob("*.jsonl")), _codex, True),
    "gemini-cli": (_files, _gemini, True),
    "cline": (_files, _cline, True),
    "cline-ui": (_files, _cline, True),
    "copilot-cli": (_files, _copilot, True),
    "pi": (_files, _pi, True),
    "continue": (_files, _continue, True),
    "cursor": (_files, _cursor, True),
    "aider": (lambda f: sorted(f.glob("*/.aider.chat.history.md")), _aider, False),
    "opencode-export": (_files, _export, False),
    "openhands": (_files, _elsewhere("openhands"), False),
    "swe-agent": (_files, _elsewhere("trajectories"), False),
}


def _opencode(realworld: Path, home: Path) -> list[Placed]:
    """OpenCode's storage folder copied whole; one Placed per session file in it (a session's
    messages and parts are read from beside it)."""
    source = realworld / "opencode" / "storage_v2"
    if not source.is_dir():
        return []
    storage = home / ".local" / "share" / "opencode" / "storage"
    shutil.copytree(source, storage)
    for path in storage.rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)  # the shared copies are read-only
    return [
        Placed("opencode", source / session.relative_to(storage), session, ids={session.stem.removeprefix("ses_")})
        for session in sorted((storage / "session").rglob("*.json"))
    ]


def build(realworld: Path, home: Path) -> list[Placed]:
    """Every log of `realworld` copied into `home` where its agent keeps it; what was placed."""
    placed: list[Placed] = []
    for agent, (logs, place, default) in LAYOUT.items():
        for source in logs(realworld / agent):
            placed.append(Placed(agent, source, place(source, home), default, _ids(_first_record(source))))
    return placed + _opencode(realworld, home)
