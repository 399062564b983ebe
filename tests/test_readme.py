"""The README stays true: its output is the real output, its commands exist, CI runs its tests."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from ctxfit_cli.cli import app
from conftest import ROOT, run_cli

README = (ROOT / "README.md").read_text(encoding="utf-8")


def fenced_blocks() -> list[str]:
    return re.findall(r"```[a-z]*\n(.*?)```", README, flags=re.S)


def test_the_first_output_block_is_what_estimate_really_prints():
    blocks = fenced_blocks()
    first_command, output = blocks[0], blocks[2]
    assert "ctxfit estimate sample_transcripts/subagent_reader.anthropic.jsonl" in first_command
    real = run_cli("estimate", "sample_transcripts/subagent_reader.anthropic.jsonl").stdout.decode()
    strip = lambda text: "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")
    assert strip(output) == strip(real)


def test_every_command_the_readme_names_exists():
    named = set(re.findall(r"(?:`|\$ |^|\.venv/bin/)ctxfit ([a-z]+)\b", README, flags=re.M))
    commands = {c.name or c.callback.__name__ for c in app.registered_commands}
    assert named <= commands, named - commands
    for command in named:
        assert CliRunner().invoke(app, [command, "--help"]).exit_code == 0


def test_ci_runs_the_readme_test_command():
    test_command = fenced_blocks()[1].strip()
    assert test_command.endswith(".venv/bin/python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # CI installs the test extra, and may add others (fleet: Ray for the --engine ray test).
    assert ".venv/bin/pip install" in ci and re.search(r"'\.\[test[,\]]", ci) and ".venv/bin/python -m pytest" in ci
