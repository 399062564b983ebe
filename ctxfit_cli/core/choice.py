"""Which counter, window and unlogged fixed part a command uses for one transcript.

The user's options win (`--tokenizer`, `--profile`, `--window`, `--fixed-tokens N`). Otherwise
a log (or a request's `model` field) that names its model is counted with that family's profile and window
(`counters.models`), and a log that records usage has its unlogged fixed part inferred from
the first recorded call (`core.usage.infer_fixed`) and counted in every budget. Every report
says what was used and why (`Choice.to_dict`).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any, NamedTuple

from ..core.model import Transcript
from ..core.usage import NO_FIXED, FixedPart, infer_fixed, with_unlogged
from ..counters.seed import SEED, Counter
from ..errors import UsageProblem
from .options import DEFAULT_WINDOW, FitOptions

AUTO = "auto"


class Choice(NamedTuple):
    counter: Counter
    counter_reason: str
    window: int
    window_source: str
    fixed: FixedPart = NO_FIXED

    def to_dict(self) -> dict[str, Any]:
        """The shape every report carries (`estimate`, `plan`, `fit --report`, `replay`)."""
        return {
            "counter": self.counter.name,
            "counter_reason": self.counter_reason,
            "window": self.window,
            "window_source": self.window_source,
            "unlogged": self.fixed.to_dict(),
        }


def parse_fixed_tokens(value: str) -> int | None:
    """`--fixed-tokens`: a number of tokens, or ``auto`` (None: infer from recorded usage)."""
    text = value.strip().lower()
    if text == AUTO:
        return None
    if text.isdigit():
        return int(text)
    raise UsageProblem(f"--fixed-tokens must be a number of tokens, 0, or auto (got {value!r})")


def given_counter(tokenizer: str | None, profile: str | None) -> Counter | None:
    """The counter the user asked for, or None to choose by model."""
    if tokenizer and profile:
        raise UsageProblem("give --tokenizer or --profile, not both")
    if tokenizer:
        from ..counters.tokenizers import get_tokenizer

        return get_tokenizer(tokenizer)
    if profile:
        from ..counters.profiles import load_profile

        return load_profile(profile)
    return None


def choose(transcript: Transcript, *, counter: Counter | None, window: int | None, fixed_tokens: int | None) -> Choice:
    """The choice for one transcript (materialized when its format records usage)."""
    models = [c.model for c in transcript.calls if c.model] or _request_model(transcript)
    if counter is not None:
        reason = "given"
    elif models:
        from ..counters.models import counter_for_models

        counter, reason = counter_for_models(models)
    else:
        counter, reason = SEED, "seed rule: the input names no model"
    if window is not None:
        window_source = "given (--window)"
    else:
        from ..counters.models import window_for

        recorded = [c.window for c in transcript.calls if c.window]
        window, window_source = window_for(models, recorded[-1] if recorded else None)
        if window is None:
            window, window_source = DEFAULT_WINDOW, "default"
    if fixed_tokens is not None:
        fixed = FixedPart(fixed_tokens, "given") if fixed_tokens else NO_FIXED
    elif transcript.calls and isinstance(transcript.messages, tuple):
        fixed = infer_fixed(transcript, counter)
    else:
        fixed = NO_FIXED
    return Choice(counter, reason, window, window_source, fixed)


@functools.lru_cache(maxsize=64)
def counter_for_model(model: str) -> tuple[Counter, str]:
    """(counter, why) for one request naming `model` ("": none), as `choose` picks it for a
    log or request that names it: the family's profile, `safe` for a model of no known family,
    the seed rule when none is named. Loaded once per model (the proxy asks at every request).

    >>> counter_for_model("claude-sonnet-4-5")[0].name, counter_for_model("")[0].name
    ('profile:claude@2', 'seed')
    """
    if not model:
        return SEED, "seed rule: the request names no model"
    from ..counters.models import counter_for_models

    return counter_for_models([model])


def _request_model(transcript: Transcript) -> list[str]:
    """The model a request object names in its `model` field (`ctxfit fit` writes the log's),
    as a list of one; [] when it names none."""
    import orjson

    raw = dict(transcript.extra).get("model")
    try:
        model = orjson.loads(raw) if raw is not None else None
    except orjson.JSONDecodeError:
        return []
    return [model] if isinstance(model, str) and model else []


def apply(transcript: Transcript, choice: Choice) -> Transcript:
    """The transcript with the chosen unlogged fixed part counted."""
    return with_unlogged(transcript, choice.fixed)


def fit_options(options: FitOptions, choice: Choice) -> FitOptions:
    """The command's fitting options with this transcript's counter and window; a budget over
    the window is lowered to the window (a request over the window cannot be sent at all)."""
    return replace(options, counter=choice.counter, window=choice.window, budget=min(options.budget, choice.window))
