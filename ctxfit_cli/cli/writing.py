"""What several commands write besides their report: JSON on stdout, the HTML report, and the
note of what the readers repaired (stderr)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .lazy import orjson, render
from .outputs import atomic_write, write_stdout


def write_html(path: str, kind: str, data: Any, **options: Any) -> None:
    """The HTML report of `kind` ("replay", "sessions") for `data` (what --json prints), written
    atomically; a line on stderr says where."""
    from .. import __version__
    from . import html_report

    pages: dict[str, Callable[..., str]] = {"replay": html_report.replay_page, "sessions": html_report.sessions_page}
    build = pages[kind]
    atomic_write(path, build(data, version=__version__, **options).encode("utf-8"))
    render.stderr_console().print(render.Text(f"HTML report written to {path}"))


def report_repairs(lines: list[str]) -> None:
    """What the readers repaired, on stderr (`render.repairs`); rich loads only if there is any."""
    if lines:
        render.repairs(lines)


def report_skipped(reports: list[dict], *, verbose: bool = False) -> None:
    """What the readers skipped (record types and keys they do not know), on stderr: one line
    per input and kind, the most frequent names (all of them with `verbose`)."""
    from ..formats.skipped import summary

    lines, seen = [], set()
    for report in reports:  # (the conversations of one log share its counts: said once)
        if report["path"] in seen or not report.get("unread"):
            continue
        seen.add(report["path"])
        lines += [f"{report['path']}: {line}" for line in summary(report["unread"], every=verbose)]
    if lines:
        err = render.stderr_console()
        for line in lines:
            err.print(render.Text(line))


def write_json(document: object) -> None:
    """One JSON document on stdout, as bytes."""
    write_stdout(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
