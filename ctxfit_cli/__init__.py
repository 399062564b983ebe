"""ctxfit: keep long LLM-agent conversations inside the model's context window.

The library the CLI is built on. An agent loop calls it before every model request:

>>> import io
>>> from ctxfit_cli import FitOptions, Fitter, build, read_transcripts
>>> log = b'{"role":"user","content":"Read the files."}\\n'
>>> [transcript] = read_transcripts("log.jsonl", io.BytesIO(log))
>>> transcript = transcript.materialize()
>>> fitter = Fitter(FitOptions(budget=400_000), transcript.fixed, dialect=transcript.dialect)
>>> plan = fitter.update(transcript.messages)   # call again with the grown history each step
>>> build(transcript, plan).payload
b'{"messages":[{"role":"user","content":"Read the files."}]}'
"""

from .counting import SEED, Counter, script_counts
from .errors import BadInput, CannotFit, CtxfitError, UsageProblem
from .estimate import MESSAGE_OVERHEAD, TranscriptEstimate, message_cost, total_tokens
from .fitting import FitOptions, Fitter, Plan, plan_fit
from .formats import FORMATS, read_transcripts
from .model import Message, Part, PartKind, Role, Transcript
from .notes import AGENT_NOTE, CLEARED_RESULT, TOO_LONG, TRIMMED_HISTORY
from .payload import Fitted, build, fit_transcript, with_agent_note
from .policies import POLICIES
from .replay import Prices, replay
from .validate import validate_request

__all__ = [
    "AGENT_NOTE", "BadInput", "CLEARED_RESULT", "CannotFit", "Counter", "CtxfitError", "FORMATS",
    "FitOptions", "Fitted", "Fitter", "MESSAGE_OVERHEAD", "Message", "POLICIES", "Part", "PartKind",
    "Plan", "Prices", "Role", "SEED", "TOO_LONG", "TRIMMED_HISTORY", "Transcript", "TranscriptEstimate",
    "UsageProblem", "build", "fit_transcript", "message_cost", "plan_fit", "read_transcripts", "replay",
    "script_counts", "total_tokens", "validate_request", "with_agent_note",
]
