"""ctxfit: keep long LLM-agent conversations inside the model's context window.

In an agent loop, one call before every model request, on the messages the loop already keeps
(dicts, the Anthropic or OpenAI SDK's objects, LangChain messages):

>>> import ctxfit_cli
>>> history = [{"role": "user", "content": "Read the files."}]
>>> ctxfit_cli.fit(history, budget=400_000, system="You are a careful agent.") == history
True

`Session` does the same step by step for a growing history, paying only for the new messages;
`count` estimates tokens. Underneath, the pieces the CLI is built on:

>>> from ctxfit_cli import FitOptions, Fitter, Transcript, build, to_message
>>> system = to_message({"role": "system", "content": "You are a careful agent."}, "anthropic")
>>> agent = Transcript("agent", "anthropic", "anthropic", (), system=(system,))
>>> fitter = Fitter(FitOptions(budget=400_000), agent.fixed, dialect="anthropic")
>>> history = [to_message({"role": "user", "content": "Read the files."}, "anthropic")]
>>> plan = fitter.update(history)   # each step: the grown history; only new messages are estimated
>>> build(agent, plan, messages=history).payload
b'{"system":"You are a careful agent.","messages":[{"role":"user","content":"Read the files."}]}'
"""

from .counters.seed import SEED, Counter, script_counts
from .errors import BadInput, CannotFit, CtxfitError, UsageProblem
from .core.estimate import MESSAGE_OVERHEAD, TranscriptEstimate, message_cost, total_tokens
from .core.fitting import FitOptions, Fitter, Plan, plan_fit
from .core.model import Message, Part, PartKind, RecordedCall, Role, Transcript
from .core.notes import AGENT_NOTE, CLEARED_RESULT, TOO_LONG, TRIMMED_HISTORY
from .replay import POLICIES, Prices, replay
from .core.validate import validate_request

# The readers (with orjson), the payload writer and the library facade load when first used:
# every `ctxfit` command imports this package, and most need few of them (issue #10: start-up).
_LAZY = {
    "FORMATS": ".formats", "read_transcripts": ".formats", "to_message": ".formats",
    "Fitted": ".formats.payload", "build": ".formats.payload", "fit_transcript": ".formats.payload",
    "with_agent_note": ".formats.payload", "Session": ".api", "count": ".api", "fit": ".api",
}


def __getattr__(name: str):
    if name == "__version__":
        # Read from the installed package's metadata (pyproject.toml is the one source), only
        # when asked: importing the metadata machinery costs every CLI start-up.
        from importlib.metadata import version
        return version("ctxfit")
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "__version__", "AGENT_NOTE", "BadInput", "CLEARED_RESULT", "CannotFit", "Counter", "CtxfitError", "FORMATS",
    "FitOptions", "Fitted", "Fitter", "MESSAGE_OVERHEAD", "Message", "POLICIES", "Part", "PartKind",
    "Plan", "Prices", "RecordedCall", "Role", "SEED", "TOO_LONG", "TRIMMED_HISTORY", "Transcript", "TranscriptEstimate",
    "Session", "UsageProblem", "build", "count", "fit", "fit_transcript", "message_cost", "plan_fit", "read_transcripts", "replay",
    "script_counts", "to_message", "total_tokens", "validate_request", "with_agent_note",
]
