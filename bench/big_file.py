"""A gigabyte transcript end to end: `ctxfit estimate`, `fit` and `replay` against a bare JSON parse.

    python bench/big_file.py [--size-mb 1000] [--small-mb 250] [--formats anthropic,claude-code,codex]
                             [--repeat 3] [--keep] [--no-doc]

Generates, for each of --formats, a transcript in /tmp at --size-mb and at --small-mb. `anthropic`:
an Anthropic Messages transcript (one message per line: one user instruction, then rounds of
assistant `tool_use` + user `tool_result`, every call answered, results of 2-20 KB of mixed Russian
/ Chinese / Japanese / English / code text). `claude-code` and `codex`: a Claude Code session log
and a Codex rollout of a coding session (`bench/agent_logs.py`, kind `mixed`: the same text, one
record per content block), with the model and each call's usage recorded as a real log records
them (`with_usage`), so each is read with its model's profile (Claude; o200k for gpt-5-codex).
Then, for each file, side by side and interleaved, each run as its own process:

- bare parse: `for line in open(path, 'rb'): orjson.loads(line)`, the floor of reading the file;
- `ctxfit estimate --json PATH`, end to end (a chat file: read on every core; a Claude Code log:
  read in pieces on every core, each merged, repaired and estimated by its own process,
  `fleet/log_pieces.py`; a Codex log: read by one process, its texts measured on every core,
  `formats/measures.py`);
- `ctxfit fit PATH --budget 400000 -o /tmp/out.json`, end to end (held in outline — estimates,
  ids and names, no text — then what it sends read again in full: `formats/parallel.py` for a
  chat file, `fleet/log_outline.py` for a log);
- `ctxfit replay --json PATH`, end to end (every policy, the history held in outline).

Wall time, CPU time (user + system, the workers' included) and peak RSS (the largest of the
process and its workers, from `wait4`) are medians of the runs. Targets (issue #24), judged on wall
time, the time a user waits: estimate ≤ 2× bare parse and peak RSS ≤ 200 MB; fit ≤ 3× bare parse
in memory ≤ the file's size; replay ≤ 3× estimate.

Then, for each log format, the floor of any reader of that log on this machine: one process on its
first 100 MB timing the bare parse, the reader's own work (records merged into messages), and
measuring every string of those messages with the log's counter (the strings collected first, so
only measuring is timed). Measuring has to be done once whoever does it: on N cores no estimate
can take less than (parse + measure) ÷ N of one core's time. And the Anthropic file's stages
(each doing everything the one before did and one thing more, medians of 3): ctxfit reads files
through a 1 MB buffer, which alone makes reading lines several times faster than the default 8 KB
buffer the bare parse uses, so both are shown.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path
from random import Random

import _common as c
import orjson

CTXFIT = str(Path(c.PYTHON).with_name("ctxfit"))
BARE = "import orjson, sys\nfor line in open(sys.argv[1], 'rb'):\n    orjson.loads(line)\n"
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
    instruction = {
        "role": "user",
        "content": "Read every chapter under docs/ and write a summary of each one. "
        + c.mixed_text(600, seed="instruction"),
    }
    written = rounds = 0
    with open(path, "wb", buffering=1 << 22) as f:
        line = orjson.dumps(instruction) + b"\n"
        f.write(line)
        written += len(line)
        batch: list[bytes] = []
        while written < size_bytes:
            call_id = b"toolu_%012d" % rounds
            tool = TOOLS[rounds % len(TOOLS)].encode()
            assistant = (
                b'{"role":"assistant","content":[{"type":"text","text":'
                + texts[rounds % 13]
                + b'},{"type":"tool_use","id":"'
                + call_id
                + b'","name":"'
                + tool
                + b'","input":{"path":"docs/chapter_%d.md"}}]}\n' % rounds
            )
            result = (
                b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"'
                + call_id
                + b'","content":'
                + results[(rounds * 31) % 97]
                + b"}]}\n"
            )
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
    lines = with_usage(str(made), path, format)
    os.remove(made)
    out.rmdir()
    return os.path.getsize(path), lines


def with_usage(source: str, path: str, format: str) -> int:
    """Copy a generated log to `path` with what a real one records besides its messages: the
    model and each call's usage (Claude Code: `message.usage` on every assistant record; Codex:
    a `turn_context` naming the model and a `token_count` event after each model response), so
    that `estimate` counts it with its model's profile and reads its usage, as it does a real
    log. The prompt sizes are those of the log so far (bytes ÷ 4): plausible, not exact.
    Returns the lines written."""
    written = lines = 0
    previous = b""
    with open(source, "rb") as src, open(path, "wb", buffering=1 << 22) as out:
        for line in src:
            extra: list[bytes] = []
            if format == "claude-code" and b'"type":"assistant"' in line[:400]:
                record = orjson.loads(line)
                record["message"]["usage"] = {
                    "input_tokens": 3,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": written // 4,
                    "output_tokens": 120,
                }
                line = orjson.dumps(record) + b"\n"
            elif format == "codex":
                reply = b'"type":"function_call"' in previous or b'"role":"assistant"' in previous
                if reply and b'"type":"function_call"' not in line[:200] and b'"role":"assistant"' not in line[:200]:
                    usage = {
                        "input_tokens": written // 4,
                        "cached_input_tokens": 0,
                        "output_tokens": 120,
                        "reasoning_output_tokens": 0,
                        "total_tokens": written // 4 + 120,
                    }
                    extra.append(
                        orjson.dumps(
                            {
                                "timestamp": "2026-03-16T10:04:11.000Z",
                                "type": "event_msg",
                                "payload": {
                                    "type": "token_count",
                                    "info": {
                                        "total_token_usage": {**usage, "total_tokens": written},
                                        "last_token_usage": usage,
                                        "model_context_window": 272000,
                                    },
                                },
                            }
                        )
                        + b"\n"
                    )
            out.write(b"".join(extra) + line)
            written += len(line) + sum(map(len, extra))
            lines += 1 + len(extra)
            if format == "codex" and b'"type":"session_meta"' in line[:200]:
                context = {
                    "timestamp": "2026-03-16T10:04:11.000Z",
                    "type": "turn_context",
                    "payload": {"cwd": "/work/project", "model": "gpt-5-codex"},
                }
                out.write(orjson.dumps(context) + b"\n")
                lines += 1
            previous = line[:200]
    return lines


def measure(path: str, repeat: int) -> dict[str, tuple[float, float, int]]:
    """name -> (median wall seconds, median CPU seconds, median peak RSS bytes), interleaved runs."""
    commands = {
        "bare parse (orjson per line)": [c.PYTHON, "-c", BARE, path],
        "ctxfit estimate --json": [CTXFIT, "estimate", "--json", path],
        "ctxfit fit --budget 400000 -o": [CTXFIT, "fit", path, "--budget", "400000", "-o", OUT],
        "ctxfit replay --json": [CTXFIT, "replay", "--json", path],
    }
    runs: dict[str, list[tuple[float, float, int]]] = {k: [] for k in commands}
    for i in range(repeat):
        for name, argv in commands.items():
            runs[name].append(run_timed(argv))
            seconds, cpu, rss = runs[name][-1]
            print(
                f"  run {i + 1}/{repeat}: {name:32s} {seconds:7.2f} s wall {cpu:7.2f} s CPU  peak RSS {c.fmt_mb(rss)}",
                flush=True,
            )
    return {k: tuple(c.median([r[j] for r in v]) for j in range(3)) for k, v in runs.items()}


def run_timed(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS bytes) of one child run to completion (exit code 0:
    a fit that exits 4 on these logs is a fault to mend, not a time to report)."""
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
from ctxfit_cli.core.costs import message_cost
from ctxfit_cli.core.estimate import TranscriptEstimate
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


