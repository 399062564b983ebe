"""The one exception family of the core, and the exit code each member maps to.

The core raises; only `cli.py` turns an error into a message on stderr and an exit code.

Exit codes, shared by every command:
  0  success
  1  internal error: a bug in ctxfit (reported in one line; CTXFIT_TRACEBACK=1 shows the traceback),
     among them a request ctxfit produced that fails validation (`InvalidRequest`): nothing is written
  2  usage error (bad option, no input on a terminal) — Typer's own code
  3  bad input (unreadable file, not JSON, not a transcript)
  4  cannot fit (the smallest possible request is larger than the model's window)
  5  partial: some inputs among many were bad (each named in a warning on stderr), the others
     were reported; `--strict-inputs` (or `--strict` where it is not the clearing rule) makes
     the first bad input fatal (3) instead
  6  cannot write the output (disk full, permission, device error); an `-o` file is left as it was
"""

from __future__ import annotations

EXIT_OK = 0
#: An internal error: a bug of ctxfit's (issue #9 also uses it for a produced request that fails
#: validation).
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_BAD_INPUT = 3
EXIT_CANNOT_FIT = 4
EXIT_PARTIAL = 5
EXIT_OUTPUT = 6


class CtxfitError(Exception):
    """Base of every error ctxfit reports to a person."""

    exit_code = EXIT_BAD_INPUT


class BadInput(CtxfitError):
    """The input is not a transcript ctxfit can read; names the file, the line and the problem."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        self.path, self.line, self.problem = path, line, problem
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {problem}")


class NoConversation(BadInput):
    """The input holds no conversation at all (an empty file, a Claude Code log of only a
    `summary` record): nothing to report, but nothing wrong with the other inputs either."""


class UsageOnly(NoConversation):
    """The input records usage but not the conversation (Cline's `ui_messages.json`): `format`
    names it, so that `sessions` still reports its session from the usage."""

    def __init__(self, path: str, format: str, problem: str) -> None:
        super().__init__(path, None, problem)
        self.format = format


class UsageProblem(CtxfitError):
    """The command was called in a way that cannot work (e.g. no input on a terminal)."""

    exit_code = EXIT_USAGE


class CannotFit(CtxfitError):
    """Even the smallest request is larger than the model's window: it can never be sent."""

    exit_code = EXIT_CANNOT_FIT

    def __init__(self, message: str, *, smallest: int, window: int) -> None:
        self.smallest, self.window = smallest, window
        super().__init__(message)


class InvalidRequest(CtxfitError):
    """ctxfit produced a request that its validator rejects (DESIGN §8): a bug of ctxfit's,
    never sent. (An input that is invalid as read is `BadInput` instead.)"""

    exit_code = EXIT_INTERNAL

    def __init__(self, path: str, dialect: str, problem: str) -> None:
        self.path, self.dialect, self.problem = path, dialect, problem
        super().__init__(
            f"{path}: ctxfit produced an invalid {dialect} request ({problem}); nothing "
            "was written. This is a bug of ctxfit: please report it with this line"
        )


class OutputFailed(CtxfitError):
    """The system refused to write the product (disk full, permission, a device error)."""

    exit_code = EXIT_OUTPUT


class MissingExtra(CtxfitError):
    """An optional dependency (a real tokenizer) is not installed; says what to install."""

    exit_code = EXIT_USAGE
