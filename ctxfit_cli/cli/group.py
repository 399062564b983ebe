"""The `ctxfit` command group, with each command's options built only when that command is used.

Typer turns every command's signature into Click options (`inspect.signature`, the string
annotations evaluated, one Click parameter per option) before it parses anything: for ctxfit's
eight commands that is about 15 ms of every start-up, though a run uses one command and
`ctxfit --help` shows only their names and first lines (issue #10). Run as a program
(`OnDemandTyper.__call__`), the group lists each command from its name and docstring and builds
its options when it is first looked up to run, complete or show its own help. Built any other way
(`typer.main.get_command`, as `typer.testing.CliRunner` does), it is Typer's usual group.
"""

from __future__ import annotations

import inspect

import typer
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command, get_command_from_info
from typer.models import CommandInfo


class OnDemandGroup(TyperGroup):
    """A `TyperGroup` whose commands may be listed before they are built."""

    _pending: dict[str, CommandInfo] = {}
    _listing = False

    def add_on_demand(self, infos: list[CommandInfo], *, pretty_exceptions_short: bool) -> None:
        """Register commands by their Typer definitions, in order, each listed by a summary
        (name, help, hidden, deprecated) until it is looked up."""
        self._pending = {}
        self._pretty_exceptions_short = pretty_exceptions_short
        for info in infos:
            name = info.name or typer.main.get_command_name(info.callback.__name__)
            self._pending[name] = info
            self.commands[name] = _summary(name, info, self.rich_markup_mode)

    def get_command(self, ctx: typer.Context, cmd_name: str):
        info = None if self._listing else self._pending.pop(cmd_name, None)
        if info is not None:  # replaces its summary: the commands keep their order
            self.commands[cmd_name] = get_command_from_info(
                info, pretty_exceptions_short=self._pretty_exceptions_short,
                rich_markup_mode=self.rich_markup_mode)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: typer.Context, formatter) -> None:
        """The list in `ctxfit --help`: each command's name and the first line of its help,
        which its summary holds."""
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False


def _summary(name: str, info: CommandInfo, rich_markup_mode) -> TyperCommand:
    """The command as a list of commands shows it: what `get_command_from_info` gives it apart
    from its options and callback."""
    text = inspect.getdoc(info.callback) if info.help is None else inspect.cleandoc(info.help)
    return (info.cls or TyperCommand)(
        name=name, help=text, epilog=info.epilog, short_help=info.short_help, hidden=info.hidden,
        deprecated=info.deprecated, rich_markup_mode=rich_markup_mode, rich_help_panel=info.rich_help_panel)


class OnDemandTyper(typer.Typer):
    """A Typer app that, run as a program, builds only the command it runs (`OnDemandGroup`)."""

    def __call__(self, *args, **kwargs):
        return self.on_demand()(*args, **kwargs)

    def on_demand(self) -> OnDemandGroup:
        """The Click group `typer.main.get_command` makes, with every command still to build."""
        infos = self.registered_commands
        self.registered_commands = []
        try:
            group = get_command(self)  # the group, its callback and options, and no command
        finally:
            self.registered_commands = infos
        assert isinstance(group, OnDemandGroup), "create the app with cls=OnDemandGroup"
        group.add_on_demand(infos, pretty_exceptions_short=self.pretty_exceptions_short)
        return group
