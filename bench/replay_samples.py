"""Replay every transcript we have under every candidate default and every policy → docs/replay.md.

This is how the default clearing policy is chosen, with numbers (issue #14):

    python bench/replay_samples.py                 # writes docs/replay.md (~3 minutes on one core)
    python bench/replay_samples.py --quick         # 1M-token generated logs only, no 5M

Transcripts: the bundled samples (budget 30,000, window 100,000: they are 1k-190k tokens), the
real logs of ../shared/realworld (budgets 60,000 and 40,000, window 200,000: they peak at 20k-190k
tokens with the unlogged part of the prompt), the eight DESIGN §7 sub-agents, and the generated sub-agent,
chat and mixed logs of 1M and 5M tokens in every dialect (`bench/agent_logs.py`, written once into
bench/corpus/replay/, which is not tracked) at budget 400,000, window 1,000,000.

Candidates are `FitOptions` presets differing only in how far stage 1 clears once it has to:
the strict seed rule (just under the budget), fixed low-water marks, and marks that adapt to how
fast the conversation grows (`headroom`). Every candidate keeps the newest quarter of the budget
protected (only the stopping point of stage 1 differs), so none clears a result the seed rule
protects. The winner has the lowest mean relative cost over all transcripts among candidates
that never reject more requests than the strict rule and never cost more than it (in what is
paid for the conversation) on any transcript. Candidates within 0.1% of that lowest mean are
tied; the tie goes to the one that keeps the most context (the largest mean request).
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Callable

import orjson

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT.parent / "shared" / "realworld"
sys.path.insert(0, str(ROOT / "sample_transcripts"))

import agent_logs  # noqa: E402
from ctxfit_cli.core.fitting import DEFAULT_LOWWATER, FitOptions  # noqa: E402
from ctxfit_cli.cli import counting  # noqa: E402
from ctxfit_cli.formats import read_transcripts  # noqa: E402
from ctxfit_cli.replay.policies import DEFAULT_POLICIES, POLICIES, FitterPolicy  # noqa: E402
from ctxfit_cli.replay.simulation import Prices, replay  # noqa: E402

import subagents  # noqa: E402

SMALL = FitOptions(budget=30_000, window=100_000)
#: The real logs peak at 20k-190k tokens, 13k-37k of them the prompt part the log does not hold.
REAL_WIDE = FitOptions(budget=60_000, window=200_000)
REAL_TIGHT = FitOptions(budget=40_000, window=200_000)
LARGE = FitOptions(budget=400_000, window=1_000_000)
#: Mean relative costs this close (relative) are a tie, won by the candidate that keeps more context.
TIE = 0.001


def _lowwater(share: float) -> Callable[[FitOptions], FitOptions]:
    return lambda o: replace(o, lowwater=share, headroom=None)


def _headroom(requests: int, share: float | None = None) -> Callable[[FitOptions], FitOptions]:
    return lambda o: replace(o, lowwater=share, headroom=requests)


CANDIDATES: dict[str, Callable[[FitOptions], FitOptions]] = {
    "strict": lambda o: replace(o, lowwater=None, headroom=None),
    **{f"lowwater {s}": _lowwater(s) for s in (0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4, 0.3)},
    **{f"headroom {n}": _headroom(n) for n in (8, 16, 32)},
    **{f"lowwater 0.75 + headroom {n}": _headroom(n, 0.75) for n in (16, 32)},
}


@dataclass
class Transcript:
    name: str
    group: str  # the kind of conversation, for the per-kind figures
    #: (materialized transcript, options) for each conversation (a compacted log holds several)
    conversations: list[tuple[object, FitOptions]]


def _as_given(conversations: list, options: FitOptions) -> list[tuple[object, FitOptions]]:
    return [(t, options) for t in conversations]


def _as_replay_would(conversations: list, options: FitOptions) -> list[tuple[object, FitOptions]]:
    """As `ctxfit replay --budget B --window W` treats a log: the counter its model calls for
    and the part of the prompt the log does not hold (inferred from its recorded usage)."""
    chosen = []
    for t in conversations:
        choice = counting.choose(t, counter=None, window=options.window, fixed_tokens=None)
        chosen.append((counting.apply(t, choice), counting.fit_options(options, choice)))
    return chosen


def _read(path: Path, name: str | None = None) -> list:
    with open(path, "rb") as stream:
        return [t.materialize() for t in read_transcripts(name or path.name, stream)]


def samples() -> list[Transcript]:
    return [Transcript(p.name, "samples", _as_replay_would(_read(p), SMALL))
            for p in sorted((ROOT / "sample_transcripts").glob("*.json*"))]


def real_logs(options: FitOptions) -> list[Transcript]:
    """The real logs, at `options` (they peak at ~100k tokens, so small budgets make them clear)."""
    found = []
    for path in sorted(REAL.glob("*/*")):
        if path.suffix in (".json", ".jsonl", ".traj"):
            found.append(Transcript(f"{path.parent.name}/{path.name} @ {options.budget // 1000}k",
                                    f"real logs @ {options.budget:,}", _as_replay_would(_read(path), options)))
    return found


def design_agents() -> list[Transcript]:
    found = []
    for agent in range(1, 9):
        lines = [{"role": "system", "content": subagents.SYSTEM_PROMPT}, *subagents.subagent_messages(agent)]
        data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
        [transcript] = read_transcripts(f"subagent_{agent}", io.BytesIO(data), "anthropic")
        found.append(Transcript(f"subagent_{agent}", "DESIGN §7 sub-agents",
                                _as_given([transcript.materialize()], LARGE)))
    return found


def generated(sizes: tuple[int, ...]) -> list[Transcript]:
    found = []
    for kind in agent_logs.KINDS:
        for size in sizes:
            for dialect in agent_logs.DIALECTS:
                path = agent_logs.write(kind, size, dialect)
                found.append(Transcript(path.name, f"generated {kind}", _as_given(_read(path), LARGE)))
    return found


def totals(transcript: Transcript, policy) -> dict:
    """One policy over every conversation of a transcript, as `replay --json` reports it."""
    runs = [replay(t, policy, options) for t, options in transcript.conversations]
    total = runs[0]
    for other in runs[1:]:
        total.merge(other)
    return total.to_dict(Prices())


def measure(transcripts: list[Transcript]) -> dict[str, dict[str, dict]]:
    """transcript name -> candidate -> replay figures."""
    results = {}
    for t in transcripts:
        results[t.name] = {name: totals(t, FitterPolicy(name, name, adjust)) for name, adjust in CANDIDATES.items()}
    return results


def _relative(row: dict) -> float:
    """The relative cost unrounded (`to_dict` rounds it to 4 decimals)."""
    return row["cost"] / row["total_input"] if row["total_input"] else 0.0


def choose(results: dict[str, dict[str, dict]]) -> tuple[str, dict[str, dict]]:
    """The winner by the rule in the module docstring, and each candidate's summary."""
    summary = {}
    for name in CANDIDATES:
        rows = [(by[name], by["strict"]) for by in results.values()]
        summary[name] = {
            "mean_cost": sum(_relative(r) for r, _ in rows) / len(rows),
            # Paid, not relative: sending fewer tokens for the same conversation lowers the
            # relative cost's denominator too, so a cheaper run can look a hair "costlier".
            "costlier": sum(r["cost"] > s["cost"] for r, s in rows),
            "more_rejected": sum(r["rejected"] > s["rejected"] for r, s in rows),
            "rejected": sum(r["rejected"] for r, _ in rows),
            "min_of_bound": min(r["share_of_bound"] for r, _ in rows),
            "mean_request": _pool([r for r, _ in rows])["mean_request"],
        }
    allowed = [n for n, s in summary.items() if not s["costlier"] and not s["more_rejected"]]
    cheapest = min(summary[n]["mean_cost"] for n in allowed)
    tied = [n for n in allowed if summary[n]["mean_cost"] <= cheapest * (1 + TIE)]
    return max(tied, key=lambda n: summary[n]["mean_request"]), summary


