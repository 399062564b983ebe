"""The agent-loop cost: fitting one more step against fitting a whole history from scratch.

    python bench/incremental_fit.py [--messages 10000] [--steps 100] [--repeat 5] [--turn-every 0] [--no-doc]

Through the library, on a 10,000-message Anthropic history (one instruction, then rounds of an
assistant `tool_use` and a `tool_result` of 1-6 KB of mixed text), read with
`formats.read_transcripts(...).materialize()`. Parsing is never timed, but every repetition
parses a fresh copy, so no message carries a cached estimate from an earlier repetition.

- first fit: a fresh `Fitter(FitOptions(budget=400_000), transcript.fixed, dialect=...)` and
  `fitter.update(messages[:-2])` (and, separately, building that request's payload bytes with
  `payload.build`, as an agent that resumes would);
- one more step: after that first request was built, `fitter.update(messages)` (two more
  messages: the assistant's call and its result) and `payload.build(transcript, plan)`, i.e.
  everything an agent loop does before its next request;
- the agent loop: the same over the last `--steps` steps of the history, mean and median per step.

Target: one more step ≤ 10% of the first fit. The incremental payload is checked byte for byte
against `payload.fit_transcript` on the whole history. Each call is timed with the cyclic GC off
(`timed`).
"""

from __future__ import annotations

import argparse
import gc

import _common as c

from ctxfit_cli.core.fitting import FitOptions, Fitter
from ctxfit_cli.formats.payload import build, fit_transcript

TARGET = 0.10


def timed(fn) -> float:
    """Seconds of one call with the cyclic GC off, as `timeit` times: a full collection of the
    millions of objects the earlier repetitions left can land in any one call (~80 ms here, in
    the single "one more step" call of a repetition or not, by chance). The loop's GC pauses are
    measured on their own by bench/loop.py."""
    gc.disable()
    try:
        return c.clock(fn)
    finally:
        gc.enable()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--turn-every", type=int, default=0, help="a new human turn every N calls (0: one long turn)")
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()

    maker = c.HistoryMaker(result_chars=(700, 4_000))
    # A system prompt line, the instruction, then calls: --messages lines in all.
    lines = maker.lines((args.messages - 2) // 2, args.turn_every or None)
    data = b"\n".join(lines) + b"\n"
    options = FitOptions(budget=400_000)

    first, first_build, step, loop_mean, loop_median = [], [], [], [], []
    plan_info = None
    for rep in range(args.repeat):
        # (a) and (b): a fresh parse, nothing memoized.
        transcript = c.HistoryMaker.read(data)
        messages = transcript.messages
        gc.collect()
        holder = {}

        def first_fit():
            fitter = Fitter(options, transcript.fixed, dialect=transcript.dialect)
            holder["fitter"], holder["plan"] = fitter, fitter.update(messages[:-2])

        first.append(timed(first_fit))
        fitter = holder["fitter"]
        first_build.append(timed(lambda: build(transcript, holder["plan"])))

        def one_more():
            holder["fitted"] = build(transcript, fitter.update(messages))

        step.append(timed(one_more))
        if rep == 0:
            expected = fit_transcript(c.HistoryMaker.read(data), options).payload
            if holder["fitted"].payload != expected:
                raise SystemExit("incremental payload differs from fit_transcript on the whole history")
            p = holder["fitted"].plan
            plan_info = (len(messages), len(data), p.stage, p.tokens_before, p.tokens_after,
                         sum(len(b.results) for b in p.batches if b.cleared), len(holder["fitted"].payload))

        # The agent loop over the last `steps` steps, on another fresh copy.
        transcript = c.HistoryMaker.read(data)
        messages = transcript.messages
        gc.collect()
        n = len(messages) - 2 * args.steps
        fitter = Fitter(options, transcript.fixed, dialect=transcript.dialect)
        build(transcript, fitter.update(messages[:n]))
        per_step = []
        for k in range(1, args.steps + 1):
            history = messages[:n + 2 * k]
            per_step.append(timed(lambda: build(transcript, fitter.update(history))))
        loop_mean.append(sum(per_step) / len(per_step))
        loop_median.append(c.median(per_step))
        print(f"  run {rep + 1}/{args.repeat}: first fit {c.fmt_s(first[-1])}, first build "
              f"{c.fmt_s(first_build[-1])}, one more step {c.fmt_s(step[-1])}, loop mean "
              f"{c.fmt_s(loop_mean[-1])}", flush=True)

    m_first, m_build, m_step = c.median(first), c.median(first_build), c.median(step)
    m_loop, m_loop_med = c.median(loop_mean), c.median(loop_median)
    ratio, loop_ratio = m_step / m_first, m_loop / m_first
    n_msgs, n_bytes, stage, before, after, cleared, payload = plan_info
    rows = [
        ["first fit: fresh `Fitter` + `update(messages[:-2])`", c.fmt_s(m_first), "1.00"],
        ["building that first payload (`payload.build`)", c.fmt_s(m_build), f"{m_build / m_first:.3f}"],
        ["one more step: `update(messages)` + `build`", c.fmt_s(m_step), f"{ratio:.3f}"],
        [f"agent loop, last {args.steps} steps: mean per step", c.fmt_s(m_loop), f"{loop_ratio:.3f}"],
        [f"agent loop, last {args.steps} steps: median per step", c.fmt_s(m_loop_med), f"{m_loop_med / m_first:.3f}"],
    ]
    t = c.table(["what", "median", "÷ first fit"], rows)
    ok = ratio <= TARGET and loop_ratio <= TARGET
    info = (f"History: a system prompt and {n_msgs:,} messages, {n_bytes / 1e6:.1f} MB of JSONL; the final request: stage "
            f"`{stage}`, {before:,} tokens before fitting, {after:,} after, {cleared:,} results cleared, "
            f"payload {payload / 1e6:.2f} MB.")
    print(info)
    print(f"medians of {args.repeat}")
    print(t)
    target = (f"**Target:** one more step ≤ {TARGET:.0%} of the first fit → {ratio:.1%} "
              f"(agent-loop mean {loop_ratio:.1%}) → {c.verdict(ok)}.")
    print(target.replace("**", ""))
    if args.no_doc:
        return
    results = (f"{info} Medians of {args.repeat} repetitions, each on freshly parsed messages; "
               f"the incremental payload equals `fit_transcript` on the whole history byte for byte.\n\n{t}")
    c.write_section("incremental_fit", c.section(
        "3. Incremental fitting in an agent loop", __doc__.split("\n\n", 2)[2].strip(), c.command_line(),
        results, target))


if __name__ == "__main__":
    main()
