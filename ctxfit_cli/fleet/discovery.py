"""Which files to read: the paths given (directories walked), or the agents' default log folders.

| agent       | folders (first that applies)                                                   |
|-------------|--------------------------------------------------------------------------------|
| Claude Code | `$CLAUDE_CONFIG_DIR/projects` for each entry of the comma list; otherwise        |
|             | `~/.claude/projects` and `~/.config/claude/projects`                           |
| Codex       | `$CODEX_HOME/sessions`; otherwise `~/.codex/sessions`                            |
| Gemini CLI  | `$GEMINI_CLI_HOME/.gemini/tmp/*/chats` (the variable replaces the home folder, as   |
|             | Gemini CLI's `homedir()` does); otherwise `~/.gemini/tmp/*/chats`               |
| Cline       | `tasks` of `$CLINE_DATA_DIR`, else of `$CLINE_DIR/data`, else of `~/.cline/data` (the CLI); |
|             | and `globalStorage/saoudrizwan.claude-dev/tasks` of VS Code (and its forks)    |
| Roo Code    | `globalStorage/rooveterinaryinc.roo-cline/tasks` of VS Code (and its forks)      |
| OpenCode    | `$XDG_DATA_HOME/opencode/storage`; otherwise `~/.local/share/opencode/storage`   |
|             | (before 1.2); its database, `opencode.db` there or `$OPENCODE_DB` (`agents/opencode_db.py`) |

VS Code's user folder is `~/.config/<app>/User` on Linux and `~/Library/Application Support/<app>/User`
on macOS, for each of Code, Code - Insiders, VSCodium, Cursor and Windsurf. aider writes its
history into the project folder, so it has no default folder: give the project folder (or its
`.aider.chat.history.md`).

In a folder, a Cline task folder is read as its `api_conversation_history.json` and its
`ui_messages.json` (usage: one session with the history's, `fleet/combine.py`), not its other
files; an OpenCode storage folder as its session files (each reads its messages and parts); and
Continue's index of its sessions (`sessions/sessions.json`) is left out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..agents import REGISTRY, cline_ui, continue_dev

#: What a directory is searched for, recursively.
LOG_SUFFIXES = (".jsonl", ".json", ".traj")
#: Files found by their name: aider's history (hidden), and Cline's task history.
AIDER_HISTORY = ".aider.chat.history.md"
CLINE_HISTORY = "api_conversation_history.json"
#: VS Code and the forks whose global storage may hold Cline or Roo Code tasks.
VSCODE_APPS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
CLINE_EXTENSIONS = ("saoudrizwan.claude-dev", "rooveterinaryinc.roo-cline")


def default_folders(environ: Mapping[str, str] | None = None) -> list[str]:
    """The agents' log folders that exist on this machine, in a fixed order.

    >>> default_folders({"HOME": "/nonexistent"})
    []
    """
    environ = os.environ if environ is None else environ
    home = Path(environ.get("HOME") or Path.home())
    claude = [Path(p.strip()).expanduser() for p in environ.get("CLAUDE_CONFIG_DIR", "").split(",") if p.strip()]
    claude = claude or [home / ".claude", home / ".config" / "claude"]
    codex = Path(environ["CODEX_HOME"]).expanduser() if environ.get("CODEX_HOME") else home / ".codex"
    gemini_home = Path(environ["GEMINI_CLI_HOME"]).expanduser() if environ.get("GEMINI_CLI_HOME") else home
    # Only the chats: tmp/<project>/ also holds logs.json, checkpoints and tool output.
    gemini = sorted((gemini_home / ".gemini" / "tmp").glob("*/chats"))
    folders = [c / "projects" for c in claude] + [codex / "sessions"] + gemini
    folders += _cline_folders(environ, home) + [_opencode_storage(environ, home)]
    folders += [folder for agent in REGISTRY for folder in agent.folders(environ, home)]
    seen: list[str] = []
    for folder in folders:  # (or a file: an agent's database)
        if (folder.is_dir() or folder.is_file()) and str(folder) not in seen:
            seen.append(str(folder))
    return seen


def _file_names() -> frozenset[str]:
    """Files found by their name in a folder (beside those ending as logs do)."""
    return frozenset((AIDER_HISTORY, *(name for agent in REGISTRY for name in agent.file_names)))


def _cline_folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    if environ.get("CLINE_DATA_DIR"):
        cli = Path(environ["CLINE_DATA_DIR"]).expanduser()
    else:
        cli = (Path(environ["CLINE_DIR"]).expanduser() if environ.get("CLINE_DIR") else home / ".cline") / "data"
    users = [
        root / app / "User"
        for root in (home / ".config", home / "Library" / "Application Support")
        for app in VSCODE_APPS
    ]
    return [cli / "tasks"] + [user / "globalStorage" / ext / "tasks" for user in users for ext in CLINE_EXTENSIONS]


def _opencode_storage(environ: Mapping[str, str], home: Path) -> Path:
    data = Path(environ["XDG_DATA_HOME"]).expanduser() if environ.get("XDG_DATA_HOME") else home / ".local" / "share"
    return data / "opencode" / "storage"


def expand(paths: list[str]) -> list[str]:
    """Files to read: each path as given, each directory replaced by the logs under it (sorted,
    hidden folders skipped). A path that does not exist is kept, so reading it says so.

    >>> expand(["-"])
    ['-']
    """
    files: list[str] = []
    for path in paths:
        if path != "-" and os.path.isdir(path):
            files.extend(_walk(path))
        else:
            files.append(path)
    return files


def _walk(folder: str) -> list[str]:
    """The logs under `folder`: regular files only (a symlink to one included). A FIFO or a
    device named like a log (`live.jsonl`) is no log to survey: opening it would wait for a
    writer forever. Named directly, it is read as a stream."""
    found: list[str] = []
    by_name = _file_names()
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if _is_opencode_storage(root, dirs):
            dirs[:] = ["session"]  # each session file reads its own messages and parts
            continue
        if CLINE_HISTORY in names or cline_ui.FILE_NAME in names:
            # A Cline task: its conversation, and its usage (`agents/cline_ui.py`: one session,
            # `combine.py`); its other files are the agent's bookkeeping.
            found.extend(
                path
                for path in (os.path.join(root, n) for n in (CLINE_HISTORY, cline_ui.FILE_NAME) if n in names)
                if os.path.isfile(path)
            )
            continue
        # Regular files only: a FIFO (or a device) in a log folder would block the read forever.
        found.extend(
            path
            for path in (
                os.path.join(root, n)
                for n in sorted(names)
                if ((n.endswith(LOG_SUFFIXES) and not n.startswith(".")) or n in by_name)
                and not continue_dev.is_index(root, n)
            )
            if os.path.isfile(path)
        )
    return found


def _is_opencode_storage(root: str, dirs: list[str]) -> bool:
    return "session" in dirs and "message" in dirs and os.path.basename(root) != "session"
