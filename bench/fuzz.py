"""The long fuzz run: the cases of tests/test_fuzz.py, many more of them, and a report in docs/fuzz.md.

    python bench/fuzz.py --cases 50000 [--seed 0] [--doc docs/fuzz.md]
    python bench/fuzz.py --show SEED          # write case SEED's input to fuzz-SEED.jsonl
    python bench/fuzz.py --cases 25000 --seed 25000 --save b.json   # one share of a run on two cores
    python bench/fuzz.py --merge a.json b.json                      # ... and the report of both
    python bench/fuzz.py --merge a.json b.json --recheck            # ... each failing case run again now

Case k is made from `random.Random(seed + k)` (structured transcripts and byte-level mutations
of sample_transcripts/, see tests/fuzzing.py) and run in this process through the CLI's Typer
app: `estimate`, `plan`, `fit` (its payload validated, read back and refitted) and, one case in
four, `replay`. Every broken promise is counted by kind, with the first seeds that show it.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import re
import sys
import tempfile
import time
from itertools import chain
from pathlib import Path

import _common as c

sys.path.insert(0, str(c.ROOT / "tests"))
import fuzzing  # noqa: E402

EXAMPLES_PER_KIND = 5


def kind_of(problem: str) -> str:
    """A problem without its particulars (ids, numbers, quoted text), to count alike ones together."""
    kind = re.sub(r"'[^']*'", "'…'", problem)
    kind = re.sub(r"\d+", "N", kind)
    return kind[:160]


def run(cases: int, seed: int, progress: Path | None, save: Path | None = None) -> dict:
    counts: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[int]] = collections.defaultdict(list)
    failing_cases = 0
    failing_seeds: list[int] = []
    started = {"revision": c.revision(), "started": f"{dt.datetime.now():%Y-%m-%d %H:%M}"}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for k in range(cases):
            _, problems = fuzzing.run_case(seed + k, Path(folder))
            failing_cases += bool(problems)
            if problems:
                failing_seeds.append(seed + k)
            for kind in sorted({kind_of(p) for p in problems}):
                counts[kind] += 1
                if len(examples[kind]) < EXAMPLES_PER_KIND:
                    examples[kind].append(seed + k)
            if (k + 1) % 250 == 0 or k + 1 == cases:
                result = {"cases": k + 1, "seed": seed, "seconds": time.perf_counter() - start,
                          "failing_cases": failing_cases, "failing_seeds": failing_seeds, **started,
                          "counts": counts, "examples": examples}
                if progress:
                    progress.write_text(f"{k + 1}/{cases} cases, {failing_cases} failing, "
                                        f"{result['seconds']:.0f} s\n")
                if save:  # kept up to date, so that a run cut short still tells what it found
                    save.write_text(json.dumps(result))
    return result


def merge(results: list[dict]) -> dict:
    """Saved results of consecutive seed ranges, run side by side, as one run."""
    counts: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[int]] = collections.defaultdict(list)
    for result in results:
        counts.update(result["counts"])
        for kind, seeds in result["examples"].items():
            examples[kind] = (examples[kind] + seeds)[:EXAMPLES_PER_KIND]
    return {"cases": sum(r["cases"] for r in results), "seed": min(r["seed"] for r in results),
            "seconds": max(r["seconds"] for r in results), "processes": len(results),
            "failing_cases": sum(r["failing_cases"] for r in results),
            "failing_seeds": sorted(set(chain.from_iterable(_failing_seeds(r) for r in results))),
            **{k: results[0][k] for k in ("revision", "started") if k in results[0]},
            "counts": counts, "examples": examples}


def _failing_seeds(result: dict) -> list[int]:
    """The seeds of a result's failing cases (a result saved before they were kept: its examples)."""
    return result.get("failing_seeds") or sorted(set(chain.from_iterable(result["examples"].values())))


def recheck(result: dict) -> dict:
    """The result with every failing case run again on the code as it is now."""
    with tempfile.TemporaryDirectory() as folder:
        again = {seed: fuzzing.run_case(seed, Path(folder))[1] for seed in _failing_seeds(result)}
    return {**result, "recheck": {"revision": c.revision(), "seeds": again}}


