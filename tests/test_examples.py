"""The README's agent loops (examples/) run with the real SDKs against a fake provider on loopback,
and every request they send is valid and within the budget."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ctxfit_cli import count, validate_request
from servers import ROOT, fake_provider, recorded

BUDGET = 20_000
STEPS = 30


@pytest.mark.parametrize("example, dialect", [
    ("anthropic_loop.py", "anthropic"), ("openai_loop.py", "openai"), ("langchain_loop.py", "openai")])
def test_example_loop_sends_only_valid_requests_within_budget(tmp_path, example, dialect):
    record = tmp_path / "requests.jsonl"
    with fake_provider(record, steps=STEPS) as provider:
        env = {**os.environ, "ANTHROPIC_BASE_URL": provider.url, "OPENAI_BASE_URL": f"{provider.url}/v1",
               "ANTHROPIC_API_KEY": "test-key", "OPENAI_API_KEY": "test-key"}
        run = subprocess.run([sys.executable, str(ROOT / "examples" / example), "--budget", str(BUDGET)],
                             capture_output=True, cwd=ROOT, env=env, timeout=120)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    assert run.stdout.decode().strip() == f"Done: read {STEPS} files."
    requests = [r["body"] for r in recorded(record)]
    assert len(requests) == STEPS + 1
    for body in requests:
        assert validate_request(body, dialect) == []
        tokens = count(body["messages"], system=body.get("system"), tools=body.get("tools"), dialect=dialect)
        assert tokens <= BUDGET
    # The conversation grew far past the budget, so it really was fitted.
    assert "(clear)" in run.stderr.decode()
