"""The `ctxfit` console script: the command line is loaded inside it, so that a Ctrl-C while it
loads (Typer alone takes ~0.1 s) ends as one later does, "interrupted" and exit 130, not in a
traceback of the import. (Kept apart from `cli/`: importing that package loads the app.)"""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from .cli.app import main as run
    except KeyboardInterrupt:
        sys.stderr.write("ctxfit: error: interrupted\n")
        raise SystemExit(130) from None
    run()
