"""The agents whose logs ctxfit reads, one module each (DESIGN §14).

Adding an agent: write its module here (it builds one `Agent`, see `agent.py`), its tests, and
one line in `REGISTRY`; `docs/design.md` gives the steps. Detection, reading, `sessions`' and
`watch`'s default folders, session descriptions and `--format`'s choices all come from here.

The package is light: a module imports at its top only the standard library, `orjson` and this
package (`agent.py`, `session.py`, `spend.py`), so that a `sessions` run served from its cache
learns every agent's folders without loading a reader. What reading needs (`core.model`, the
dialects in `formats/`) is imported inside the functions that read.
"""

from __future__ import annotations

from . import amp, cline_ui, continue_dev, crush, goose, kilo_code, opencode_db, opencode_export, qwen_code
from .agent import Agent
from .copilot_cli import AGENT as COPILOT_CLI
from .cursor import AGENT as CURSOR
from .pi import AGENT as PI

#: Every agent, in the order their `recognise` is tried (the most specific shapes first).
REGISTRY: tuple[Agent, ...] = (
    COPILOT_CLI,
    PI,
    qwen_code.AGENT,
    goose.AGENT,
    amp.AGENT,
    crush.AGENT,
    opencode_db.AGENT,  # (before the export: its records are exports with the database's row)
    opencode_export.AGENT,
    continue_dev.AGENT,
    cline_ui.AGENT,
    kilo_code.AGENT,
    CURSOR,  # (last: its test is the loosest, a message with "role" but no "content")
)
BY_NAME: dict[str, Agent] = {agent.name: agent for agent in REGISTRY}


def recognised(value: object) -> Agent | None:
    """The agent one of whose records `value` is, or None."""
    for agent in REGISTRY:
        if agent.recognise(value):
            return agent
    return None
