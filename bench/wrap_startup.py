"""Codex CLI's start-up through `ctxfit wrap codex` against running it directly (issue #33 item 3).

    python bench/wrap_startup.py [--runs 7] [--agents-bin DIR] [--against DIR] [--no-write]

What is timed: from launching the command to the agent's first model request (`POST
/v1/responses`) reaching a loopback provider (`tests/scripted_provider.py`, which stamps each
request's arrival). Direct: `codex exec … -c openai_base_url=http://127.0.0.1:PORT/v1 "say hi"`;
wrapped: `python -m ctxfit_cli wrap codex -u http://127.0.0.1:PORT -- exec … "say hi"`, so the
request crosses the proxy (which waits for its fitting worker) on its way. Each run gets a
throwaway HOME, `OPENAI_API_KEY=x`; the two are interleaved, so noise on the shared machine hits
both alike, and the report gives the medians and their difference (target: ≤ 0.5 s).

Floors, measured the same way (median wall time of a process that does only that): the
interpreter (`python -c pass`), `import aiohttp.web` (what any aiohttp proxy loads before it can
answer), and the proxy's own imports before it serves (`import ctxfit_cli.serve.running`), and
the fitting worker's (`import ctxfit_cli.serve.worker`).

Bytecode: the Python children run with a private `PYTHONPYCACHEPREFIX` they may write, so after
the warm-up run ctxfit's modules load from bytecode, as on any install after its first run (this
machine's sessions set `PYTHONDONTWRITEBYTECODE` and the checkout has no `__pycache__`: every
process would compile ctxfit's sources again, ~0.1-0.2 s each for the proxy and its worker);
`--compile` keeps that, for comparison.

`--against DIR` adds, interleaved with the others, wrap as another checkout of ctxfit runs it
(e.g. an earlier revision: `git archive REV | tar -x -C DIR`), for a before/after under the same
load.

Codex is `$CTXFIT_AGENTS_BIN/codex` (default /tmp/agents/node_modules/.bin/codex: Codex CLI
0.171.0 there).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import orjson

import _common as c

TARGET = 0.5
CODEX_ARGS = [
    "exec",
    "--skip-git-repo-check",
    "--dangerously-bypass-approvals-and-sandbox",
    "-c",
    "check_for_update_on_startup=false",
]
PROMPT = "say hi"
FLOORS = {
    "python -c pass": "pass",
    "import aiohttp.web": "import aiohttp.web",
    "the proxy's imports (serve.running)": "import ctxfit_cli.serve.running",
    "the worker's imports (serve.worker)": "import ctxfit_cli.serve.worker",
}


class Provider:
    """The scripted provider, recording each request's arrival."""

    def __init__(self, folder: Path) -> None:
        self.record = folder / "record.jsonl"
        script = c.ROOT / "tests" / "scripted_provider.py"
        self.process = subprocess.Popen(
            [c.PYTHON, str(script), "--files", str(script), "--record", str(self.record)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()

    def first_request_after(self, started: float) -> float | None:
        """Seconds from `started` to the first `POST /v1/responses` that arrived after it."""
        if not self.record.exists():
            return None
        for line in self.record.read_bytes().splitlines():
            entry = orjson.loads(line)
            if entry["method"] == "POST" and entry["path"] == "/v1/responses" and entry["at"] >= started - 0.0005:
                return entry["at"] - started
        return None

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


def run_codex(argv: list[str], provider: Provider, env: dict[str, str]) -> float:
    """Run one command (codex, or wrap around it) to its end: its start-up, in seconds."""
    home = tempfile.mkdtemp(prefix="ctxfit-wrap-startup-")
    try:
        run_env = {**env, "HOME": home, "XDG_STATE_HOME": f"{home}/.state", "OPENAI_API_KEY": "x"}
        started = time.time()
        done = subprocess.run(argv, env=run_env, cwd=home, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
        took = provider.first_request_after(started)
        if took is None:
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-5:]
            raise SystemExit(f"no model request reached the provider from {argv[:4]}…: {' / '.join(tail)}")
        return took
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True)
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--agents-bin", default=os.environ.get("CTXFIT_AGENTS_BIN", "/tmp/agents/node_modules/.bin"))
    ap.add_argument("--against", type=Path, help="another ctxfit checkout whose wrap is timed too")
    ap.add_argument("--compile", action="store_true", help="keep the environment's bytecode settings")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md as it is")
    args = ap.parse_args()
    codex = str(Path(args.agents_bin) / "codex")
    if not Path(codex).exists():
        raise SystemExit(f"{codex}: not found (install @openai/codex there, or give --agents-bin)")
    env = {**os.environ, "PYTHONPATH": str(c.ROOT), "NO_COLOR": "1"}
    env["PATH"] = f"{args.agents_bin}{os.pathsep}{env.get('PATH', '')}"
    with tempfile.TemporaryDirectory(prefix="ctxfit-wrap-startup-") as folder:
        if not args.compile:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(folder) / "pycache")
        provider = Provider(Path(folder))
        try:
            direct_argv = [codex, *CODEX_ARGS, "-c", f"openai_base_url={provider.url}/v1", PROMPT]
            wrap_argv = [c.PYTHON, "-m", "ctxfit_cli", "wrap", "codex", "-u", provider.url, "--"]
            wrap_argv += [*CODEX_ARGS, PROMPT]
            run_codex(direct_argv, provider, env)  # warm-up: node's and Python's caches
            run_codex(wrap_argv, provider, env)
            against_env = {**env, "PYTHONPATH": str(args.against)} if args.against else None
            if against_env:
                run_codex(wrap_argv, provider, against_env)
            direct, wrapped, against = [], [], []
            floors: dict[str, list[float]] = {name: [] for name in FLOORS}
            for _ in range(args.runs):
                direct.append(run_codex(direct_argv, provider, env))
                wrapped.append(run_codex(wrap_argv, provider, env))
                if against_env:
                    against.append(run_codex(wrap_argv, provider, against_env))
                for name, code in FLOORS.items():
                    floors[name].append(_timed([c.PYTHON, "-c", code], env))
        finally:
            provider.stop()
    d, w = c.median(direct), c.median(wrapped)
    rows = [
        ["codex directly", c.fmt_s(d), ""],
        ["through `ctxfit wrap codex`", c.fmt_s(w), f"+{w - d:.2f} s"],
    ]
    if against:
        a = c.median(against)
        rows.append([f"through wrap, ctxfit at {args.against}", c.fmt_s(a), f"+{a - d:.2f} s"])
    rows += [[f"floor: {name}", c.fmt_s(c.median(times)), ""] for name, times in floors.items()]
    results = c.table(["start-up (launch to first model request)", f"median of {args.runs}", "difference"], rows)
    print(results)
    bytecode = "compiled at each start" if args.compile else "from bytecode"
    print(f"ctxfit's modules {bytecode}")
    print(f"difference: {w - d:.2f} s (target ≤ {TARGET} s) {c.verdict(w - d <= TARGET)}")
    if args.no_write:
        return
    what = (
        "Codex CLI 0.171's start-up with and without `ctxfit wrap`: from launching the command to its "
        "first `POST /v1/responses` reaching a loopback provider (`tests/scripted_provider.py`), each "
        "run in a throwaway HOME, the two interleaved, ctxfit's modules "
        f"{bytecode}. The floors are processes that only import."
    )
    targets = f"Target (issue #33): wrapped ≤ direct + {TARGET} s: {c.verdict(w - d <= TARGET)} (+{w - d:.2f} s)."
    c.write_section("wrap-startup", c.section("Codex start-up through wrap", what, c.command_line(), results, targets))


if __name__ == "__main__":
    main()
