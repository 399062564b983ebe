"""Start-up stays light (issue #10): what each command imports, checked by name, never by time.

`bench/startup.py` measures the time; these tests keep the structure that makes it short — a
command loads only the modules it uses — from eroding unnoticed.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
from unittest import mock

import pytest
from conftest import ROOT, SAMPLES
from typer.main import get_command
from typer.testing import CliRunner

from ctxfit_cli.cli.app import app
from ctxfit_cli.cli.defaults import DEFAULTS

#: What the whole library, the readers and rich would add to `ctxfit --help`.
HEAVY_FOR_HELP = {
    "ctxfit_cli.api",
    "ctxfit_cli.core.estimate",
    "ctxfit_cli.core.fitting",
    "ctxfit_cli.core.model",
    "ctxfit_cli.core.options",
    "dataclasses",
    "ctxfit_cli.core.validate",
    "ctxfit_cli.formats",
    "ctxfit_cli.fleet",
    "ctxfit_cli.replay",
    "ctxfit_cli.cli.many",
    "ctxfit_cli.cli.render",
    "orjson",
    "regex",
    "rich",
}
#: What `ctxfit estimate` on one small file does not use: no fitting, replay or validation.
UNUSED_BY_ESTIMATE = {
    "ctxfit_cli.api",
    "ctxfit_cli.cli.html_report",
    "ctxfit_cli.core.fitting",
    "ctxfit_cli.core.plan",
    "ctxfit_cli.core.validate",
    "ctxfit_cli.counters.tokenizers",
    "ctxfit_cli.fleet.meta",
    "ctxfit_cli.formats.payload",
    "ctxfit_cli.replay.policies",
    "ctxfit_cli.replay.simulation",
    "ctxfit_cli.serve",
    "hashlib",
    "regex",
    "rich.progress",
    "tiktoken",
}

_RUN = """
import sys
sys.argv = ["ctxfit", *sys.argv[1:]]
from ctxfit_cli.cli import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write("\\nloaded: " + " ".join(sorted(sys.modules)) + "\\n")
"""


def loaded_by(*args: str, cache: str | None = None) -> set[str]:
    """The modules a `ctxfit` run (through the console script's `main`) has imported when it ends,
    with `cache` as its cache folder (default: an empty one, so that the files are read)."""
    env = {**os.environ, "XDG_CACHE_HOME": cache or tempfile.mkdtemp(prefix="ctxfit-startup-cache-")}
    done = subprocess.run(
        [sys.executable, "-c", _RUN, *args],
        capture_output=True,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        timeout=120,
        env=env,
    )
    last = done.stderr.decode().rstrip("\n").rsplit("\n", 1)[-1]
    assert last.startswith("loaded: "), done.stderr.decode()
    return set(last.removeprefix("loaded: ").split())


def under(modules: set[str], packages: set[str]) -> set[str]:
    return {m for m in modules if m in packages or any(m.startswith(p + ".") for p in packages)}


def three_lines(tmp_path) -> str:
    path = tmp_path / "three.jsonl"
    path.write_bytes(b"".join((SAMPLES / "openai_agent.openai.jsonl").read_bytes().splitlines(keepends=True)[:3]))
    return str(path)


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["note"], ["--version"]])
def test_help_and_light_commands_load_no_library_reader_or_rich(args):
    assert under(loaded_by(*args), HEAVY_FOR_HELP) == set()


def test_a_command_s_own_help_loads_only_what_its_options_name():
    # `estimate --help` builds estimate's options, not replay's; replay's lists the policies from
    # their names written out (tests/test_money.py checks them against the policies).
    assert under(loaded_by("estimate", "--help"), {"ctxfit_cli.replay.policies", "rich", "orjson"}) == set()
    assert "ctxfit_cli.replay.policies" not in loaded_by("replay", "--help")


def test_estimate_of_a_small_file_loads_only_what_it_uses(tmp_path):
    modules = loaded_by("estimate", three_lines(tmp_path))
    assert "ctxfit_cli.core.estimate" in modules and "rich.table" in modules  # it did the work
    assert under(modules, UNUSED_BY_ESTIMATE) == set()


@pytest.mark.parametrize("args", [[], ["--profile", "seed"], ["--json"]], ids=["its model's profile", "seed", "json"])
def test_estimate_of_the_claude_code_sample_counts_without_numpy(args):
    # Its calibrated profile counts 0.2 M characters: less than numpy's import would save
    # (issue #24: 58 ms and its BLAS threads, on every Claude Code log).
    modules = loaded_by("estimate", *args, str(SAMPLES / "claude_code_session.jsonl"))
    assert "ctxfit_cli.counters.profiles" in modules  # it did count with a profile
    assert under(modules, {"numpy", "ctxfit_cli.counters.calibrate"}) == set()


def test_a_big_text_is_counted_with_numpy_once_its_import_pays():
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            """
import sys
from ctxfit_cli.counters import char_classes as cc
cc.class_counts("short text, мир " * 100)
before = "numpy" in sys.modules
long = "long text, мир " * (cc.NUMPY_AFTER_CHARS // 15 + 1)
vector = cc.class_counts(long)
print(before, "numpy" in sys.modules, vector == cc._class_counts_python(long))
""",
        ],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.stdout.split() == [b"False", b"True", b"True"], done.stderr


def test_version_reads_no_package_metadata():
    assert under(loaded_by("--version"), {"importlib.metadata", "email", "zipfile"}) == set()


def test_estimate_json_loads_no_rich(tmp_path):
    chat = tmp_path / "chat.jsonl"  # nothing to repair, so nothing to say on stderr
    chat.write_bytes(b'{"role":"user","content":"hi"}\n{"role":"assistant","content":"hello"}\n')
    modules = loaded_by("estimate", "--json", str(chat))
    assert "orjson" in modules and under(modules, {"rich"}) == set()


def test_the_help_shows_fit_options_own_defaults():
    from ctxfit_cli.core.fitting import FitOptions

    defaults = {f.name: f.default for f in dataclasses.fields(FitOptions)}
    assert {name: defaults[name] for name in vars(DEFAULTS)} == vars(DEFAULTS)
    shown = CliRunner().invoke(app, ["fit", "--help"], terminal_width=200).stdout
    for name, value in vars(DEFAULTS).items():
        if name != "window":  # (its help names the default in words: the log's model decides)
            assert f"[default: {value};" in shown, name


# --- the group that builds a command only when it is used -----------------------------------

EVERY = [
    [],
    ["--help"],
    ["--version"],
    ["estimat"],
    ["nope"],
    ["fit", "--hlep"],
    ["note"],
    ["--show-completion", "bash"],
] + [[c.name or c.callback.__name__.removesuffix("_command"), "--help"] for c in app.registered_commands]


def invoke(group, args: list[str]):
    """CliRunner's run of `group` (it builds Typer's own group from the app unless told)."""
    with mock.patch("typer.testing._get_command", lambda _: group):
        return CliRunner().invoke(app, args, prog_name="ctxfit")


@pytest.mark.parametrize("args", EVERY, ids=" ".join)
def test_built_on_demand_the_group_prints_what_typer_s_own_group_prints(args):
    eager = CliRunner().invoke(app, args, prog_name="ctxfit")
    on_demand = invoke(app.on_demand(), args)
    assert (on_demand.stdout, on_demand.stderr, on_demand.exit_code) == (eager.stdout, eager.stderr, eager.exit_code)
    assert eager.exit_code in (0, 2), eager.output


def test_the_group_builds_only_the_command_it_runs():
    group = app.on_demand()
    assert list(group.commands) == [name for name in get_command(app).commands]  # same order
    assert all(not command.params for command in group.commands.values())  # summaries only
    assert invoke(group, ["note", "--json"]).exit_code == 0
    built = [name for name, command in group.commands.items() if command.params]
    assert built == ["note"]


#: What a `sessions` run whose every file the cache holds has no use for (issue #36): no reader,
#: no counter, no numpy, no policy, no worker process.
UNUSED_BY_A_WARM_SESSIONS = {
    "ctxfit_cli.formats",
    "ctxfit_cli.core.model",
    "ctxfit_cli.core.choice",
    "ctxfit_cli.counters.profiles",
    "ctxfit_cli.counters.tokenizers",
    "ctxfit_cli.counters.char_classes",
    "ctxfit_cli.fleet.meta",
    "ctxfit_cli.fleet.spend",
    "ctxfit_cli.replay.policies",
    "ctxfit_cli.core.fitting",
    "numpy",
    "tiktoken",
    "pickle",
    "concurrent.futures.process",
    "multiprocessing",
    "rich",
}


def test_sessions_over_files_the_cache_holds_loads_no_reader_counter_or_numpy(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    for name in ("claude_code_session.jsonl", "codex_rollout.jsonl", "openai_agent.openai.jsonl"):
        if (SAMPLES / name).exists():
            (folder / name).write_bytes((SAMPLES / name).read_bytes())
    cache = str(tmp_path / "cache")
    cold = loaded_by("sessions", "--json", "--jobs", "1", str(folder), cache=cache)  # read here
    assert {"ctxfit_cli.formats", "ctxfit_cli.counters.profiles"} <= cold  # the files were read
    warm = loaded_by("sessions", "--json", str(folder), cache=cache)
    assert under(warm, UNUSED_BY_A_WARM_SESSIONS) == set()
    assert "ctxfit_cli.fleet.summary_cache" in warm


def test_the_agents_registry_is_light():
    """Every agent's declaration (folders, file names, recognition) is known without a reader
    loaded: a warm `sessions` walks the agents' folders from it."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, ctxfit_cli.agents; print(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    heavy = {m for m in loaded if m.startswith(("ctxfit_cli.formats", "ctxfit_cli.core", "ctxfit_cli.counters"))}
    assert heavy == set()
    assert "numpy" not in loaded
