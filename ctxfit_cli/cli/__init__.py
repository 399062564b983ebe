"""The command line (Typer): arguments, streams, rendering and exit codes over the library."""

from .app import app, main

__all__ = ["app", "main"]
