"""A big JSON-document log cut mid-write: what reading it up to its last complete element costs.

    python bench/cut_document.py [--size-mb 50] [--repeat 5] [--keep] [--no-doc]

Cline (and Gemini CLI, OpenHands, SWE-agent) keep a task's log as one JSON document that they
rewrite whole, so a reader can find it cut anywhere (issue #19). Generates a Cline task history
(`api_conversation_history.json`, one line, as Cline writes it) of --size-mb: a task, then rounds of
an assistant `tool_use` (with `metrics`) and a user text result of 2-20 KB of mixed-script text.
The cut copy ends inside its last message. Side by side, interleaved, medians of --repeat:

- in this process: `orjson.loads` of the whole document (the floor) against `cut.complete_part` of
  the cut one (the scan, the closing and the parse of what is kept); reading each as ctxfit does
  (`read_transcripts`: for the cut one, a failed parse, the scan, the parse of what is kept);
- each as its own process: `ctxfit estimate --json` of the whole and of the cut document.

Targets: the scan and closing at most 3x the whole one's bare parse; reading the cut document, and
`estimate` of it, at most 1.5x the same for the whole one.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from random import Random

import orjson
from _common import PYTHON, clock, fmt_s, median, mixed_text, run_child, section, table, verdict, write_section

from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.cut import complete_part


def history(size: int, seed: int = 7) -> bytes:
    """A Cline task history of about `size` bytes, on one line."""
    rng = Random(seed)
    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "<task>Fix it.</task>"}], "ts": 0}]
    total, k = 0, 0
    while total < size:
        k += 1
        call = {"type": "tool_use", "id": f"toolu_{k:06d}", "name": "read_file", "input": {"path": f"src/{k}.py"}}
        reply = {"role": "assistant", "content": [call], "ts": 2 * k, "metrics": {"tokens": {"prompt": 1000 + k}}}
        text = mixed_text(rng.randint(2_000, 20_000), seed=k)
        result = {"role": "user", "content": [{"type": "text", "text": f"[read_file for 'src/{k}.py'] Result: {text}"}]}
        messages += [reply, {**result, "ts": 2 * k + 1}]
        total += len(orjson.dumps(result)) + 200
    return orjson.dumps(messages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the generated files in /tmp")
    parser.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    args = parser.parse_args()
    folder = Path("/tmp/ctxfit-bench-cut")
    (folder / "whole").mkdir(parents=True, exist_ok=True)
    (folder / "cut").mkdir(exist_ok=True)
    whole_path, cut_path = (folder / kind / "api_conversation_history.json" for kind in ("whole", "cut"))
    data = history(args.size_mb << 20)
    cut = data[: len(data) - 5_000]  # inside the last result
    whole_path.write_bytes(data)
    cut_path.write_bytes(cut)
    kept = orjson.loads(complete_part(cut) or b"null")
    assert kept == orjson.loads(data)[:-1], "the cut document reads as all but its last message"

    def read(path: Path, document: bytes) -> None:
        [transcript] = read_transcripts(str(path), io.BytesIO(document))
        assert transcript.being_written == (document is cut)

    times: dict[str, list[float]] = {
        name: [] for name in ("parse", "complete_part", "read whole", "read cut", "est whole", "est cut")
    }
    for _ in range(args.repeat):
        times["parse"].append(clock(lambda: orjson.loads(data)))
        times["complete_part"].append(clock(lambda: complete_part(cut)))
        times["read whole"].append(clock(lambda: read(whole_path, data)))
        times["read cut"].append(clock(lambda: read(cut_path, cut)))
        for name, path in (("est whole", whole_path), ("est cut", cut_path)):
            seconds, _, status = run_child([PYTHON, "-m", "ctxfit_cli", "estimate", "--json", str(path)])
            assert status == 0, (name, status)
            times[name].append(seconds)
    m = {name: median(values) for name, values in times.items()}
    in_process = m["complete_part"] / m["parse"]
    reading = m["read cut"] / m["read whole"]
    end_to_end = m["est cut"] / m["est whole"]
    mb = len(data) / (1 << 20)
    rows = [
        ("orjson.loads(whole)", fmt_s(m["parse"]), "1.00x", f"{mb / m['parse']:.0f} MB/s"),
        ("complete_part(cut)", fmt_s(m["complete_part"]), f"{in_process:.2f}x", f"{mb / m['complete_part']:.0f} MB/s"),
        ("read_transcripts(whole)", fmt_s(m["read whole"]), "", ""),
        ("read_transcripts(cut)", fmt_s(m["read cut"]), f"{reading:.2f}x of whole", ""),
        ("ctxfit estimate whole", fmt_s(m["est whole"]), "", ""),
        ("ctxfit estimate cut", fmt_s(m["est cut"]), f"{end_to_end:.2f}x of whole", ""),
    ]
    results = table(("what", "median", "ratio", "speed"), rows)
    targets = (
        f"- scan and close the cut document ≤ 3× the bare parse of the whole: {in_process:.2f}× "
        f"{verdict(in_process <= 3)}\n"
        f"- read the cut document ≤ 1.5× the whole one: {reading:.2f}× {verdict(reading <= 1.5)}\n"
        f"- `estimate` of the cut document ≤ 1.5× of the whole one: {end_to_end:.2f}× {verdict(end_to_end <= 1.5)}"
    )
    body = section(
        f"A {mb:.0f} MB Cline history cut mid-write",
        "Reading a one-document log up to its last complete element (issue #19).",
        f"python bench/cut_document.py --size-mb {args.size_mb} --repeat {args.repeat}",
        results,
        targets,
    )
    print(body)
    if not args.no_doc:
        write_section("cut_document", body)
    if not args.keep:
        for path in (whole_path, cut_path):
            path.unlink()


if __name__ == "__main__":
    sys.exit(main())