FLOOR = """
import json, statistics, sys, time
import orjson
from ctxfit_cli.counters.models import counter_for_models
from ctxfit_cli.formats import read_transcripts

path = sys.argv[1]

def bare():
    for line in open(path, "rb"):
        orjson.loads(line)

def messages():
    with open(path, "rb") as file:
        for transcript in read_transcripts(path, file):
            yield from transcript.messages
            models[:] = [c.model for c in transcript.calls if c.model] or transcript.named_models

models = []
texts = [s for m in messages() for p in m.parts for s in (p.tool, p.text, p.call_id) if s]
counter = counter_for_models(models[:1])[0]
times = {"bare parse": [], "reader: records merged into messages": [], f"measure every string ({counter.name})": []}
for _ in range(3):
    for name, work in zip(times, (bare, lambda: [0 for _ in messages()], lambda: [counter.measure(s) for s in texts])):
        start = time.process_time()
        work()
        times[name].append(time.process_time() - start)
print(json.dumps({name: statistics.median(t) for name, t in times.items()}))
"""


def floor(path: str, size_bytes: int) -> dict[str, float]:
    """CPU seconds of the bare parse, the reader, and measuring, on the first `size_bytes` of a log."""
    return _on_head(FLOOR, path, size_bytes)


def floor_table(format: str, times: dict[str, float], cores: int) -> str:
    bare, reader, measure = times.values()
    rows = [[name, c.fmt_s(t), f"{t / bare:.2f}×"] for name, t in times.items()]
    rows.append(
        [
            f"floor on {cores} cores: (bare parse + measure) ÷ {cores}",
            c.fmt_s((bare + measure) / cores),
            f"{(bare + measure) / cores / bare:.2f}×",
        ]
    )
    return f"{format} (first 100 MB, CPU seconds, medians of 3):\n\n" + c.table(["work", "CPU", "× bare parse"], rows)


def _head(path: str, size_bytes: int) -> str:
    head = path + ".head"
    with open(path, "rb") as source, open(head, "wb") as target:
        for line in source:
            target.write(line)
            if target.tell() >= size_bytes:
                break
    return head


def stages(path: str, size_bytes: int) -> dict[str, float]:
    """Median seconds of each stage on the first `size_bytes` of `path`, in one child process."""
    return _on_head(STAGES, path, size_bytes)


