"""Errors as the person sees them: one line on stderr and the exit code of their class.

The core raises `CtxfitError`s (ctxfit_cli/errors.py), each with its exit code; a command's
function is wrapped in `reports_errors`, and `main` (app.py) catches what escapes it. Never a
traceback (CTXFIT_TRACEBACK=1 shows one for a bug of ours), never a partial product.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

import typer

from ..errors import EXIT_BAD_INPUT, CtxfitError, OutputFailed
from .outputs import discard_stdout

#: The exit codes, as every command's help (its epilog) and `ctxfit --help` list them.
EXIT_CODES = """\b
Exit codes: 0 success · 1 internal error (e.g. a produced request failed validation) ·
2 usage error · 3 bad input (file, line and problem on stderr) · 4 cannot fit (even the smallest request is \
larger than the model's window) ·
5 partial (some of many inputs were bad: each named on stderr, the others reported) ·
6 cannot write the output (disk full, permission)."""


def reports_errors(command: Callable) -> Callable:
    """Turn core errors into one line on stderr and their exit code; never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except BrokenPipeError:
            discard_stdout()  # the reader went away (e.g. `| head`): not an error of ours
            raise typer.Exit(0) from None
        except OutputFailed as error:
            discard_stdout()  # what is still buffered would fail again on exit
            _fail(str(error), error.exit_code)
        except CtxfitError as error:
            _fail(str(error), error.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except MemoryError:
            _fail("out of memory while reading the input", EXIT_BAD_INPUT)

    return wrapper


def _fail(message: str, code: int) -> None:
    sys.stderr.write(f"ctxfit: error: {message}\n")
    sys.stderr.flush()
    raise typer.Exit(code)


def _exit_quietly(message: str, code: int) -> None:
    discard_stdout()  # no partial product, and no second error when Python flushes it
    try:
        sys.stderr.write(f"ctxfit: error: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    sys.exit(code)
