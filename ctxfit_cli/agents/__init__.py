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
    amp,
    claude_code,
    cline,
    cline_cli,
    cline_ui,
    codex,
    continue_dev,
    crush,
    gemini_cli,
    goose,
    kilo_code,
    opencode,
    opencode_db,
    opencode_export,
    openhands,
    qwen_code,
    swe_agent,
)
from .agent import Agent
from .copilot_cli import AGENT as COPILOT_CLI
from .cursor import AGENT as CURSOR
from .pi import AGENT as PI

#: Every agent, in the order their `recognise` is tried, which is also the order of the default
#: folders and of wrap's agents. An agent goes after those its test could mistake for it: an
#: OpenHands event list and a SWE-agent trajectory hold messages a Cline history could hold, a
#: Qwen Code record is a Claude Code record with Gemini parts, an OpenCode database's records are
#: exports with the database's row, and Cursor's test (a message with "role" but no "content") is
#: the loosest. A new agent's line goes at the end unless its records could be mistaken so.
REGISTRY: tuple[Agent, ...] = (
    openhands.AGENT,
    swe_agent.AGENT,
    qwen_code.AGENT,
    claude_code.AGENT,
    codex.AGENT,
    gemini_cli.AGENT,
    cline.AGENT,
    opencode.AGENT,
    aider.AGENT,
    COPILOT_CLI,
    PI,
    goose.AGENT,
    amp.AGENT,
    crush.AGENT,
    opencode_db.AGENT,
    opencode_export.AGENT,
    continue_dev.AGENT,
    cline_ui.AGENT,
    kilo_code.AGENT,
    cline_cli.AGENT,
    CURSOR,
)
BY_NAME: dict[str, Agent] = {agent.name: agent for agent in REGISTRY}


def recognised(value: object, name: str = "") -> Agent | None:
    """The agent one of whose records `value` is (read from the input `name`), or None."""
    for agent in REGISTRY:
        if agent.recognise(value) or (agent.recognise_file is not None and agent.recognise_file(name, value)):
            return agent
    return None