def report(result: dict) -> str:
    runs = {k: v for k, v in result["counts"].items() if not k.startswith(fuzzing.PAYLOAD)}
    payloads = {k: v for k, v in result["counts"].items() if k.startswith(fuzzing.PAYLOAD)}
    command = f"python bench/fuzz.py --cases {result['cases']} --seed {result['seed']}"
    if result.get("processes", 1) > 1:
        share = result["cases"] // result["processes"]
        command = "\n".join(f"python bench/fuzz.py --cases {share} --seed {result['seed'] + i * share} --save part{i}.json &"
                            for i in range(result["processes"])) + "\nwait; python bench/fuzz.py --merge " + " ".join(
                                f"part{i}.json" for i in range(result["processes"]))
    lines = [
        "# Fuzzing ctxfit",
        "",
        "Generated by `bench/fuzz.py`; the bounded version runs in the test suite (tests/test_fuzz.py).",
        "Inputs: structured OpenAI/Anthropic transcripts and requests (calls without results, results",
        "without calls, values of the wrong type) and byte-level mutations of slices of",
        "sample_transcripts/ (flipped, deleted, inserted and repeated bytes; swapped and dropped lines;",
        "NUL, lone CR, BOMs, invalid UTF-8, deep brackets, huge numbers, long whitespace).",
        "",
        f"**Command** (run {result.get('started') or f'{dt.datetime.now():%Y-%m-%d %H:%M}'}, "
        f"{result.get('revision') or c.revision()}, {c.machine()}):",
        "",
        "```",
        command,
        "```",
        "",
        f"{result['cases']:,} cases in {result['seconds'] / 60:.1f} min"
        f"{' on ' + str(result['processes']) + ' processes' if result.get('processes', 1) > 1 else ''}; "
        f"{result['failing_cases']:,} cases broke at least one promise.",
        "",
        "## The runs themselves",
        "",
        "Exit code 0/2/3/4 only, no exception or traceback, nothing on stdout after an error, the input",
        "unchanged (bytes and mtime), no `--report` without its payload.",
        "",
    ]
    lines += _kinds(runs, result["examples"]) if runs else ["No case broke these promises.", ""]
    lines += [
        "## The payloads `fit` writes",
        "",
        "Valid for their dialect (`validate_request`), read back by `estimate -` at exactly the size",
        "`fit` promised, and fitted again with the same budget to the same bytes.",
        "",
    ]
    lines += _kinds(payloads, result["examples"]) if payloads else ["No case broke these promises.", ""]
    if "recheck" in result:
        again = result["recheck"]["seeds"]
        still = {seed: problems for seed, problems in again.items() if problems}
        lines += ["## Every failing case, run again", "",
                  f"On {result['recheck']['revision']}: {len(again) - len(still)} of the {len(again)} failing cases "
                  f"({', '.join(map(str, again))}) now keep every promise"
                  + (f"; still failing: {', '.join(f'{s} ({p[0]})' for s, p in still.items())}." if still else "."), ""]
    lines += ["To see a case's input: `python bench/fuzz.py --show SEED` writes `fuzz-SEED.jsonl`.", ""]
    return "\n".join(lines)


def _kinds(counts: dict[str, int], examples: dict[str, list[int]]) -> list[str]:
    rows = [[n, f"`{kind.replace('|', '/')}`", ", ".join(map(str, examples[kind]))]
            for kind, n in sorted(counts.items(), key=lambda item: -item[1])]
    return [c.table(["cases", "problem", "seeds"], rows), ""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--doc", type=Path, default=c.ROOT / "docs" / "fuzz.md")
    ap.add_argument("--progress", type=Path, default=None, help="a file that shows how far the run is")
    ap.add_argument("--show", type=int, default=None, help="write the input of case SEED and stop")
    ap.add_argument("--save", type=Path, default=None, help="also save the raw result as JSON")
    ap.add_argument("--merge", type=Path, nargs="+", default=None, help="report saved results together")
    ap.add_argument("--recheck", action="store_true", help="with --merge: run every failing case again on this code")
    args = ap.parse_args()
    if args.merge:
        result = merge([json.loads(p.read_text()) for p in args.merge])
        if args.recheck:
            result = recheck(result)
        args.doc.write_text(report(result), encoding="utf-8")
        print(report(result))
        return
    if args.show is not None:
        import random
        path = Path(f"fuzz-{args.show}.jsonl")
        path.write_bytes(fuzzing.case_input(random.Random(args.show)))
        print(path)
        return
    result = run(args.cases, args.seed, args.progress, args.save)
    text = report(result)
    args.doc.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