def _pool(rows: list[dict]) -> dict:
    read = sum(r["cache_read"] for r in rows)
    bound = sum(r["cache_bound"] for r in rows)
    accepted = sum(r["calls"] - r["rejected"] for r in rows)
    return {"of_bound": read / bound if bound else 1.0, "rejected": sum(r["rejected"] for r in rows),
            "mean_cost": sum(_relative(r) for r in rows) / len(rows),
            "lowest_of_bound": min(r["share_of_bound"] for r in rows),
            "mean_request": sum(r["total_input"] for r in rows) / accepted if accepted else 0.0}


def decision_table(transcripts: list[Transcript], results, summary, winner: str) -> list[str]:
    groups = list(dict.fromkeys(t.group for t in transcripts))
    lines = ["| candidate | " + " | ".join(groups) + " | all: mean rel. cost | mean request | costs more than strict on | "
             "rejected |", "|---" * (len(groups) + 5) + "|"]
    for name in CANDIDATES:
        cells = []
        for group in groups:
            pooled = _pool([results[t.name][name] for t in transcripts if t.group == group])
            cells.append(f"{pooled['mean_cost']:.3f} · {pooled['of_bound']:.0%}")
        s = summary[name]
        label = f"**{name}**" if name == winner else name
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {s['mean_cost']:.5f} | {s['mean_request']:,.0f} | {s['costlier']} | "
                     f"{s['rejected']} |")
    return lines + [""]


