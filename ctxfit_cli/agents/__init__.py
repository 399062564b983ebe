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

from . import amp, crush, goose, qwen_code
from .agent import Agent

#: Every agent, in the order their `recognise` is tried (the most specific shapes first).
REGISTRY: tuple[Agent, ...] = (
    qwen_code.AGENT,
    goose.AGENT,
    amp.AGENT,
    crush.AGENT,
)
BY_NAME: dict[str, Agent] = {agent.name: agent for agent in REGISTRY}


def recognised(value: object) -> Agent | None:
    """The agent one of whose records `value` is, or None."""
    for agent in REGISTRY:
        if agent.recognise(value):
            return agent
    return None
