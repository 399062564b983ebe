"""The fitting defaults as the command line shows them (DESIGN §4): FitOptions' own values.

Written out here because `--help` shows them and reading them from `core/options.py` would import
`dataclasses` and build `FitOptions` on every `--help` (about 2 ms, measured with `python -X
importtime`; `--help` is otherwise within a few ms of a one-command Typer app's, issue #10).
`tests/test_startup.py` checks that each is the default of the `FitOptions` field it names.
"""

from types import SimpleNamespace

DEFAULT_BUDGET = 400_000
DEFAULTS = SimpleNamespace(window=1_000_000, lowwater=0.55, batch_size=4, protect_share=0.25, min_clear_tokens=100)
DEFAULT_WINDOW = DEFAULTS.window
