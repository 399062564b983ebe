"""How `ctxfit` starts fast: what a run does not use is not imported. The one place that does it.

Every `ctxfit` call pays for what it imports before it does anything (issue #10: start-up at
most 0.12 s; `tests/test_startup.py` checks what each command loads, `bench/startup.py` times
it). Two things wait until they are used:

- Commands (pip's model). `commands/__init__.py` lists each command by name: the module that
  holds it and the one line `ctxfit --help` shows for it (`Command`). Run as a program
  (`OnDemandTyper.__call__`), the app lists the commands from those lines and imports a
  command's module only when that command runs, completes or shows its own help; only then
  does Typer turn its signature into Click options (the string annotations evaluated, one Click
  parameter per option: about 15 ms for all eight). Built any other way (`typer.main.get_command`,
  as `typer.testing.CliRunner` does, or `app.registered_commands` read), the app imports every
  command and is Typer's usual group.
- Modules a command needs for some runs only: the handles below (`render` loads rich when a
  report is printed, `orjson` when JSON is, the readers when a file is read), so that
  `estimate --json` loads no rich and `estimate --help` neither rich nor orjson. A command
  module imports them from here; anything else it imports must be light (typer, the option
  definitions, `errors`), or imported inside the function that uses it.
"""

from __future__ import annotations

import importlib
import inspect
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any, NamedTuple

import typer
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command, get_command_from_info
from typer.models import CommandInfo, Default


class LazyModule:
    """Stands for a module and imports it at the first attribute looked up on it.

    >>> json = LazyModule("json")
    >>> json.dumps([1])
    '[1]'
    """

    def __init__(self, name: str, package: str | None = None) -> None:
        self._name, self._package = name, package
        self._module: ModuleType | None = None

    def load(self) -> ModuleType:
        if self._module is None:
            with interrupt_held():
                self._module = importlib.import_module(self._name, self._package)
        return self._module

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.load(), attribute)


# The modules the commands load on first use (`--help` needs none of them).
orjson: Any = LazyModule("orjson")
parallel: Any = LazyModule("ctxfit_cli.formats.parallel")
payload: Any = LazyModule("ctxfit_cli.formats.payload")
reading: Any = LazyModule("ctxfit_cli.formats.reading")
render: Any = LazyModule("ctxfit_cli.cli.render")
render_replay: Any = LazyModule("ctxfit_cli.cli.render_replay")
render_fit: Any = LazyModule("ctxfit_cli.cli.render_fit")


class Command(NamedTuple):
    """Where a command is defined, and how `ctxfit --help` lists it without importing it."""

    module: str  # e.g. "ctxfit_cli.cli.commands.estimate"
    function: str  # the command's function in it
    summary: str  # the first line of its docstring (checked when it is imported)


class OnDemandGroup(TyperGroup):
    """A `TyperGroup` whose commands may be listed before they are imported and built."""

    _pending: dict[str, Command] = {}
    _listing = False

    def add_on_demand(
        self, commands: dict[str, Command], load: Callable[[str], CommandInfo], *, pretty_exceptions_short: bool
    ) -> None:
        """List `commands`, in order, each by its summary until it is looked up; `load` gives a
        command's Typer definition (importing its module)."""
        self._pending = dict(commands)
        self._load, self._pretty_exceptions_short = load, pretty_exceptions_short
        for name, command in commands.items():
            self.commands[name] = TyperCommand(name=name, help=command.summary, rich_markup_mode=self.rich_markup_mode)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if not self._listing and self._pending.pop(cmd_name, None) is not None:  # its summary is replaced:
            self.commands[cmd_name] = get_command_from_info(  # the commands keep their order
                self._load(cmd_name),
                pretty_exceptions_short=self._pretty_exceptions_short,
                rich_markup_mode=self.rich_markup_mode,
            )
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The list in `ctxfit --help`: each command's name and the first line of its help,
        which its summary holds."""
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False


class OnDemandTyper(typer.Typer):
    """A Typer app whose commands are a registry of `Command`s, each imported when it is used.

    `registered_commands` (what Typer builds its own group from) imports them all; run as a
    program, the app builds `on_demand()`'s group instead, which imports only the one it runs.
    """

    def __init__(self, *, commands: dict[str, Command], command_epilog: str | None = None, **settings: Any) -> None:
        self._registry = commands
        self._command_epilog = command_epilog
        self._infos: dict[str, CommandInfo] = {}
        self._group_only = False
        super().__init__(**settings)

    @property
    def registered_commands(self) -> list[CommandInfo]:
        """Every command of the registry, imported, as `@app.command(...)` would have defined it."""
        return [] if self._group_only else [self.command_info(name) for name in self._registry]

    @registered_commands.setter
    def registered_commands(self, infos: list[CommandInfo]) -> None:
        if infos:  # (Typer's own __init__ sets it empty)
            raise TypeError("add a command to the registry in cli/commands/__init__.py, not with app.command()")

    def command_info(self, name: str) -> CommandInfo:
        """Command `name` as `@app.command(name=name, epilog=...)` defines it; its module is
        imported now."""
        if name not in self._infos:
            entry = self._registry[name]
            with interrupt_held():
                callback = getattr(importlib.import_module(entry.module), entry.function)
            first_line = (inspect.getdoc(callback) or "").partition("\n")[0]
            if first_line != entry.summary:
                raise AssertionError(
                    f"cli/commands/__init__.py lists {name!r} as {entry.summary!r}, but its "
                    f"help starts {first_line!r}: make them the same"
                )
            self._infos[name] = CommandInfo(
                name=name,
                cls=TyperCommand,
                callback=callback,
                epilog=self._command_epilog,
                rich_help_panel=Default(None),
            )
        return self._infos[name]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.on_demand()(*args, **kwargs)

    def on_demand(self) -> OnDemandGroup:
        """The Click group `typer.main.get_command` makes, with every command still to build."""
        self._group_only = True
        try:
            group = get_command(self)  # the group, its callback and options, and no command
        finally:
            self._group_only = False
        assert isinstance(group, OnDemandGroup), "create the app with cls=OnDemandGroup"
        group.add_on_demand(self._registry, self.command_info, pretty_exceptions_short=self.pretty_exceptions_short)
        return group


@contextmanager
def interrupt_held() -> Iterator[None]:
    """Ctrl-C is delivered only after the block. For a module's import: interrupted in a native
    extension's initialization (orjson's), the process died of SIGSEGV, and in a class's
    creation it became a RuntimeError ("internal error"), in about 1 of 40 interrupted `--jobs 2`
    runs; held, it ends the run as "interrupted" a moment later. (Python's handler is replaced,
    not the signal blocked: with other threads alive the kernel hands the signal to one of them
    and the main thread is interrupted anyway.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    before = signal.signal(signal.SIGINT, lambda number, _frame: held.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
        if held:
            signal.raise_signal(signal.SIGINT)  # to the handler there was before, now
