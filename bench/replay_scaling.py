"""How replay time grows with the length of the history.

    python bench/replay_scaling.py [--sizes 1000,2000,4000,8000] [--repeat 5] [--policy-repeat 3] [--no-doc]

Histories of 1,000, 2,000, 4,000 and 8,000 model calls (Anthropic; a system prompt, one
instruction, then each call = an assistant `tool_use` + a `tool_result` of 1-6 KB of mixed text),
in two variants: a sub-agent (one long turn) and a multi-turn chat (a new human turn every 20
calls). Timed: `replay.replay(transcript, policies.POLICIES["ctxfit"], FitOptions(budget=400_000))`,
and separately every policy in `POLICIES`. Parsing is not timed, and every repetition replays a
freshly parsed transcript (estimates and cleared copies are memoized on messages). Repetitions are
interleaved across sizes.

Target: each doubling of the history costs ≤ 2.5× the time (ratio of medians), i.e. the replay is
close to linear in the number of calls.
"""

from __future__ import annotations

import argparse
import gc

import _common as c

from ctxfit_cli.core.fitting import FitOptions
from ctxfit_cli.replay.policies import POLICIES
from ctxfit_cli.replay.simulation import replay

TARGET = 2.5
VARIANTS = {"sub-agent": None, "multi-turn (turn every 20 calls)": 20}


def time_replay(data: bytes, policy_name: str, options: FitOptions) -> tuple[float, object]:
    transcript = c.HistoryMaker.read(data)
    gc.collect()
    holder = {}
    seconds = c.clock(lambda: holder.setdefault("r", replay(transcript, POLICIES[policy_name], options)))
    return seconds, holder["r"]


def ratios(medians: list[float]) -> list[float]:
    return [b / a for a, b in zip(medians, medians[1:])]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,2000,4000,8000")
    ap.add_argument("--repeat", type=int, default=5, help="repetitions for the ctxfit policy")
    ap.add_argument("--big-repeat", type=int, default=3,
                    help="repetitions for the ctxfit policy at a size whose first run took > --big-seconds")
    ap.add_argument("--big-seconds", type=float, default=10.0)
    ap.add_argument("--policy-repeat", type=int, default=3, help="repetitions for the other policies")
    ap.add_argument("--policy-sizes", default=None, help="sizes at which every other policy is timed (default: --sizes)")
    ap.add_argument("--policy-variants", default=None,
                    help="variants in which every other policy is timed (default: all)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated variant names")
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    options = FitOptions(budget=400_000)
    maker = c.HistoryMaker(result_chars=(700, 4_000))
    variants = {v: VARIANTS[v] for v in args.variants.split(",")}
    data = {(v, n): b"\n".join(maker.lines(n, every)) + b"\n" for v, every in variants.items() for n in sizes}

    policy_sizes = [int(x) for x in (args.policy_sizes or args.sizes).split(",")]
    policy_variants = [v for v in (args.policy_variants or ",".join(variants)).split(",") if v in variants]
    # name -> variant -> size -> list of seconds
    times: dict[str, dict[str, dict[int, list[float]]]] = {
        p: {v: {n: [] for n in sizes} for v in variants} for p in POLICIES}
    info: dict[tuple[str, int], str] = {}

    def wanted(name: str, v: str, n: int, rep: int) -> bool:
        if name == "ctxfit":
            done = times[name][v][n]
            big = bool(done) and done[0] > args.big_seconds
            return rep < (args.big_repeat if big else args.repeat)
        return v in policy_variants and n in policy_sizes and rep < args.policy_repeat

    for rep in range(max(args.repeat, args.policy_repeat)):
        for v in variants:
            for n in sizes:
                ran = []
                for name in POLICIES:
                    if not wanted(name, v, n, rep):
                        continue
                    seconds, result = time_replay(data[v, n], name, options)
                    times[name][v][n].append(seconds)
                    ran.append(f"{name} {c.fmt_s(seconds)}")
                    if name == "ctxfit" and rep == 0:
                        info[v, n] = (f"{result.calls:,} calls, largest request {result.max_request:,} tokens, "
                                      f"cache read {result.cache_read / max(result.total_input, 1):.0%}")
                if ran:
                    print(f"  run {rep + 1}: {v} {n:,} calls: " + ", ".join(ran), flush=True)

    sections, all_ok, fails = [], True, []
    for v in variants:
        rows = []
        for p in POLICIES:
            med = [c.median(times[p][v][n]) if times[p][v][n] else None for n in sizes]
            if all(x is None for x in med):
                continue
            r = [b / a if a and b else None for a, b in zip(med, med[1:])]
            ok = all(x <= TARGET for x in r if x is not None)
            if p == "ctxfit":
                all_ok &= ok
            elif not ok:
                fails.append(f"{p} ({v})")
            reps = sorted({len(times[p][v][n]) for n in sizes if times[p][v][n]})
            rows.append([f"`{p}`", *(c.fmt_s(x) if x else "–" for x in med),
                         *(f"{x:.2f}×" if x else "–" for x in r), "/".join(map(str, reps)),
                         "PASS" if ok else "FAIL"])
        headers = ["policy", *(f"{n:,} calls" for n in sizes),
                   *(f"{a:,}→{b:,}" for a, b in zip(sizes, sizes[1:])), "runs", "≤ 2.5× each"]
        t = c.table(headers, rows)
        details = "; ".join(f"{n:,}: {info[v, n]}" for n in sizes)
        print(f"\n{v} — medians")
        print(t)
        sections.append(f"### {v}\n\nctxfit policy, per size: {details}.\n\n{t}")
    target = (f"**Target:** each doubling ≤ {TARGET}× for the `ctxfit` policy → {c.verdict(all_ok)}."
              + (f" Other policies over {TARGET}× on some doubling (no target, for information): "
                 + ", ".join(fails) + "." if fails else " Every other policy is within it too."))
    print(target.replace("**", ""))
    if args.no_doc:
        return
    results = (f"Medians of the runs in column `runs`: `ctxfit` {args.repeat} repetitions per size ({args.big_repeat} "
               f"where one run takes over {args.big_seconds:g} s); every other policy {args.policy_repeat}, "
               f"timed at {', '.join(f'{n:,}' for n in policy_sizes)} calls in the {', '.join(policy_variants)} "
               f"variant(s). Each run is on a "
               f"freshly parsed transcript (parse not timed). Columns `a→b` are the ratio of medians for that "
               f"doubling.\n\n" + "\n\n".join(sections))
    c.write_section("replay_scaling", c.section(
        "4. Replay scaling", __doc__.split("\n\n", 2)[2].strip(), c.command_line(), results, target))


if __name__ == "__main__":
    main()