def _on_head(script: str, path: str, size_bytes: int) -> dict[str, float]:
    """What `script` prints (JSON), run in a child process on the first `size_bytes` of `path`."""
    head = _head(path, size_bytes)
    try:
        out = subprocess.run([c.PYTHON, "-c", script, head], capture_output=True, check=True, cwd=c.ROOT)
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
    floors: dict[str, dict[str, float]] = {}
    try:
        for format in formats:
            for mb in sizes:
                path = f"/tmp/ctxfit-bench-{os.getpid()}-{format}-{mb:g}mb.jsonl"
                files.append(path)
                t0 = time.perf_counter()
                size, messages = generate_format(format, path, int(mb * 1e6))
                print(
                    f"{path}: {size / 1e6:,.0f} MB, {messages:,} lines, generated in {time.perf_counter() - t0:.1f} s",
                    flush=True,
                )
                # Every contender reads the file from the page cache: read it once before timing.
                with open(path, "rb") as f:
                    while f.read(1 << 24):
                        pass
                results[format, mb] = (size, messages, measure(path, args.repeat))
            if format == "anthropic":
                print("where the time goes (one process, first 100 MB):", flush=True)
                stage_times = stages(files[-1], 100_000_000)
                print(stage_table(stage_times))
            else:
                floors[format] = floor(files[-1], 100_000_000)
                print(floor_table(format, floors[format], CORES), flush=True)
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
            rows.append(
                [
                    format,
                    f"{size / 1e6:,.0f} MB",
                    name,
                    c.fmt_s(seconds),
                    f"{seconds / bare_s:.2f}×",
                    c.fmt_s(cpu),
                    f"{cpu / bare_cpu:.2f}×",
                    c.fmt_mb(rss),
                ]
            )
        est_s, est_cpu, est_rss = m["ctxfit estimate --json"]
        fit_s, fit_cpu, fit_rss = m["ctxfit fit --budget 400000 -o"]
        rep_s, rep_cpu, rep_rss = m["ctxfit replay --json"]
        lines.append(
            f"- {format}, {size / 1e6:,.0f} MB: estimate {est_s / bare_s:.2f}× bare parse wall "
            f"({est_cpu / bare_cpu:.2f}× CPU), peak {c.fmt_mb(est_rss)}; fit {fit_s / bare_s:.2f}× wall "
            f"({fit_cpu / bare_cpu:.2f}× CPU), peak {c.fmt_mb(fit_rss)}; replay {rep_s / est_s:.2f}× "
            f"estimate wall, peak {c.fmt_mb(rep_rss)}."
        )
        targets.append(
            f"- {format}, {size / 1e6:,.0f} MB: estimate ≤ 2× bare parse: {est_s / bare_s:.2f}× → "
            f"{c.verdict(est_s / bare_s <= 2.0)}; peak ≤ 200 MB: {c.fmt_mb(est_rss)} → "
            f"{c.verdict(est_rss <= 200e6)}; fit ≤ 3×: {fit_s / bare_s:.2f}× → "
            f"{c.verdict(fit_s / bare_s <= 3.0)}, peak ≤ the file: {c.fmt_mb(fit_rss)} → "
            f"{c.verdict(fit_rss <= size)}; replay ≤ 3× estimate: {rep_s / est_s:.2f}× → "
            f"{c.verdict(rep_s / est_s <= 3.0)}"
        )
    t = c.table(
        [
            "format",
            "file",
            "command",
            "median wall",
            "× bare parse",
            "median CPU",
            "× bare parse (CPU)",
            "median peak RSS",
        ],
        rows,
    )
    print(f"medians of {args.repeat} runs, load average {load:.1f}")
    print(t)
    print("\n".join(lines))
    print("\n".join(targets).replace("**", ""))
    if args.no_doc:
        return
    results_md = (
        "Files: "
        + ", ".join(f"{f} {s / 1e6:,.0f} MB ({n:,} lines)" for (f, _), (s, n, _) in results.items())
        + f". Medians of {args.repeat} interleaved runs, each a separate process reading the file from the page "
        f"cache; CPU is the child's user + system time (wall time on a shared machine is disturbed more: load "
        f"average {load:.1f} when the runs ended).\n\n{t}\n\n" + "\n".join(lines)
    )
    for format, times in floors.items():
        results_md += "\n\nThe floor of reading a " + floor_table(format, times, CORES)
    if stage_times is not None:
        results_md += (
            "\n\nWhere the time goes: one process's work on the first 100 MB of the biggest Anthropic "
            "file, stage by stage (medians of 3).\n\n" + stage_table(stage_times)
        )
    c.write_section(
        "big_file",
        c.section(
            "2. A big transcript end to end",
            __doc__.split("\n\n", 2)[2].strip(),
            c.command_line(),
            results_md,
            "**Targets** (issue #24):\n\n" + "\n".join(targets),
        ),
    )


FORMATS = ("anthropic", "claude-code", "codex")
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


if __name__ == "__main__":
    main()
