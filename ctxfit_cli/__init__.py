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

import sys
from types import ModuleType

#: The one place the version is written: pyproject.toml reads it at build time
#: (`[tool.setuptools.dynamic]`), and `ctxfit --version` prints it without loading the package
#: metadata machinery (importlib.metadata: ~15 ms of every such start-up).
__version__ = "0.1.0"

# Every name below loads with its module when first used: each `ctxfit` command imports this
# package (it is the CLI's parent) and most use little of it (issue #10: start-up; the fitter,
# replay and validation modules alone cost about 10 ms to import).
_LAZY = {
    "SEED": ".counters.seed",
    "Counter": ".counters.seed",
    "script_counts": ".counters.seed",
    "BadInput": ".errors",
    "CannotFit": ".errors",
    "CtxfitError": ".errors",
    "UsageProblem": ".errors",
    "MESSAGE_OVERHEAD": ".core.costs",
    "TranscriptEstimate": ".core.estimate",
    "message_cost": ".core.costs",
    "total_tokens": ".core.costs",
    "FitOptions": ".core.options",
    "Fitter": ".core.fitting",
    "Plan": ".core.fitting",
    "plan_fit": ".core.fitting",
    "Message": ".core.model",
    "Part": ".core.model",
    "PartKind": ".core.model",
    "RecordedCall": ".core.model",
    "Role": ".core.model",
    "Transcript": ".core.model",
    "AGENT_NOTE": ".core.notes",
    "CLEARED_RESULT": ".core.notes",
    "TOO_LONG": ".core.notes",
    "TRIMMED_HISTORY": ".core.notes",
    "POLICIES": ".replay.policies",
    "Prices": ".replay.prices",
    "replay": ".replay.simulation",
    "validate_request": ".core.validate",
    "FORMATS": ".formats",
    "read_transcripts": ".formats",
    "to_message": ".formats",
    "Fitted": ".formats.payload",
    "build": ".formats.payload",
    "fit_transcript": ".formats.payload",
    "with_agent_note": ".formats.payload",
    "Session": ".api",
    "count": ".counting",
    "fit": ".api",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Package(ModuleType):
    def __setattr__(self, name: str, value) -> None:
        # Importing the subpackage `ctxfit_cli.replay` binds it here as `replay`, which is also
        # the name of the function this package exports: the function keeps the name, as it did
        # when this module imported it eagerly.
        if name == "replay" and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "__version__",
    "AGENT_NOTE",
    "BadInput",
    "CLEARED_RESULT",
    "CannotFit",
    "Counter",
    "CtxfitError",
    "FORMATS",
    "FitOptions",
    "Fitted",
    "Fitter",
    "MESSAGE_OVERHEAD",
    "Message",
    "POLICIES",
    "Part",
    "PartKind",
    "Plan",
    "Prices",
    "RecordedCall",
    "Role",
    "SEED",
    "TOO_LONG",
    "TRIMMED_HISTORY",
    "Transcript",
    "TranscriptEstimate",
    "Session",
    "UsageProblem",
    "build",
    "count",
    "fit",
    "fit_transcript",
    "message_cost",
    "plan_fit",
    "read_transcripts",
    "replay",
    "script_counts",
    "to_message",
    "total_tokens",
    "validate_request",
    "with_agent_note",
]
