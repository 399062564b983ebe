"""Memory and time on hostile inputs: what issue #10 measured, re-measured on the current code.

    python bench/hostile.py [--mb 200] [--messages 1000000] [--repeat 3] [--keep]

Each case runs the real CLI in its own process; peak memory is the largest single process's
(`wait4`: the CLI's, or one of its workers' when a file is read on every core, whichever is
larger; not their sum), and the inputs are made in a child process, so the bench's own memory
is not in it.
Cases: a file with no newline (`/dev/zero`, stopped by the line limit); a big JSON Lines file
whose *first* line is broken (reported without reading on); a line holding one big base64 image
(its size is read from the header; the line limit raised to let it in); a JSON bomb (a one-line
list of millions of empty objects); `estimate`, `fit` and `replay` on a file of tiny messages
(an OpenAI agent transcript: a system prompt, one instruction, then rounds of a call `{}` and a
result "ok"), run `--repeat` times interleaved: medians, and each repetition's ratio to the
`estimate` run next to it. CPU is user + system time of the process and the workers it waited
for (all three read a file of 64 MB or more on every core; `replay` walks its first policy while
the pieces are read, the others after), so on a shared machine it shows what the wall time
cannot: how much work each command does.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import _common as c

from ctxfit_cli.formats.parallel import cores  # noqa: E402

CTXFIT = [c.PYTHON, "-m", "ctxfit_cli"]


def measure(argv: list[str], stdin: Path | None = None) -> tuple[float, int, int, str, float]:
    """(wall seconds, peak RSS bytes, exit code, last stderr line, CPU seconds) of one run."""
    start = time.perf_counter()
    with open(stdin or os.devnull, "rb") as source:
        child = subprocess.Popen(argv, stdin=source, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    err = child.stderr.read().decode("utf-8", "replace").strip().splitlines()
    child.stderr.close()
    return (wall, usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status), (err[-1] if err else "")[:140],
            usage.ru_utime + usage.ru_stime)


def made_apart(make, *args) -> None:
    """Make an input in a child process. A process's peak RSS (`wait4`) starts at the peak of the
    process it was forked from, so the inputs built in memory here (a 100 MB image line, a bomb)
    would otherwise count in the peak of every command measured after them."""
    from multiprocessing import get_context

    child = get_context("fork").Process(target=make, args=args)
    child.start()
    child.join()
    if child.exitcode != 0:
        raise SystemExit(f"making {args[0]} failed ({child.exitcode})")


def bad_first_line(path: Path, mb: int) -> None:
    line = b'{"role":"user","content":"' + b"word " * 200 + b'"}\n'
    with open(path, "wb") as file:
        file.write(b'{"role": "user", "content": "broken\n')
        for _ in range(mb * (1 << 20) // len(line)):
            file.write(line)


def image_line(path: Path, mb: int) -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + (1000).to_bytes(4, "big") * 2 + b"\x08\x06\x00\x00\x00"
    data = base64.b64encode(png + os.urandom(mb * (1 << 20) * 3 // 4))
    block = b'{"type":"image","source":{"type":"base64","media_type":"image/png","data":"' + data + b'"}}'
    path.write_bytes(b'{"role":"user","content":[' + block + b"]}\n")


def json_bomb(path: Path, mb: int) -> None:
    count = mb * (1 << 20) // 3
    path.write_bytes(b'{"role":"user","content":"x","bomb":[' + b"{}," * (count - 1) + b"{}]}\n")


def tiny_messages(path: Path, count: int) -> None:
    """An OpenAI agent transcript: one instruction, then tiny rounds (a call and its result)."""
    with open(path, "wb") as file:
        file.write(b'{"role":"system","content":"s"}\n{"role":"user","content":"go"}\n')
        for i in range(count // 2):
            file.write(b'{"role":"assistant","content":null,"tool_calls":[{"id":"c%d","type":"function",'
                       b'"function":{"name":"r","arguments":"{}"}}]}\n{"role":"tool","tool_call_id":"c%d",'
                       b'"content":"ok"}\n' % (i, i))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=200, help="size of the big generated inputs")
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each command on the tiny messages, interleaved")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ctxfit-hostile-"))
    rows, tiny_rows = [], []

    def shown(argv: list[str]) -> str:
        return f"`{' '.join(['ctxfit', *argv[3:]]).replace(str(folder) + '/', '')}`"

    def case(name: str, argv: list[str], stdin: Path | None = None) -> None:
        wall, peak, code, err, _ = measure(argv, stdin)
        rows.append([name, shown(argv), code, c.fmt_s(wall), c.fmt_mb(peak), err.replace("|", "/")])
        print(rows[-1], flush=True)

    try:
        case("no newline (/dev/zero)", [*CTXFIT, "estimate", "/dev/zero"])
        bad = folder / "bad_first.jsonl"
        made_apart(bad_first_line, bad, args.mb)
        case(f"{args.mb} MB JSONL, broken first line", [*CTXFIT, "estimate", str(bad)])
        bad.unlink()
        image = folder / "image.jsonl"
        made_apart(image_line, image, args.mb)
        case(f"{args.mb} MB base64 image on one line", [*CTXFIT, "estimate", "--max-line-mb", str(2 * args.mb), str(image)])
        image.unlink()
        bomb = folder / "bomb.jsonl"
        made_apart(json_bomb, bomb, 50)
        case("50 MB JSON bomb (17M empty objects)", [*CTXFIT, "estimate", str(bomb)])
        bomb.unlink()
        tiny = folder / "tiny.jsonl"
        made_apart(tiny_messages, tiny, args.messages)
        tiny_mb = tiny.stat().st_size / 1e6
        commands = {"estimate": ["estimate"], "fit": ["fit", "--budget", "400000"],
                    "replay": ["replay", "--no-chart", "-p", "ctxfit"]}
        runs: dict[str, list[tuple[float, int, float]]] = {name: [] for name in commands}
        load_before = os.getloadavg()[0]
        for repetition in range(args.repeat):  # interleaved: each repetition runs all three
            for name, command in commands.items():
                wall, peak, code, err, cpu = measure([*CTXFIT, *command, str(tiny)])
                if code != 0:
                    raise SystemExit(f"{name} exited with {code}: {err}")
                runs[name].append((wall, peak, cpu))
                print(repetition, name, f"{wall:.2f} s, {cpu:.2f} s CPU, {peak / 1e6:,.0f} MB", flush=True)
        load_after = os.getloadavg()[0]
        for name, command in commands.items():
            own = runs[name]
            wall, cpu = c.median([r[0] for r in own]), c.median([r[2] for r in own])
            base_wall, base_cpu = (c.median([r[i] for r in runs["estimate"]]) for i in (0, 2))
            each = ", ".join(f"{r[0] / e[0]:.2f}" for r, e in zip(own, runs["estimate"]))
            tiny_rows.append([f"`{name}`", c.fmt_s(wall), c.fmt_s(cpu), c.fmt_mb(max(r[1] for r in own)),
                              "—" if name == "estimate" else f"{wall / base_wall:.2f}× ({each})",
                              "—" if name == "estimate" else f"{cpu / base_cpu:.2f}×"])
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    results = (c.table(["case", "command", "exit", "wall", "peak memory", "last line on stderr"], rows)
               + f"\n\n{args.messages:,} tiny messages ({tiny_mb:,.0f} MB), "
                 f"`ctxfit COMMAND tiny.jsonl`, {args.repeat} interleaved runs each, medians "
                 f"(load average {load_before:.1f} before, {load_after:.1f} after):\n\n"
               + c.table(["command", "wall", "CPU", "peak memory", "wall / estimate's (each run)",
                          "CPU / estimate's"], tiny_rows))
    ratios = ", ".join(f"{row[0]} {row[4].split(' ')[0]}" for row in tiny_rows[1:])
    targets = (f"Targets (issue #10): memory bounded by the line limit (64 MiB by default) whatever the input; "
               f"`fit` and `replay` on {args.messages:,} tiny messages within 3× of `estimate`'s wall time: "
               f"{ratios} (ratios of medians). `estimate` had {base_cpu / base_wall:.1f} cores' worth of CPU "
               f"(CPU ÷ wall; on an idle machine about {min(cores(), 8)}, its workers): where it gets fewer, the wall ratios flatter "
               f"`fit` and `replay`, the CPU ratios do not.")
    body = c.section("Hostile inputs: memory and time", __doc__.split("\n\n", 2)[2].strip(),
                     f"python bench/hostile.py --mb {args.mb} --messages {args.messages} --repeat {args.repeat}", results, targets)
    c.write_section("hostile", body)
    print(body)


if __name__ == "__main__":
    main()
