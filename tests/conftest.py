"""Builders for conversations with sizes known in advance, read through the real parsers."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import orjson
import pytest
import typer.testing
from hypothesis import settings

# In CI, Hypothesis runs the same examples every time (a seed per test), so a submission is not
# judged by the luck of one random draw; locally it explores new examples on every run.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.core.model import Transcript

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_transcripts"
REALWORLD = ROOT.parent / "shared" / "realworld"
#: Tests of the real logs: skipped in a checkout with no ../shared beside it (a newcomer's clone);
#: in CI, which has it, a missing folder fails them instead of skipping them quietly.
needs_realworld = pytest.mark.skipif(not REALWORLD.is_dir() and not os.environ.get("CI"),
                                     reason="needs ../shared/realworld beside the checkout (CI has it)")


@pytest.fixture(autouse=True)
def private_cache_folder(tmp_path_factory, monkeypatch):
    """Each test its own empty cache folder (`fleet/summary_cache.py`): a test reads its files,
    never what another test (or the developer's own runs in ~/.cache) left."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(autouse=True, scope="session")
def click_command_built_once():
    """Typer's runner builds the Click command from every command's signature on each invoke
    (35 ms, most of a small CLI test); the app does not change, so each app's is built once."""
    built: dict[int, tuple[object, object]] = {}  # the app is kept too, so its id stays its own
    build = typer.testing._get_command

    def once(app):
        if id(app) not in built:
            built[id(app)] = (app, build(app))
        return built[id(app)][1]

    with mock.patch("typer.testing._get_command", once):
        yield


def ascii_text(tokens: int) -> str:
    """ASCII text that the seed rule counts as exactly `tokens` tokens."""
    return "x" * (4 * tokens)


def read(lines: list[dict], format: str | None = None) -> Transcript:
    """A transcript from JSON lines, through the real reader."""
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    [transcript] = read_transcripts("test.jsonl", io.BytesIO(data), format)
    return transcript.materialize()


class Chat:
    """Builds Anthropic or OpenAI message dicts: a sub-agent, or a multi-turn chat."""

    def __init__(self, dialect: str = "anthropic", system: str | None = "You are an agent.") -> None:
        self.dialect = dialect
        self.lines: list[dict] = []
        self.calls = 0
        if system is not None:
            self.lines.append({"role": "system", "content": system})

    def user(self, text: str) -> "Chat":
        self.lines.append({"role": "user", "content": text})
        return self

    def say(self, text: str) -> "Chat":
        self.lines.append({"role": "assistant", "content": text})
        return self

    def round(self, *results: str, tool: str = "read_file") -> "Chat":
        """One assistant message with len(results) parallel calls, then their results."""
        ids = []
        for _ in results:
            self.calls += 1
            ids.append(f"call_{self.calls:04d}")
        if self.dialect == "anthropic":
            self.lines.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": i, "name": tool, "input": {"n": n}} for n, i in enumerate(ids)]})
            self.lines.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": i, "content": r} for i, r in zip(ids, results)]})
        else:
            self.lines.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": tool, "arguments": orjson.dumps({"n": n}).decode()}}
                for n, i in enumerate(ids)]})
            for i, r in zip(ids, results):
                self.lines.append({"role": "tool", "tool_call_id": i, "content": r})
        return self

    def transcript(self) -> Transcript:
        return read(self.lines, self.dialect)

    def jsonl(self) -> bytes:
        return b"".join(orjson.dumps(line) + b"\n" for line in self.lines)


@pytest.fixture
def chat():
    return Chat


def run_cli(*args: str, input: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the real `ctxfit` in a subprocess (python -m, so no PATH assumptions)."""
    env = {**os.environ, "COLUMNS": "120", "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "ctxfit_cli", *args], input=input if input is not None else b"",
        capture_output=True, cwd=cwd or ROOT, env=env, timeout=120,
    )


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite tests/golden/ from the current outputs instead of comparing")


@pytest.fixture
def update_golden(request) -> bool:
    return request.config.getoption("--update-golden")
