"""Many small logs: files per second for --jobs 1, --jobs 2 and the Ray engine, and how the time
grows from 1,000 to 10,000 logs.

    python bench/fleet.py [--sizes 1000,2000,5000,10000] [--repeat 3] [--command estimate] [--no-doc]

Generated agent logs (Anthropic JSON Lines: an instruction, then 2-9 model calls with a tool
result of 150-900 characters of mixed-script text; 2-8 KB a file) in one directory. Timed: the
real `ctxfit COMMAND DIR --json` end to end in a subprocess (start-up, discovery, reading,
combining, writing JSON), so the figures are what a user waits for. The three engines run side by
side at every size, interleaved, and their JSON outputs must be byte-identical (the run stops
otherwise). Ray joins the cluster at RAY_ADDRESS, or the one `ray start --head` made on this
machine, or starts a local one (its start-up is then part of the time; the summary says which).

The box is small and shared (2 cores): keep --repeat low; medians are reported.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from random import Random

import _common as c

ENGINES = {"--jobs 1": ["--jobs", "1"], "--jobs 2": ["--jobs", "2"], "--engine ray": ["--engine", "ray"]}


def write_logs(folder: Path, count: int, seed: int = 7) -> int:
    """`count` logs in `folder`; their total size in bytes."""
    maker = c.HistoryMaker(result_chars=(150, 900), pool=97, seed=seed)
    rng = Random(seed)
    total = 0
    for i in range(count):
        data = b"\n".join(maker.lines(rng.randint(2, 9), system=rng.random() < 0.5)) + b"\n"
        (folder / f"agent_{i:05d}.anthropic.jsonl").write_bytes(data)
        total += len(data)
    return total


def run(command: str, folder: Path, engine: list[str]) -> tuple[float, bytes]:
    argv = [c.PYTHON, "-m", "ctxfit_cli", command, str(folder), "--json", *engine]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-1500:]}")
    return seconds, done.stdout


def ray_cluster() -> str:
    """Which Ray cluster the engine will use (said in the report)."""
    if os.environ.get("RAY_ADDRESS"):
        return f"the cluster at RAY_ADDRESS ({os.environ['RAY_ADDRESS']})"
    if Path(tempfile.gettempdir(), "ray", "ray_current_cluster").exists():
        return "the local cluster `ray start --head` made (start-up not timed)"
    return "a local cluster Ray starts for each run (its start-up is timed)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,2000,5000,10000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--command", default="estimate", choices=("estimate", "replay", "sessions"))
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    engines = [e.strip() for e in args.engines.split(",")]
    root = Path(tempfile.mkdtemp(prefix="ctxfit-fleet-"))
    times: dict[tuple[str, int], list[float]] = {}
    volume = {}
    try:
        for size in sizes:
            folder = root / f"logs_{size}"
            folder.mkdir()
            volume[size] = write_logs(folder, size)
            print(f"{size:,} logs, {volume[size] / 1e6:.1f} MB", flush=True)
            for rep in range(args.repeat):
                outputs = {}
                for engine in engines:
                    seconds, outputs[engine] = run(args.command, folder, ENGINES[engine])
                    times.setdefault((engine, size), []).append(seconds)
                    print(f"  {engine:13} run {rep + 1}: {seconds:6.2f} s  {size / seconds:7.0f} files/s", flush=True)
                first = outputs[engines[0]]
                different = [e for e in engines if outputs[e] != first]
                if different:
                    raise SystemExit(f"{', '.join(different)} gave other results than {engines[0]} at {size:,} logs")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report(args, sizes, engines, times, volume)


def report(args, sizes: list[int], engines: list[str], times: dict, volume: dict) -> None:
    medians = {key: c.median(values) for key, values in times.items()}
    rows = []
    for size in sizes:
        row = [f"{size:,}", f"{volume[size] / 1e6:.1f}"]
        for engine in engines:
            seconds = medians[(engine, size)]
            row.append(f"{seconds:.2f} s · {size / seconds:,.0f}/s")
        rows.append(row)
    growth = []
    for engine in engines:
        first, last = medians[(engine, sizes[0])], medians[(engine, sizes[-1])]
        growth.append(f"{engine}: {last / first:.2f}× the time for {sizes[-1] / sizes[0]:.0f}× the logs")
    results = (c.table(["logs", "MB", *engines], rows)
               + f"\n\nMedian of {args.repeat} runs each, the engines interleaved; every run's JSON was "
                 f"byte-identical across engines. Ray: {ray_cluster()}.\n\nGrowth {sizes[0]:,} → "
                 f"{sizes[-1]:,} logs: " + "; ".join(growth) + ".")
    print(results)
    if args.no_doc:
        return
    command = f"python bench/fleet.py --sizes {args.sizes} --repeat {args.repeat} --command {args.command}"
    c.write_section("fleet", c.section(
        "Many logs: --jobs and the Ray engine (bench/fleet.py)",
        f"`ctxfit {args.command} DIR --json` over a directory of generated agent logs (2-9 model calls "
        "each, 2-8 KB), end to end in a subprocess: start-up, discovery, reading, combining, JSON.",
        command, results,
        "What to read from it: files per second per engine, and whether time grows linearly with "
        "the number of logs. On this 2-core shared machine the Ray engine pays its task and "
        "serialization overhead without more cores to spread over; on a cluster the same run "
        "spreads over every node's cores (docs/fleet.md)."))


if __name__ == "__main__":
    main()
