"""The commands of `ctxfit`, one module each, listed here in the order `ctxfit --help` shows them.

A new command is a new module in this folder and one line here: its name, where its function
is, and the first line of its docstring (what `ctxfit --help` lists without importing it; the
two are checked against each other when the command is imported). `cli/lazy.py` says how a
command's module is imported only when it runs.
"""

from __future__ import annotations

from ..lazy import Command

_HERE = __name__

COMMANDS: dict[str, Command] = {
    "estimate": Command(
        f"{_HERE}.estimate", "estimate", "Estimate the tokens of transcripts, by writing system and by kind of content."
    ),
    "note": Command(f"{_HERE}.note", "note", "Print the note that tells an agent about its safety net (DESIGN §5)."),
    "fit": Command(f"{_HERE}.fit", "fit", "Write the request payload that fits the budget (DESIGN §4)."),
    "plan": Command(
        f"{_HERE}.plan",
        "plan_command",
        "Show the clearing plan: which results each batch clears, and what else is dropped.",
    ),
    "replay": Command(
        f"{_HERE}.replay",
        "replay_command",
        "Replay recorded transcripts request by request and compare context policies.",
    ),
    "calibrate": Command(
        f"{_HERE}.calibrate", "calibrate", "Fit a profile: characters per token for each character class, erring high."
    ),
    "proxy": Command(
        f"{_HERE}.proxy", "proxy", "Run a proxy in front of the provider API that fits every request to the budget."
    ),
    "wrap": Command(
        f"{_HERE}.wrap", "wrap", "Run an agent behind a ctxfit proxy: one command, nothing left running after it."
    ),
    "sessions": Command(
        f"{_HERE}.sessions",
        "sessions",
        "One row per session: its size against the window, and what ctxfit would have done.",
    ),
    "watch": Command(
        f"{_HERE}.watch", "watch", "Watch the sessions being written: context size now, growth per call, calls left."
    ),
}
