"""Which files to read: the paths given (directories walked), or the agents' default log folders.

| agent       | folders (first that applies)                                                   |
|-------------|--------------------------------------------------------------------------------|
| Claude Code | `$CLAUDE_CONFIG_DIR/projects` for each entry of the comma list; otherwise        |
|             | `~/.claude/projects` and `~/.config/claude/projects`                           |
| Codex       | `$CODEX_HOME/sessions`; otherwise `~/.codex/sessions`                            |
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

#: What a directory is searched for, recursively.
LOG_SUFFIXES = (".jsonl", ".json", ".traj")


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
    folders = [c / "projects" for c in claude] + [codex / "sessions"]
    seen: list[str] = []
    for folder in folders:
        if folder.is_dir() and str(folder) not in seen:
            seen.append(str(folder))
    return seen


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
    found = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(path for path in (os.path.join(root, n) for n in sorted(names)
                                       if n.endswith(LOG_SUFFIXES) and not n.startswith("."))
                     if os.path.isfile(path))
    return found
