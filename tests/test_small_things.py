"""What users expect of any CLI: --version, shell completion, FORCE_COLOR/NO_COLOR, `fit --set`,
a license, and a design document that every "DESIGN §N" citation resolves to."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import orjson
import pytest

import ctxfit_cli
from ctxfit_cli.cli import app
from ctxfit_cli.cli.render import colour_system
from ctxfit_cli.core.validate import validate_request
from conftest import ROOT, Chat, run_cli

SAMPLE = ROOT / "sample_transcripts" / "subagent_reader.anthropic.jsonl"
REQUEST = ROOT / "sample_transcripts" / "request.anthropic.json"


def ctxfit(*args: str, **env: str) -> subprocess.CompletedProcess:
    """The installed `ctxfit` script (completion is keyed to the program's name) with exactly
    the colour variables given (none inherited)."""
    base = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    script = Path(sys.executable).parent / "ctxfit"
    return subprocess.run([str(script), *args], capture_output=True, env={**base, **env}, timeout=120, cwd=ROOT)


# --- version ---------------------------------------------------------------------------------


def test_version_comes_from_the_package_metadata():
    assert ctxfit_cli.__version__ == version("ctxfit")
    done = ctxfit("--version")
    assert done.returncode == 0
    assert done.stdout.decode() == f"ctxfit {version('ctxfit')}\n"


# --- shell completion (Typer's own) --------------------------------------------------------------


def test_completion_options_are_offered_and_complete_commands_and_options():
    assert b"--install-completion" in ctxfit("--help").stdout
    commands = ctxfit(_CTXFIT_COMPLETE="complete_bash", COMP_WORDS="ctxfit es", COMP_CWORD="1")
    assert commands.stdout.split() == [b"estimate"]
    options = ctxfit(_CTXFIT_COMPLETE="complete_bash", COMP_WORDS="ctxfit fit --bud", COMP_CWORD="2")
    assert options.stdout.split() == [b"--budget"]


def test_show_completion_prints_a_script_for_the_named_shell():
    done = ctxfit("--show-completion", "bash")
    assert done.returncode == 0 and b"_ctxfit_completion" in done.stdout


# --- colour --------------------------------------------------------------------------------------


@pytest.mark.parametrize("is_tty, environ, expected", [
    (False, {}, None),
    (True, {}, "auto"),
    (False, {"FORCE_COLOR": "1"}, "standard"),
    (False, {"FORCE_COLOR": "true"}, "standard"),
    (False, {"FORCE_COLOR": "2"}, "256"),
    (False, {"FORCE_COLOR": "3"}, "truecolor"),
    (False, {"FORCE_COLOR": "0"}, None),
    (False, {"FORCE_COLOR": ""}, None),
    (True, {"NO_COLOR": "1"}, None),
    (False, {"FORCE_COLOR": "1", "NO_COLOR": "1"}, None),  # NO_COLOR wins
])
def test_colour_system_follows_the_terminal_and_the_environment(is_tty, environ, expected):
    assert colour_system(is_tty, environ) == expected


def test_force_colour_colours_a_piped_report_and_never_json():
    plain = ctxfit("estimate", str(SAMPLE), "--top", "0")
    forced = ctxfit("estimate", str(SAMPLE), "--top", "0", FORCE_COLOR="1")
    assert b"\x1b[" not in plain.stdout and b"\x1b[" in forced.stdout
    assert re.sub(rb"\x1b\[[0-9;]*m", b"", forced.stdout) == plain.stdout
    assert b"\x1b[" not in ctxfit("estimate", str(SAMPLE), "--top", "0", FORCE_COLOR="1", NO_COLOR="1").stdout
    as_json = ctxfit("estimate", str(SAMPLE), "--json", FORCE_COLOR="1")
    orjson.loads(as_json.stdout)


# --- fit --set -------------------------------------------------------------------------------------


def test_set_adds_typed_fields_and_leaves_the_rest_byte_for_byte():
    bare = run_cli("fit", str(SAMPLE), "--budget", "50000")
    done = run_cli("fit", str(SAMPLE), "--budget", "50000", "--set", "model=claude-sonnet-4-5",
                   "--set", "max_tokens=8192", "--set", "stream=true", "--set", "temperature=0.5",
                   "--set", 'metadata={"user_id": "u-1"}', "--set", 'tag="42"', "--set", "note=a=b")
    assert done.returncode == 0, done.stderr
    payload = orjson.loads(done.stdout)
    assert [payload[k] for k in ("model", "max_tokens", "stream", "temperature", "metadata", "tag", "note")] == [
        "claude-sonnet-4-5", 8192, True, 0.5, {"user_id": "u-1"}, "42", "a=b"]
    # Everything fitting wrote is unchanged: the fields were put in front of the same bytes.
    assert done.stdout.endswith(bare.stdout[1:])
    assert validate_request(payload, "anthropic") == []


def test_set_replaces_a_field_the_request_already_had_in_place():
    done = run_cli("fit", str(REQUEST), "--set", "model=claude-opus-4-1", "--set", "max_tokens=100")
    assert done.returncode == 0, done.stderr
    payload = orjson.loads(done.stdout)
    original = orjson.loads(REQUEST.read_bytes())
    assert list(payload) == list(original)  # same fields, same order, nothing duplicated
    assert (payload["model"], payload["max_tokens"]) == ("claude-opus-4-1", 100)
    assert done.stdout.count(b'"model"') == 1


@pytest.mark.parametrize("setting", ["messages=[]", "system=x", "tools=[]", "novalue", "=1"])
def test_set_refuses_what_fitting_writes_and_malformed_settings(setting):
    done = run_cli("fit", str(SAMPLE), "--set", setting)
    assert done.returncode == 2 and done.stdout == b""
    assert b"--set" in done.stderr


def test_set_on_an_openai_chat_file(tmp_path):
    path = tmp_path / "chat.openai.jsonl"
    path.write_bytes(Chat("openai").user("Hello").say("Hi.").jsonl())
    done = run_cli("fit", str(path), "--set", "model=gpt-4.1")
    assert orjson.loads(done.stdout)["model"] == "gpt-4.1"
    assert done.stdout.startswith(b'{"model":"gpt-4.1","messages":[')


# --- license ------------------------------------------------------------------------------------------


def test_license_file_and_a_pep_639_license_field():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT"
    assert project["project"]["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    # Setuptools reads a license expression and license-files from 77 on.
    assert any(re.fullmatch(r"setuptools>=(\d+)", r) and int(r.split(">=")[1]) >= 77
               for r in project["build-system"]["requires"])


# --- DESIGN §N ------------------------------------------------------------------------------------------


def design_sections() -> set[str]:
    text = (ROOT / "docs" / "design.md").read_text()
    return set(re.findall(r"^## (\d+)\. ", text, flags=re.M))


def cited(text: str) -> set[str]:
    return set(re.findall(r"DESIGN §(\d+)", text))


def test_every_design_citation_in_the_repository_resolves_to_a_section():
    sections = design_sections()
    assert sections == {str(n) for n in range(1, 16)}
    files = [ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("ctxfit_cli/**/*.py"),
             *ROOT.glob("bench/*.py"), *ROOT.glob("sample_transcripts/*.py")]
    citations = {(path.relative_to(ROOT).as_posix(), n) for path in files for n in cited(path.read_text())}
    assert citations, "the project cites its design"
    assert [c for c in citations if c[1] not in sections] == []


def test_every_design_citation_in_the_help_texts_resolves():
    from typer.main import get_command
    command = get_command(app)
    texts = [ctxfit("--help").stdout.decode()]
    texts += [ctxfit(name, "--help").stdout.decode() for name in command.commands]
    found = set().union(*(cited(t) for t in texts))
    assert "4" in found and found <= design_sections()
    assert "docs/design.md" in texts[0]
