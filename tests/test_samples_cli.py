"""Every bundled sample through the real commands, with byte-exact golden outputs.

Regenerate the golden files only on purpose: `python -m pytest tests/test_samples_cli.py --update-golden`.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ctxfit_cli.core.validate import validate_request
from conftest import SAMPLES, run_cli

GOLDEN = Path(__file__).parent / "golden"
SAMPLE_FILES = sorted(p.name for p in SAMPLES.glob("*.json*"))
DIALECT = {"openai_agent.openai.jsonl": "openai", "codex_rollout.jsonl": "openai"}


def compare_golden(name: str, data: bytes, update: bool) -> None:
    path = GOLDEN / name
    if update:
        GOLDEN.mkdir(exist_ok=True)
        path.write_bytes(data)
    assert path.exists(), f"no golden file {path.name}: run with --update-golden"
    assert data == path.read_bytes(), f"{path.name} changed; if that is intended, run with --update-golden"


def test_every_format_is_among_the_samples():
    formats = {orjson.loads(run_cli("estimate", "--json", str(SAMPLES / f)).stdout)["files"][0]["format"]
               for f in SAMPLE_FILES}
    assert formats == {"openai", "anthropic", "claude-code", "codex", "request"}


@pytest.mark.parametrize("sample", SAMPLE_FILES)
def test_estimate_json_of_every_sample_has_the_schema_and_is_stable(sample, update_golden):
    done = run_cli("estimate", "--json", f"sample_transcripts/{sample}")
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    for entry in (*report["files"], report["total"]):
        assert {"messages", "tokens", "naive_tokens", "by_script", "by_kind"} <= set(entry)
        assert {"ascii", "cjk", "other"} == set(entry["by_script"])
        assert sum(entry["by_kind"].values()) == entry["tokens"]
    assert {"path", "format"} <= set(report["files"][0])
    compare_golden(f"{sample}.estimate.json", done.stdout, update_golden)


@pytest.mark.parametrize("sample", SAMPLE_FILES)
def test_fit_of_every_sample_is_valid_within_budget_and_stable(sample, update_golden):
    done = run_cli("fit", f"sample_transcripts/{sample}", "--budget", "20000")
    assert done.returncode == 0, done.stderr
    payload = orjson.loads(done.stdout)
    dialect = DIALECT.get(sample, "anthropic")
    assert validate_request(payload, dialect) == []
    [report] = orjson.loads(run_cli("fit", f"sample_transcripts/{sample}", "--budget", "20000", "--json").stdout)["reports"]
    assert report["tokens_sent"] <= 20_000 or report["overrun"]
    # The payload reads back at the part `fit` said it holds (the rest is what the agent adds).
    estimated = orjson.loads(run_cli("estimate", "--json", "-", input=done.stdout).stdout)
    assert estimated["files"][0]["tokens"] == report["tokens_in_payload"]
    compare_golden(f"{sample}.fit-20000.json", done.stdout, update_golden)


@pytest.mark.parametrize("sample", SAMPLE_FILES)
def test_replay_of_every_sample_through_standard_input(sample):
    data = (SAMPLES / sample).read_bytes()
    done = run_cli("replay", "-", "--budget", "20000", "--window", "60000", "--json", "--steps", input=data)
    assert done.returncode == 0, done.stderr
    document = orjson.loads(done.stdout)
    policies = document["policies"]
    assert policies["ctxfit"]["rejected"] == 0
    # Over the budget only when even the smallest request is (a log with recorded usage counts
    # its unlogged system prompt and tools too): DESIGN §4 sends that request.
    steps = document["files"][0]["policies"]["ctxfit"]["steps"]
    assert all(s["tokens"] <= 20_000 or s["stage"] == "rounds" for s in steps)