def target_table(transcripts: list[Transcript], results, winner: str) -> list[str]:
    lines = ["| transcripts | share of bound | lowest single transcript | rejected | mean rel. cost | "
             "mean request |", "|---|---|---|---|---|---|"]
    for group in dict.fromkeys(t.group for t in transcripts):
        group_of = [t for t in transcripts if t.group == group]
        a = _pool([results[t.name]["strict"] for t in group_of])
        b = _pool([results[t.name][winner] for t in group_of])
        lines.append(f"| {group} ({len(group_of)}) | {a['of_bound']:.1%} → {b['of_bound']:.1%} | "
                     f"{a['lowest_of_bound']:.1%} → {b['lowest_of_bound']:.1%} | "
                     f"{a['rejected']} → {b['rejected']} | {a['mean_cost']:.3f} → {b['mean_cost']:.3f} | "
                     f"{a['mean_request']:,.0f} → {b['mean_request']:,.0f} |")
    return lines + ["", "Each cell: strict → winner. *Mean request*: tokens per accepted request, what the model "
                    "still sees (the winner clears more of the old results: that is the price of the cache).", ""]


def per_transcript(transcripts: list[Transcript], results, shown: list[str]) -> list[str]:
    lines = ["| transcript | " + " | ".join(shown) + " |", "|---" * (len(shown) + 1) + "|"]
    for t in transcripts:
        cells = [f"{r['relative_cost']:.3f} · {r['share_of_bound']:.0%}" + (f" · {r['rejected']} rej." if r["rejected"] else "")
                 for r in (results[t.name][n] for n in shown)]
        lines.append(f"| {t.name} | " + " | ".join(cells) + " |")
    return lines + [""]


