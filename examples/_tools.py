"""The one tool the example agents have: read a file under the current directory."""

from __future__ import annotations

from pathlib import Path

TASK = ("Read the Python files of this repository one at a time with read_file, and when you have "
        "read them all, say in one paragraph what the package does.")
SYSTEM = "You are a careful code reader. Use the read_file tool to read files."
DESCRIPTION = "Read a text file of the current project and return its content."
SCHEMA = {"type": "object", "properties": {"path": {"type": "string", "description": "Path of the file."}},
          "required": ["path"]}


def read_file(path: str) -> str:
    """The file's text, or why it cannot be read (the model sees either)."""
    base = Path.cwd().resolve()
    target = (base / path).resolve()
    if not target.is_relative_to(base):
        return f"error: {path} is outside the project"
    try:
        return target.read_text(encoding="utf-8")
    except OSError as error:
        return f"error: {error.strerror}: {path}"
