"""`ctxfit note`: the note that tells an agent about its safety net."""

from __future__ import annotations

from ...core.notes import AGENT_NOTE
from ..error_reporting import reports_errors
from ..options import Json
from ..outputs import write_stdout
from ..writing import write_json


@reports_errors
def note(json: Json = False) -> None:
    """Print the note that tells an agent about its safety net (DESIGN §5).

    \b
    Put it in your agent's system prompt, or let `ctxfit fit --tell-agent` add it:
        ctxfit note >> system_prompt.txt
    """
    if json:
        write_json({"note": AGENT_NOTE})
    else:
        write_stdout(AGENT_NOTE.encode() + b"\n")
