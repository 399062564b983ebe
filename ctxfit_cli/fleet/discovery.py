"""Which files to read: the paths given (directories walked), or the agents' default log folders
(each agent's module says its own: `Agent.folders`, from the environment variables it honours).

In a folder, files ending as logs do are read, and those an agent's module names
(`Agent.file_names`: aider's hidden history), but those an agent's module leaves out
(`Agent.leaves_out`: Continue's index of its sessions); a folder that is one of an agent's own is
read as that agent says (`Agent.walk`: a Cline task folder as its history and its usage, an
OpenCode storage folder as its session files). A default location may be a file (an agent's
database).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..agents import REGISTRY

#: What a directory is searched for, recursively.
LOG_SUFFIXES = (".jsonl", ".json", ".traj")


def default_folders(environ: Mapping[str, str] | None = None) -> list[str]:
    """The agents' log folders that exist on this machine, in the registry's order.

    >>> default_folders({"HOME": "/nonexistent"})
    []
    """
    environ = os.environ if environ is None else environ
    home = Path(environ.get("HOME") or Path.home())
    seen: list[str] = []
    for folder in (folder for agent in REGISTRY for folder in agent.folders(environ, home)):
        if (folder.is_dir() or folder.is_file()) and str(folder) not in seen:  # (a file: an agent's database)
            seen.append(str(folder))
    return seen


def _file_names() -> frozenset[str]:
    """Files found by their name in a folder (beside those ending as logs do)."""
    return frozenset(name for agent in REGISTRY for name in agent.file_names)


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
    walkers = [agent.walk for agent in REGISTRY if agent.walk is not None]
    left_out = [agent.leaves_out for agent in REGISTRY if agent.leaves_out is not None]
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        own = next((files for files in (walk(root, dirs, names) for walk in walkers) if files is not None), None)
        if own is not None:  # one of an agent's own folders: what it says is read of it
            found.extend(own)
            continue
        # Regular files only: a FIFO (or a device) in a log folder would block the read forever.
        found.extend(
            path
            for path in (
                os.path.join(root, n)
                for n in sorted(names)
                if ((n.endswith(LOG_SUFFIXES) and not n.startswith(".")) or n in by_name)
                and not any(leaves_out(root, n) for leaves_out in left_out)
            )
            if os.path.isfile(path)
        )
    return found
