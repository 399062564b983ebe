"""Read ccusage's own prices (the table its `--offline` mode ships) one token kind at a time.

For each model, four one-record Claude Code sessions are written, each billing `SIZE` tokens of
one kind only (uncached input, cache write, cache read, output); `ccusage claude session --json
--offline` prices them, and the cost of each is that kind's price. This is how the numbers of
`ctxfit_cli/replay/model_prices.json` were read (docs/cost.md). With `SIZE` over 200,000 the
long-context rates show (ccusage applies them to the tokens past 200,000 of each kind).

    CCUSAGE_DIR=/tmp/ccusage python bench/ccusage_prices.py claude-opus-4-6,gpt-5-codex [SIZE]

prints, per model, dollars per million tokens of each kind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

KINDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def write_probes(root: Path, models: list[str], size: int) -> None:
    folder = root / "projects" / "probe"
    folder.mkdir(parents=True)
    for model in models:
        for kind in KINDS:
            session = f"{model}__{kind}".replace("/", "_")
            usage = {k: (size if k == kind else 0) for k in KINDS}
            record = {"type": "assistant", "sessionId": session, "timestamp": "2026-02-01T00:00:00.000Z",
                      "cwd": "/probe", "version": "2.0.27", "requestId": f"r-{session}", "uuid": f"u-{session}",
                      "message": {"id": f"m-{session}", "role": "assistant", "model": model,
                                  "content": [{"type": "text", "text": "x"}], "usage": usage}}
            # Compact JSON, as Claude Code writes it (ccusage looks for `"type":"assistant"` as written).
            (folder / f"{session}.jsonl").write_text(json.dumps(record, separators=(",", ":")) + "\n")


def prices(ccusage: Path, models: list[str], size: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as root:
        write_probes(Path(root), models, size)
        env = {**os.environ, "CLAUDE_CONFIG_DIR": root, "HOME": root, "CODEX_HOME": str(Path(root) / "codex")}
        done = subprocess.run(["npx", "--no-install", "ccusage", "claude", "session", "--json", "--offline"],
                              cwd=ccusage, env=env, capture_output=True, text=True, check=True, timeout=300)
    found: dict[str, dict[str, float]] = {}
    for row in json.loads(done.stdout)["sessions"]:
        model, kind = row["sessionId"].rsplit("__", 1)
        found.setdefault(model, {})[kind] = round(row["totalCost"] / size * 1e6, 6)
    return found


def main() -> None:
    models = sys.argv[1].split(",")
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    for model, found in prices(Path(os.environ.get("CCUSAGE_DIR", ".")), models, size).items():
        print(model, json.dumps(found))


if __name__ == "__main__":
    main()
