"""A gigabyte transcript end to end: `ctxfit estimate` and `ctxfit fit` against a bare JSON parse.

    python bench/big_file.py [--size-mb 1000] [--small-mb 250] [--formats anthropic,claude-code,codex]
                             [--repeat 3] [--keep] [--no-doc]

Generates, for each of --formats, a transcript in /tmp at --size-mb and at --small-mb. `anthropic`:
an Anthropic Messages transcript (one message per line: one user instruction, then rounds of
assistant `tool_use` + user `tool_result`, every call answered, results of 2-20 KB of mixed Russian
/ Chinese / Japanese / English / code text). `claude-code` and `codex`: a Claude Code session log
and a Codex rollout of a coding session (`bench/agent_logs.py`, kind `mixed`: the same text, one
record per content block, usage recorded), which `estimate` reads with its model's profile.
Then, for each file, side by side and interleaved, each run as its own process:

- bare parse: `for line in open(path, 'rb'): orjson.loads(line)`, the floor of reading the file;
- `ctxfit estimate --json PATH`, end to end (streams the file, on every core);
- `ctxfit fit PATH --budget 400000 -o /tmp/out.json`, end to end (reads the file on every core in
  outline — estimates, ids and names, no text — then reads again in full what it sends).

Wall time and peak RSS (the child's own, from `wait4`) are medians of the runs.
Targets: estimate ≤ 2× bare parse and peak RSS ≤ 200 MB at any size (the small size shows it does
not grow); fit ≤ 3× bare parse (its memory is reported: no target). The time targets are the
issue's, for the 1 GB file; the smaller file is shown too (start-up weighs more there).

Then, to show where the time goes, the work of one process on the first 100 MB, stage by stage,
each stage doing everything the one before did and one thing more (medians of 3, in one child
process). ctxfit reads files through a 1 MB buffer: that alone makes reading lines several times
faster than the default 8 KB buffer the bare parse uses, so both are shown.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path
from random import Random

import orjson

import _common as c

CTXFIT = str(Path(c.PYTHON).with_name("ctxfit"))
BARE = ("import orjson, sys\n"
        "for line in open(sys.argv[1], 'rb'):\n"
        "    orjson.loads(line)\n")
OUT = f"/tmp/ctxfit-bench-{os.getpid()}-out.json"  # per process: concurrent runs never clash
TOOLS = ("read_file", "grep", "run_tests", "list_dir", "web_fetch")


def generate(path: str, size_bytes: int, seed: int = 7) -> tuple[int, int]:
    """Write a valid transcript of about `size_bytes`; returns (bytes, rounds).

    Fast: a pool of pre-serialized results and assistant lines, stitched with fresh ids.
    """
    rng = Random(seed)
    # ~1.53 bytes of UTF-8 per character; JSON escaping of the code adds a little.
    results = [orjson.dumps(c.mixed_text(rng.randint(1_300, 13_000), seed=f"result{i}")) for i in range(97)]
    texts = [orjson.dumps(c.mixed_text(rng.randint(40, 400), seed=f"say{i}")) for i in range(13)]
    instruction = {"role": "user", "content": "Read every chapter under docs/ and write a summary of each one. "
                                              + c.mixed_text(600, seed="instruction")}
    written = rounds = 0
    with open(path, "wb", buffering=1 << 22) as f:
        line = orjson.dumps(instruction) + b"\n"
        f.write(line)
        written += len(line)
        batch: list[bytes] = []
        while written < size_bytes:
            call_id = b"toolu_%012d" % rounds
            tool = TOOLS[rounds % len(TOOLS)].encode()
            assistant = (b'{"role":"assistant","content":[{"type":"text","text":' + texts[rounds % 13]
                         + b'},{"type":"tool_use","id":"' + call_id + b'","name":"' + tool
                         + b'","input":{"path":"docs/chapter_%d.md"}}]}\n' % rounds)
            result = (b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"' + call_id
                      + b'","content":' + results[(rounds * 31) % 97] + b"}]}\n")
            batch += (assistant, result)
            written += len(assistant) + len(result)
            rounds += 1
            if len(batch) >= 2000:
                f.write(b"".join(batch))
                batch.clear()
        f.write(b"".join(batch))
    return written, rounds


#: ~4.3 bytes of log per token of the `mixed` agent logs (bench/agent_logs.py sizes them in tokens).
LOG_BYTES_PER_TOKEN = 4.3


def generate_format(format: str, path: str, size_bytes: int) -> tuple[int, int]:
    """Write a file of `format` of about `size_bytes`; returns (bytes, messages)."""
    if format == "anthropic":
        written, rounds = generate(path, size_bytes)
        return written, 2 * rounds + 1
    import agent_logs
    out = Path(path).parent / f"{Path(path).stem}-dir"
    made = agent_logs.write("mixed", int(size_bytes / LOG_BYTES_PER_TOKEN), format, out)
    made.replace(path)
    out.rmdir()
    with open(path, "rb") as f:
        lines = sum(1 for _ in f)
    return os.path.getsize(path), lines


def measure(path: str, repeat: int) -> dict[str, tuple[float, float, int]]:
    """name -> (median wall seconds, median CPU seconds, median peak RSS bytes), interleaved runs."""
    commands = {
        "bare parse (orjson per line)": [c.PYTHON, "-c", BARE, path],
        "ctxfit estimate --json": [CTXFIT, "estimate", "--json", path],
        "ctxfit fit --budget 400000 -o": [CTXFIT, "fit", path, "--budget", "400000", "-o", OUT],
    }
    runs: dict[str, list[tuple[float, float, int]]] = {k: [] for k in commands}
    for i in range(repeat):
        for name, argv in commands.items():
            runs[name].append(run_timed(argv))
            seconds, cpu, rss = runs[name][-1]
            print(f"  run {i + 1}/{repeat}: {name:32s} {seconds:7.2f} s wall {cpu:7.2f} s CPU  "
                  f"peak RSS {c.fmt_mb(rss)}", flush=True)
    return {k: tuple(c.median([r[j] for r in v]) for j in range(3)) for k, v in runs.items()}


def run_timed(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS bytes) of one child run to completion."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    err = child.stderr.read().decode("utf-8", "replace")
    child.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


STAGES = """
import json, statistics, sys, time
import orjson
from ctxfit_cli.core.estimate import TranscriptEstimate, message_cost
from ctxfit_cli.formats import PARSERS
from ctxfit_cli.formats.common import Where
from ctxfit_cli.formats.reading import BUFFER, numbered_lines, parse_line