def policy_table(title: str, transcripts: list[Transcript]) -> list[str]:
    lines = [f"### {title}", "", "| transcript | policy | calls | rejected | over budget | largest | "
             "cache read | bound | of bound | breaks | rel. cost |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for t in transcripts:
        for name in DEFAULT_POLICIES:
            row = totals(t, POLICIES[name])
            lines.append(f"| {t.name} | {name} | {row['calls']} | {row['rejected']} | {row['over_budget']} | "
                         f"{row['max_request']:,} | {row['cache_read_share']:.1%} | {row['cache_bound_share']:.1%} | "
                         f"{row['share_of_bound']:.0%} | {row['cache_breaks']} | {row['relative_cost']:.3f} |")
    return lines + [""]


INTRO = """\
**Cache bound.** At each accepted request, the tokens of the previous accepted request that it
still sends, wherever they are in it: the same messages sent the same way (a result cleared
since then changes its message; the first message changes when it gains the trimmed-history
note). The fixed part (system prompt, tools) counts; a reuse under 1,024 tokens counts as none,
as for the cache read. A prefix cache that holds the previous request cannot give more to any
policy sending the same requests, since a token read from it is in both; a policy reaches the
bound exactly when every change it makes comes after everything it keeps. *Of bound* is the
cache read over the bound (reads and bounds are added over files before dividing); *bound* in
the tables is the bound over the total input. Relative cost is in uncached-input units (cache
write 1.25, read 0.1); rejected requests (over the window) are neither billed nor cached.

Samples and real logs are counted as `ctxfit replay` counts them: with the counter their model
calls for (the seed rule when they name none) and the part of the prompt the log does not hold,
inferred from its recorded usage. Generated logs name no model: seed rule, nothing unlogged.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "replay.md"))
    parser.add_argument("--quick", action="store_true", help="only the 1M-token generated logs")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    bundled = samples()
    small = bundled + real_logs(REAL_WIDE) + real_logs(REAL_TIGHT)
    large = design_agents() + generated((1_000_000,) if args.quick else agent_logs.SIZES)
    everything = small + large
    results = measure(everything)
    winner, summary = choose(results)
    shown = ["strict", "lowwater 0.75", "lowwater 0.6", "lowwater 0.55", "lowwater 0.5", "headroom 16", winner]
    shown = list(dict.fromkeys(shown))
    command = "python bench/replay_samples.py" + (" --quick" if args.quick else "")
    text = [
        "# Replays: choosing the default clearing policy",
        "",
        f"Generated by `{command}` on {date.today().isoformat()} in "
        f"{time.perf_counter() - started:.0f} s. Do not edit by hand.",
        "",
        f"{len(bundled)} bundled samples at budget {SMALL.budget:,}, window {SMALL.window:,}; the "
        f"{(len(small) - len(bundled)) // 2} real logs of `../shared/realworld` at budgets {REAL_WIDE.budget:,} "
        f"and {REAL_TIGHT.budget:,}, window {REAL_WIDE.window:,} (they peak at 20k-190k tokens, 13k-37k of them "
        "the prompt part the log does not hold); the eight DESIGN §7 "
        f"sub-agents and {len(large) - 8} generated logs (`bench/agent_logs.py`: sub-agent, chat and mixed, "
        f"{' and '.join(f'{s // 1_000_000}M' for s in ((1_000_000,) if args.quick else agent_logs.SIZES))} "
        f"tokens, in the anthropic, openai, claude-code and codex dialects) at budget {LARGE.budget:,}, "
        f"window {LARGE.window:,}.",
        "",
        INTRO,
        "## The candidates",
        "",
        "Each cell: mean relative cost over the group's transcripts · cache read as a share of the bound "
        "(pooled over the group). Winner (bold): the lowest mean relative cost over all "
        f"{len(everything)} transcripts among candidates that never cost more than `strict` on any transcript "
        "(in what is paid: relative cost would also count sending fewer tokens against a candidate) and "
        "never reject more; candidates within 0.1% of that lowest mean are tied, and the tie goes to the one "
        "that keeps the most context (*mean request*: tokens per accepted request, over all transcripts). `lowwater S`: once stage 1 must clear, it clears whole batches until "
        "the request is at most S of the budget. `headroom N`: until it leaves room for N more requests "
        "at the growth of the last 8. All keep the newest quarter protected.",
        "",
        *decision_table(everything, results, summary, winner),
        f"**Winner: `{winner}`.** ctxfit's default (`FitOptions()`, so `fit`, `plan`, `replay -p ctxfit`, "
        f"the library and the proxy) is `lowwater {DEFAULT_LOWWATER}`"
        + ("." if CANDIDATES[winner](LARGE) == replace(LARGE, lowwater=DEFAULT_LOWWATER, headroom=None)
           else " — NOT the winner: change `DEFAULT_LOWWATER` or say why.")
        + " The winner against the strict seed rule, per kind of transcript:",
        "",
        *target_table(everything, results, winner),
        "## Every transcript",
        "",
        "Relative cost · share of the bound (· rejected requests).",
        "",
        *per_transcript(everything, results, shown),
        "## Every policy of `ctxfit replay`",
        "",
        *policy_table("Bundled samples", bundled),
        *policy_table("DESIGN §7 sub-agents", large[:8]),
    ]
    Path(args.out).write_text("\n".join(text), encoding="utf-8")
    print(f"wrote {args.out}; winner: {winner}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
