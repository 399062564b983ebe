"""Run every speed benchmark and regenerate docs/benchmarks.md.

    python bench/run_all.py [--size-mb 1000] [--small-mb 250] [--keep] [--only NAME,...]

Runs, one after the other, each in its own process (so none inherits another's memory or
caches): estimator_speed, incremental_fit, replay_scaling, big_file. Each rewrites its own section;
this script first writes the header (date, machine, commands) and then a summary of every target.
Every other section, and notes by hand between sections, are kept.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time

import _common as c

SCRIPTS = {
    "estimator_speed": [],
    "incremental_fit": [],
    "replay_scaling": [],
    "big_file": [],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=None, help="passed to big_file.py")
    ap.add_argument("--small-mb", type=float, default=None, help="passed to big_file.py")
    ap.add_argument("--keep", action="store_true", help="passed to big_file.py: keep /tmp files")
    ap.add_argument("--only", default=",".join(SCRIPTS), help="comma-separated benchmarks to run")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n]
    extra = dict(SCRIPTS)
    big = []
    if args.size_mb is not None:
        big += ["--size-mb", f"{args.size_mb:g}"]
    if args.small_mb is not None:
        big += ["--small-mb", f"{args.small_mb:g}"]
    if args.keep:
        big.append("--keep")
    extra["big_file"] = big

    started = time.strftime("%Y-%m-%d %H:%M")
    commands = [" ".join(["python", f"bench/{n}.py", *extra[n]]) for n in names]
    # A new header and summary; the sections (and the notes by hand between them) are kept, each
    # script rewrites its own, and the sections of benchmarks this script does not run stay.
    c.DOC.parent.mkdir(parents=True, exist_ok=True)
    old = c.DOC.read_text(encoding="utf-8") if c.DOC.exists() else ""
    sections = old[old.index("<!-- bench:"):] if "<!-- bench:" in old else ""
    c.DOC.write_text(c.header(started) + "\n**Commands** (in this order, by `python bench/run_all.py "
                     + " ".join(sys.argv[1:]) + "`):\n\n```\n" + "\n".join(commands) + "\n```\n"
                     + "\n<!-- summary -->\n\n" + sections, encoding="utf-8")
    durations = {}
    for name in names:
        print(f"\n=== {name} ===", flush=True)
        t0 = time.perf_counter()
        subprocess.run([c.PYTHON, str(c.HERE / f"{name}.py"), *extra[name]], check=True, cwd=c.ROOT)
        durations[name] = time.perf_counter() - t0

    text = c.DOC.read_text(encoding="utf-8")
    rows = []
    for name in names:
        match = re.search(rf"<!-- bench:{name} -->\n## (.*?)\n(.*?)<!-- /bench:{name} -->", text, re.S)
        if not match:
            continue
        title, body = match.groups()
        targets = body.split("**Target", 1)[-1]
        for line in targets.splitlines():
            verdict = re.search(r"\*\*(PASS|FAIL)\*\*", line)
            if verdict:
                what = re.sub(r"\*\*|^[-:s ]+|→?\s*\*\*(PASS|FAIL)\*\*.*$", "", line).strip(" :→.-")
                rows.append([title, re.sub(r"\s*(→|:)?\s*(PASS|FAIL).*$", "", what), verdict.group(1)])
    rows.sort(key=lambda row: row[0].split(".", 1)[0].zfill(3))  # by section number
    summary = ("## Summary\n\n" + c.table(["benchmark", "target", "result"], rows)
               + "\n\nRun times: " + ", ".join(f"{n} {s:.0f} s" for n, s in durations.items()) + ".\n")
    c.DOC.write_text(text.replace("<!-- summary -->", summary), encoding="utf-8")
    print("\n" + summary)


if __name__ == "__main__":
    main()