path = sys.argv[1]
parse = PARSERS["anthropic"]

def lines(buffering=BUFFER):
    with open(path, "rb", buffering=buffering) as file:
        yield from numbered_lines(path, file)

def messages():
    for number, line in lines():
        yield parse(parse_line(path, number, line), line, Where(path, number))

def report():
    estimate = TranscriptEstimate(path, "anthropic", top_n=5)
    for message in messages():
        estimate.add(message)

stages = {
    "read lines, default 8 KB buffer": lambda: [0 for _ in open(path, "rb")],
    "read lines (1 MB buffer, as ctxfit does)": lambda: [0 for _ in lines()],
    "+ orjson.loads each line": lambda: [orjson.loads(line) for _, line in lines()],
    "+ parse into messages (the transcript model)": lambda: [0 for _ in messages()],
    "+ estimate each message (seed rule)": lambda: [message_cost(m) for m in messages()],
    "+ add up the report = one process's estimate": report,
}
times = {name: [] for name in stages}
for _ in range(3):
    for name, stage in stages.items():
        start = time.perf_counter()
        stage()
        times[name].append(time.perf_counter() - start)
print(json.dumps({name: statistics.median(t) for name, t in times.items()}))
"""


def stages(path: str, size_bytes: int) -> dict[str, float]:
    """Median seconds of each stage on the first `size_bytes` of `path`, in one child process."""
    head = path + ".head"
    with open(path, "rb") as source, open(head, "wb") as target:
        for line in source:
            target.write(line)
            if target.tell() >= size_bytes:
                break
    try:
        out = subprocess.run([c.PYTHON, "-c", STAGES, head], capture_output=True, check=True, cwd=c.ROOT)
    finally:
        os.remove(head)
    return orjson.loads(out.stdout)


def stage_table(times: dict[str, float]) -> str:
    """The first row (the default buffer) stands alone; each later one adds to the one before."""
    (first, *chain), total = list(times), list(times.values())[-1]
    rows, previous = [[first, c.fmt_s(times[first]), "", ""]], 0.0
    for name in chain:
        step = times[name] - previous
        rows.append([name, c.fmt_s(times[name]), c.fmt_s(step), f"{step / total:.0%}"])
        previous = times[name]
    return c.table(["stage (cumulative)", "median", "this stage", "share"], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=1000.0, help="size of the big files (MB)")
    ap.add_argument("--small-mb", type=float, default=250.0, help="size of the smaller ones (0: skip)")
    ap.add_argument("--formats", default="anthropic,claude-code,codex", help="comma-separated: " + ", ".join(FORMATS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the generated files in /tmp")
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    args = ap.parse_args()

    sizes = [s for s in (args.small_mb, args.size_mb) if s > 0]
    formats = args.formats.split(",")
    files, results = [], {}
    stage_times = None
    try:
        for format in formats:
            for mb in sizes:
                path = f"/tmp/ctxfit-bench-{os.getpid()}-{format}-{mb:g}mb.jsonl"
                files.append(path)
                t0 = time.perf_counter()
                size, messages = generate_format(format, path, int(mb * 1e6))
                print(f"{path}: {size / 1e6:,.0f} MB, {messages:,} lines, "
                      f"generated in {time.perf_counter() - t0:.1f} s", flush=True)
                # Every contender reads the file from the page cache: read it once before timing.
                with open(path, "rb") as f:
                    while f.read(1 << 24):
                        pass
                results[format, mb] = (size, messages, measure(path, args.repeat))
            if format == "anthropic":
                print("where the time goes (one process, first 100 MB):", flush=True)
                stage_times = stages(files[-1], 100_000_000)
                print(stage_table(stage_times))
    finally:
        if not args.keep:
            for path in files + [OUT]:
                if os.path.exists(path):
                    os.remove(path)

    rows, lines, targets = [], [], []
    load = os.getloadavg()[0]
    for (format, _mb), (size, _lines, m) in results.items():
        bare_s, bare_cpu, _ = m["bare parse (orjson per line)"]
        for name, (seconds, cpu, rss) in m.items():
            rows.append([format, f"{size / 1e6:,.0f} MB", name, c.fmt_s(seconds), f"{seconds / bare_s:.2f}×",
                         c.fmt_s(cpu), f"{cpu / bare_cpu:.2f}×", c.fmt_mb(rss)])
        est_s, est_cpu, est_rss = m["ctxfit estimate --json"]
        fit_s, fit_cpu, fit_rss = m["ctxfit fit --budget 400000 -o"]
        lines.append(f"- {format}, {size / 1e6:,.0f} MB: estimate {est_s / bare_s:.2f}× bare parse wall "
                     f"({est_cpu / bare_cpu:.2f}× CPU), peak {c.fmt_mb(est_rss)}; fit {fit_s / bare_s:.2f}× wall "
                     f"({fit_cpu / bare_cpu:.2f}× CPU), peak {c.fmt_mb(fit_rss)}.")
        targets.append(f"- {format}, {size / 1e6:,.0f} MB: estimate ≤ 2× bare parse (CPU): {est_cpu / bare_cpu:.2f}× → "
                       f"{c.verdict(est_cpu / bare_cpu <= 2.0)}; peak ≤ 200 MB: {c.fmt_mb(est_rss)} → "
                       f"{c.verdict(est_rss <= 200e6)}; fit ≤ 3× (CPU): {fit_cpu / bare_cpu:.2f}× → "
                       f"{c.verdict(fit_cpu / bare_cpu <= 3.0)}, peak ≤ the file: {c.fmt_mb(fit_rss)} → "
                       f"{c.verdict(fit_rss <= size)}")
    t = c.table(["format", "file", "command", "median wall", "× bare parse", "median CPU", "× bare parse (CPU)",
                 "median peak RSS"], rows)
    print(f"medians of {args.repeat} runs, load average {load:.1f}")
    print(t)
    print("\n".join(lines))
    print("\n".join(targets).replace("**", ""))
    if args.no_doc:
        return
    results_md = (
        "Files: " + ", ".join(f"{f} {s / 1e6:,.0f} MB ({n:,} lines)" for (f, _), (s, n, _) in results.items())
        + f". Medians of {args.repeat} interleaved runs, each a separate process reading the file from the page "
        f"cache; CPU is the child's user + system time (wall time on a shared machine is disturbed more: load "
        f"average {load:.1f} when the runs ended).\n\n{t}\n\n" + "\n".join(lines)
    )
    if stage_times is not None:
        results_md += ("\n\nWhere the time goes: one process's work on the first 100 MB of the biggest Anthropic "
                       "file, stage by stage (medians of 3).\n\n" + stage_table(stage_times))
    c.write_section("big_file", c.section(
        "2. A big transcript end to end", __doc__.split("\n\n", 2)[2].strip(), c.command_line(),
        results_md, "**Targets** (issue #24):\n\n" + "\n".join(targets)))


FORMATS = ("anthropic", "claude-code", "codex")


if __name__ == "__main__":
    main()
