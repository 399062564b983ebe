"""The proxy starts fast (issue #33: an agent's first request through `ctxfit wrap` waits for
it): its own process loads what moves bytes, not the fitting side, which its workers load
(`serve/channel.py`); wrap checks its options without it; the workers are started before
the proxy's own imports (`serve/spawning.py`)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("aiohttp")

from ctxfit_cli.serve.dialects import HANDLING  # noqa: E402
from ctxfit_cli.serve.paths import ARRAYS  # noqa: E402

#: The fitting side: readers, sessions, the core's fitting, the library.
FITTING_SIDE = (
    "ctxfit_cli.api",
    "ctxfit_cli.history",
    "ctxfit_cli.formats",
    "ctxfit_cli.core.fitting",
    "ctxfit_cli.serve.body",
    "ctxfit_cli.serve.conversations",
    "ctxfit_cli.serve.fitting",
    "ctxfit_cli.serve.dialects",
    "ctxfit_cli.serve.worker",
)


def loaded(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True, text=True, check=True,
    ).stdout
    return set(out.split())


def test_the_routes_arrays_are_the_handlings():
    assert ARRAYS == {dialect: handling.array for dialect, handling in HANDLING.items()}


def test_the_proxy_process_loads_no_fitting_side():
    modules = loaded("import ctxfit_cli.serve.running, ctxfit_cli.cli.commands.proxy")
    assert "aiohttp.web" in modules
    assert not modules & set(FITTING_SIDE)


def test_wrap_checks_its_options_without_the_fitting_side_or_asyncio():
    modules = loaded(
        "from ctxfit_cli.cli.commands.proxy import proxy_settings\n"
        "proxy_settings('http://127.0.0.1:9', '80%', None, 32, 256, 600.0, print, workers=1)"
    )
    assert not modules & {*FITTING_SIDE, "asyncio", "aiohttp"}


def test_the_worker_loads_the_fitting_side():
    assert {"ctxfit_cli.serve.body", "ctxfit_cli.api"} <= loaded("import ctxfit_cli.serve.worker")
