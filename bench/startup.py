"""Start-up time: `ctxfit --help` and `ctxfit estimate` on a 3-line file, against the floor.

    python bench/startup.py [--runs 31]

The floor is what no Typer CLI can go below: `python -c "import typer"` (and bare `python -c
pass`). Each command runs `--runs` times, interleaved with the others so that noise on the shared
machine hits all alike; the report gives the median wall time and the median CPU time (user +
system, from `wait4`: less sensitive to other processes on a busy machine). Target (issue #10):
0.12 s median for both commands. Also `-t o200k` twice in a row: its vocabulary is verified once
per file and remembered.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

import _common as c

TARGET = 0.12


def timed(argv: list[str], env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(argv)} failed")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=31)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ctxfit-startup-"))
    three = folder / "three.jsonl"
    three.write_bytes(b"".join((c.ROOT / "sample_transcripts" / "openai_agent.openai.jsonl").read_bytes()
                               .splitlines(keepends=True)[:3]))
    ctxfit = [c.PYTHON, "-m", "ctxfit_cli"]
    commands = {
        "python -c pass": [c.PYTHON, "-c", "pass"],
        'python -c "import typer" (floor)': [c.PYTHON, "-c", "import typer"],
        "ctxfit --help": [*ctxfit, "--help"],
        "ctxfit estimate three.jsonl": [*ctxfit, "estimate", str(three)],
    }
    for argv in commands.values():  # warm the page cache and .pyc files
        timed(argv)
    walls = {name: [] for name in commands}
    cpus = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, argv in commands.items():
            wall, cpu = timed(argv)
            walls[name].append(wall)
            cpus[name].append(cpu)
    floor = c.median(walls['python -c "import typer" (floor)'])
    rows = [[name, c.fmt_s(c.median(walls[name])), c.fmt_s(c.median(cpus[name])),
             f"{c.median(walls[name]) / floor:.2f}×"] for name in commands]
    o200k = _o200k_twice(ctxfit, three, folder)
    results = (c.table(["command", "median wall", "median CPU", "vs floor (wall)"], rows)
               + f"\n\n`-t o200k`, vocabulary check: first run (nothing remembered) {c.fmt_s(o200k[0])}, "
                 f"next run (remembered) {c.fmt_s(o200k[1])}.")
    ok = all(c.median(walls[n]) <= TARGET for n in ("ctxfit --help", "ctxfit estimate three.jsonl"))
    targets = (f"Target: at most {TARGET} s median for `ctxfit --help` and `ctxfit estimate` on a 3-line "
               f"file: {c.verdict(ok)}. The floor (Typer's own import) is {c.fmt_s(floor)} here.")
    body = c.section("Start-up", "Median of interleaved runs; CPU time is user + system of the child.",
                     f"python bench/startup.py --runs {args.runs}", results, targets)
    c.write_section("startup", body)
    print(body)


def _o200k_twice(ctxfit: list[str], three: Path, folder: Path) -> tuple[float, float]:
    """Wall time of `estimate -t o200k` with an empty vocabulary cache, then with it filled."""
    env = {**os.environ, "XDG_CACHE_HOME": str(folder / "cache")}
    argv = [*ctxfit, "estimate", "-t", "o200k", str(three)]
    try:
        return timed(argv, env)[0], c.median([timed(argv, env)[0] for _ in range(3)])
    except RuntimeError:
        return float("nan"), float("nan")


if __name__ == "__main__":
    main()
