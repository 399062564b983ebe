"""Memory and time on hostile inputs: what issue #10 measured, re-measured on the current code.

    python bench/hostile.py [--mb 200] [--messages 1000000] [--keep]

Each case runs the real CLI in its own process; peak memory is that process's own (`wait4`).
Cases: a file with no newline (`/dev/zero`, stopped by the line limit); a big JSON Lines file
whose *first* line is broken (reported without reading on); a line holding one big base64 image
(its size is read from the header; the line limit raised to let it in); a JSON bomb (a one-line
list of millions of empty objects); `estimate`, `fit` and `replay` on a file of tiny messages.
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

CTXFIT = [c.PYTHON, "-m", "ctxfit_cli"]


def measure(argv: list[str], stdin: Path | None = None) -> tuple[float, int, int, str]:
    """(wall seconds, peak RSS bytes, exit code, last stderr line) of one run."""
    start = time.perf_counter()
    with open(stdin or os.devnull, "rb") as source:
        child = subprocess.Popen(argv, stdin=source, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    err = child.stderr.read().decode("utf-8", "replace").strip().splitlines()
    child.stderr.close()
    return wall, usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status), (err[-1] if err else "")[:140]


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
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ctxfit-hostile-"))
    rows = []

    def case(name: str, argv: list[str], stdin: Path | None = None) -> tuple[float, int]:
        wall, peak, code, err = measure(argv, stdin)
        rows.append([name, f"`{' '.join(['ctxfit', *argv[3:]]).replace(str(folder) + '/', '')}`",
                     code, c.fmt_s(wall), c.fmt_mb(peak), err.replace("|", "/")])
        print(rows[-1], flush=True)
        return wall, peak

    try:
        case("no newline (/dev/zero)", [*CTXFIT, "estimate", "/dev/zero"])
        bad = folder / "bad_first.jsonl"
        bad_first_line(bad, args.mb)
        case(f"{args.mb} MB JSONL, broken first line", [*CTXFIT, "estimate", str(bad)])
        bad.unlink()
        image = folder / "image.jsonl"
        image_line(image, args.mb)
        case(f"{args.mb} MB base64 image on one line", [*CTXFIT, "estimate", "--max-line-mb", str(2 * args.mb), str(image)])
        image.unlink()
        bomb = folder / "bomb.jsonl"
        json_bomb(bomb, 50)
        case("50 MB JSON bomb (17M empty objects)", [*CTXFIT, "estimate", str(bomb)])
        bomb.unlink()
        tiny = folder / "tiny.jsonl"
        tiny_messages(tiny, args.messages)
        timings = {}
        for command in (["estimate"], ["fit", "--budget", "400000"], ["replay", "--no-chart", "-p", "ctxfit"]):
            timings[command[0]] = case(f"{args.messages:,} tiny messages: {command[0]}", [*CTXFIT, *command, str(tiny)])
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    ratios = ", ".join(f"{name} {wall / timings['estimate'][0]:.1f}× estimate's time"
                       for name, (wall, _) in timings.items() if name != "estimate")
    results = c.table(["case", "command", "exit", "wall", "peak memory", "last line on stderr"], rows)
    targets = (f"Targets (issue #10): memory bounded by the line limit (64 MiB by default) whatever the input; "
               f"`fit` and `replay` on {args.messages:,} tiny messages within 3× of `estimate`: {ratios}.")
    body = c.section("Hostile inputs: memory and time", __doc__.split("\n\n", 2)[2].strip(),
                     f"python bench/hostile.py --mb {args.mb} --messages {args.messages}", results, targets)
    c.write_section("hostile", body)
    print(body)


if __name__ == "__main__":
    main()
