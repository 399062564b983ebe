"""The `ctxfit` app: its commands (one module each, listed in `commands/__init__.py`), the
version flag, and `main`, the console script.

stdout carries only the product (a report, a payload, or JSON); messages to the person go to
stderr. Errors from the core become one line on stderr and the exit code of their class
(`error_reporting.py`). `lazy.py` says how a command is imported only when it runs.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import Annotated

import typer

from ..errors import EXIT_INTERNAL
from .commands import COMMANDS
from .error_reporting import EXIT_CODES, _exit_quietly
from .lazy import OnDemandGroup, OnDemandTyper

app = OnDemandTyper(
    commands=COMMANDS,
    command_epilog=EXIT_CODES,
    name="ctxfit",
    cls=OnDemandGroup,
    help=f"Keep long LLM-agent conversations inside the model's context window.\n\n{EXIT_CODES}\n\n"
    "DESIGN §N in the help texts is section N of docs/design.md in ctxfit's repository.",
    no_args_is_help=True,
    add_completion=True,  # Typer's own --install-completion / --show-completion
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(asked: bool) -> None:
    if asked:
        from .. import __version__

        sys.stdout.write(f"ctxfit {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _top(
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, callback=_print_version, help="Print the version and exit.")
    ] = False,
) -> None:
    """Keep long LLM-agent conversations inside the model's context window."""


def main() -> None:
    """Console-script entry point."""
    # ctxfit builds millions of small objects (messages, parts, costs) and no reference cycles
    # at scale, so the cyclic collector only rescans them: on a 300 MB transcript it was 43% of
    # `fit`. Reference counting still frees everything; the process is short-lived. (The
    # library leaves `gc` alone.)
    gc.disable()
    try:
        app()
    except KeyboardInterrupt:
        _exit_quietly("interrupted", 130)
    except BaseException as error:  # not only Exception: a Rust extension's panic is a BaseException
        if isinstance(error, SystemExit) or os.environ.get("CTXFIT_TRACEBACK"):
            raise
        if _caused_by_interrupt(error):  # (Python wraps one raised in a class's creation, say)
            _exit_quietly("interrupted", 130)
        # A bug of ours: one line that says how to report it, not a traceback (set
        # CTXFIT_TRACEBACK=1 to see one).
        _exit_quietly(
            f"internal error ({type(error).__name__}: {error}); please report it with "
            "the command and input that caused it (CTXFIT_TRACEBACK=1 shows where)",
            EXIT_INTERNAL,
        )


def _caused_by_interrupt(error: BaseException) -> bool:
    """Whether a Ctrl-C is what raised `error` (its cause, or its cause's, ...)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return False
