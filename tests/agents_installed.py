"""Where the real agents are installed for the tests that run them (`test_real_agents.py`,
`test_rescue.py`): `$CTXFIT_AGENTS_BIN`, else `.agents/node_modules/.bin` in the checkout (where
`.ci/run` installs them at the versions pinned on its `AGENTS=` line), else PATH. A missing agent
skips its test locally, with the command that installs it, and fails it in CI."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from servers import ROOT

#: The npm package of each agent.
PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "gemini": "@google/gemini-cli",
            "opencode": "opencode-ai", "copilot": "@github/copilot", "qwen": "@qwen-code/qwen-code",
            "cline": "cline"}


def pinned() -> dict[str, str]:
    """The `package@version` of each agent, from the one line of `.ci/run` that pins them."""
    found = re.search(r'^AGENTS="([^"]+)"', (ROOT / ".ci" / "run").read_text(), re.MULTILINE)
    assert found, ".ci/run has no AGENTS=\"...\" line pinning the agents"
    versions = dict(spec.rsplit("@", 1) for spec in found.group(1).split())
    return {name: f"{package}@{versions[package]}" for name, package in PACKAGES.items()}


def agent_binary(name: str) -> Path:
    """The agent's executable; skipped (failed under CI) when it is not installed."""
    for folder in (os.environ.get("CTXFIT_AGENTS_BIN"), str(ROOT / ".agents" / "node_modules" / ".bin")):
        if folder and (Path(folder) / name).exists():
            return Path(folder) / name
    found = shutil.which(name)
    if found:
        return Path(found)
    install = f"npm install --prefix .agents {' '.join(pinned().values())}"
    reason = f"{name} is not installed: run `{install}` in the checkout (or set CTXFIT_AGENTS_BIN)"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)
