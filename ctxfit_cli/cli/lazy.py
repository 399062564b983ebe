"""Modules imported when first used: every `ctxfit` call pays for what it imports at start-up.

`ctxfit --help` needs only Typer and the option definitions; rich, orjson, the readers and the
payload writer load when a command first touches them (issue #10: start-up at most 0.12 s).
"""

from __future__ import annotations

import importlib
from types import ModuleType


class LazyModule:
    """Stands for a module and imports it at the first attribute looked up on it.

    >>> json = LazyModule("json")
    >>> json.dumps([1])
    '[1]'
    """

    def __init__(self, name: str, package: str | None = None) -> None:
        self._name, self._package, self._module = name, package, None

    def load(self) -> ModuleType:
        if self._module is None:
            self._module = importlib.import_module(self._name, self._package)
        return self._module

    def __getattr__(self, attribute: str):
        return getattr(self.load(), attribute)
