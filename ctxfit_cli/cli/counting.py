"""Moved to `core/choice.py` (plain data, no I/O: the per-file work of `fleet/` chooses too).
Kept so that imports from here still work."""

from ..core.choice import AUTO, Choice, apply, choose, fit_options, given_counter, parse_fixed_tokens  # noqa: F401
