"""The fitting defaults as the command line shows them (DESIGN §4): FitOptions' own values.

`core/options.py` holds the options apart from the fitter, so `--help` reads them without
loading the fitter, the estimator or the transcript model (issue #10: start-up).
"""

from ..core.options import DEFAULT_WINDOW, FitOptions

DEFAULT_BUDGET = 400_000
#: Every option's default, read as attributes: `DEFAULTS.lowwater`, `DEFAULTS.batch_size`, …
DEFAULTS = FitOptions(budget=DEFAULT_BUDGET)

__all__ = ["DEFAULTS", "DEFAULT_BUDGET", "DEFAULT_WINDOW"]
