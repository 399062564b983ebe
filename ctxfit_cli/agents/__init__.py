"""The agents whose logs ctxfit reads, one module each (DESIGN §14).

Adding an agent: write its module here (it builds one `Agent`, see `agent.py`), its tests, and
one line in `REGISTRY`; `docs/design.md` gives the steps. Detection, reading, `sessions`' and
`watch`'s default folders, session descriptions and `--format`'s choices all come from here.

The package is light: a module imports at its top only the standard library, `orjson` and this
package (`agent.py`, `session.py`, `spend.py`, `wrap.py`), so that a `sessions` run served from
its cache learns every agent's folders without loading a reader. What reading needs
(`core.model`, the dialects in `formats/`) is imported inside the functions that read.
"""

from __future__ import annotations

from . import (
    aider,
    claude_code,
    cline,
    cline_ui,
    codex,
    continue_dev,
    gemini_cli,
    kilo_code,
    opencode,
    opencode_db,
    opencode_export,
    openhands,
    swe_agent,
)
from .agent import Agent
from .copilot_cli import AGENT as COPILOT_CLI
from .cursor import AGENT as CURSOR
from .pi import AGENT as PI

#: Every agent, in the order their `recognise` is tried: the most specific shapes first (an
#: OpenHands event list and a SWE-agent trajectory hold messages a Cline history could hold; Cursor
#: last, its test is the loosest). It is also the order of the default folders and wrap's agents.
REGISTRY: tuple[Agent, ...] = (
    claude_code.AGENT,
    codex.AGENT,
    gemini_cli.AGENT,
    openhands.AGENT,
    swe_agent.AGENT,
    cline.AGENT,
    COPILOT_CLI,
    PI,
    opencode_export.AGENT,
    continue_dev.AGENT,
    cline_ui.AGENT,
    kilo_code.AGENT,
    opencode_db.AGENT,
    CURSOR,  # (last of those tried before the plain shapes: a message with "role" but no "content")
    opencode.AGENT,
    aider.AGENT,
)
BY_NAME: dict[str, Agent] = {agent.name: agent for agent in REGISTRY}


def recognised(value: object, name: str = "") -> Agent | None:
    """The agent one of whose records `value` is (read from the input `name`), or None."""
    for agent in REGISTRY:
        if agent.recognise(value) or (agent.recognise_file is not None and agent.recognise_file(name, value)):
            return agent
    return None
