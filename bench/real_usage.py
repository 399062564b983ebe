"""Estimates against the prompt sizes real logs recorded, and the `claude` profile fitted on them.

    python bench/real_usage.py                       # report (stdout, markdown)
    python bench/real_usage.py --write-profile       # refit profiles/claude.json, then report
    python bench/real_usage.py --doc docs/accuracy.md   # and put it in docs/accuracy.md

For every log in ../shared/realworld/ that records usage (Claude Code, Codex, OpenHands), each pair of
consecutive model calls gives one sample: the messages added between the calls (read by
ctxfit's reader) against the growth of the prompt the model itself recorded. A counter's ratio
is its estimate of those messages ÷ the recorded growth (1.00 = exact, below 1 = under-count,
the dangerous direction). Pairs that grew by fewer than `MIN_GROWTH` tokens are left out of
the scores (a few tokens of framing decide their ratio).

**Held out.** The `claude` profile is scored on each Claude Code log by a fit made on the
*other* Claude Code logs only (leave one log out; a sub-agent log and its parent session count
as one, since they share text), so no figure of the `claude` column comes from a log it was
fitted on. The shipped `claude` profile is fitted on all of them.

Also reported per conversation: the unlogged fixed part (first recorded prompt minus the
estimate of what precedes it) and the estimate of the last call's prompt (fixed part +
messages, with the `claude` profile) against the recorded one. Then what the form of the profile
rests on, measured: the framing per tool block (held out with and without it), the pairs per
conversation and per model, whether earlier turns' thinking is in the prompt, and the trade-off
between the pairs' target and the last call's error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from ctxfit_cli.core.costs import total_tokens  # noqa: E402
from ctxfit_cli.core.usage import (  # noqa: E402
    MIN_GROWTH, call_estimates, growth_estimate, growth_samples, infer_fixed,
)
from ctxfit_cli.counters.calibrate import GROWTH_UNDER_SHARE, calibrate_from_growth  # noqa: E402
from ctxfit_cli.counters.profiles import CLASSES, PROFILES_DIR, RUNS, ProfileCounter, load_profile  # noqa: E402
from ctxfit_cli.formats import read_transcripts  # noqa: E402
from ctxfit_cli.formats.usage import claude_code_call  # noqa: E402

REALWORLD = ROOT.parent / "shared" / "realworld"
PROFILES = ["seed", "cl100k", "o200k", "tekken", "qwen", "safe"]
#: Logs of one session (a sub-agent and its parent) are held out together.
SESSION = {"spotter_4d5611e5_agent-a2898e3.jsonl": "spotter_4d5611e5.jsonl"}
CLAUDE_DESCRIPTION = ("Calibrated on the recorded prompt growth of real Claude Code sessions "
                      "(Opus 4.6, Sonnet 4/4.5, Haiku 4.5; bench/real_usage.py): character rates "
                      "and a fixed cost per tool call and per tool result (the tags Claude's prompt "
                      "format wraps them in); classes too rare in those logs keep the rates of the "
                      "safe profile.")


def conversations(path: Path) -> list:
    """The conversations of a log, materialized, with `calls` filled."""
    with open(path, "rb") as stream:
        found = [t.materialize() for t in read_transcripts(str(path), stream)]
    if found and found[0].format == "claude-code" and not any(t.calls for t in found):
        _claude_calls(path, found)
    return found


def _claude_calls(path: Path, found: list) -> None:
    """Calls of a Claude Code log for a reader that does not fill them: each reply (one
    `message.id`) belongs to the assistant message holding its first record."""
    first_line: dict[str, tuple[int, dict]] = {}
    sidechain = None
    with open(path, encoding="utf-8") as f:
        for line_number, line in enumerate(f, 1):
            value = json.loads(line)
            if value.get("type") not in ("user", "assistant"):
                continue
            sidechain = bool(value.get("isSidechain")) if sidechain is None else sidechain
            if bool(value.get("isSidechain")) != sidechain or value.get("type") != "assistant":
                continue
            key = str(value.get("message", {}).get("id") or line_number)
            first_line.setdefault(key, (line_number, value))
    for t in found:
        starts = [(m.line, i) for i, m in enumerate(t.messages) if m.role.value == "assistant"]
        last_line = t.messages[-1].line if t.messages else 0
        for line_number, value in sorted(first_line.values(), key=lambda x: x[0]):
            if not starts or line_number < starts[0][0] or line_number > max(last_line, starts[-1][0]):
                continue
            owner = max(i for start, i in starts if start <= line_number)
            call = claude_code_call(value, owner)
            if call is not None and not any(c.message == owner for c in t.calls):
                t.calls.append(call)


#: The folders of ../shared/realworld whose logs record usage.
RECORDING = ("claude-code", "codex", "openhands")


def logs() -> list[Path]:
    return sorted(p for p in REALWORLD.glob("*/*.json*") if p.parent.name in RECORDING)


def score(samples, counter) -> dict:
    """Aggregate ratio, median ratio, share of pairs under by more than 10%."""
    kept = [s for s in samples if s.recorded >= MIN_GROWTH]
    if not kept:
        return {"pairs": 0}
    ratios = sorted(growth_estimate(s, counter) / s.recorded for s in kept)
    return {
        "pairs": len(kept),
        "ratio": sum(growth_estimate(s, counter) for s in kept) / sum(s.recorded for s in kept),
        "median": ratios[len(ratios) // 2],
        "under10": sum(r < 0.9 for r in ratios) / len(ratios),
    }


#: Version of the shipped `claude` profile: 2 adds the per-block framing of tool calls and results.
CLAUDE_VERSION = 2


def fit_claude(samples, *, framing: bool = True, name: str = "claude", **options) -> dict:
    """The `claude` profile fitted on `samples`; `framing=False` fits it as version 1 did, with
    no per-block framing weight. Give variants their own `name`: estimates are cached on
    messages by counter name."""
    base = load_profile("safe")
    profile = calibrate_from_growth([s.vector for s in samples], [s.recorded - s.framing for s in samples],
                                    [session_of(s) for s in samples], name=name, base=base,
                                    blocks=[s.tool_blocks for s in samples] if framing else None,
                                    description=CLAUDE_DESCRIPTION, **options)
    profile["version"] = CLAUDE_VERSION
    return profile


def session_of(sample) -> str:
    return SESSION.get(Path(sample.path).name, Path(sample.path).name)


def held_out_fits(samples, **options) -> dict[str, ProfileCounter]:
    """One fit per session, made on the other sessions' samples only."""
    return {session: ProfileCounter(fit_claude([s for s in samples if session_of(s) != session], **options),
                                    source="held-out fit")
            for session in dict.fromkeys(session_of(s) for s in samples)}


def held_out_score(samples, fits: dict[str, ProfileCounter]) -> dict:
    """Every sample scored by the fit its session was held out of (`score`'s keys)."""
    rows = [(growth_estimate(s, fits[session_of(s)]), s.recorded) for s in samples if s.recorded >= MIN_GROWTH]
    return {"pairs": len(rows), "ratio": sum(e for e, _ in rows) / sum(r for _, r in rows),
            "under10": sum(e / r < 0.9 for e, r in rows) / len(rows)}


def last_call_errors(data: dict, counter) -> list[tuple[str, float]]:
    """(conversation, error of the last call's estimate) for every Claude Code conversation
    with two or more calls."""
    out = []
    for path, (convs, _samples) in data.items():
        if path.parent.name != "claude-code":
            continue
        for t in convs:
            pairs = call_estimates(t, counter)
            if len(pairs) > 1:
                last, estimated = pairs[-1]
                out.append((conversation_name(path, t), estimated / last.prompt_tokens - 1))
    return out


def conversation_name(path: Path, t) -> str:
    return f"{path.parent.name}/{path.name[:34]}" + (f":{t.line}" if t.line > 1 else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write-profile", action="store_true",
                        help="refit ctxfit_cli/counters/profiles/claude.json on every Claude Code log")
    parser.add_argument("--doc", type=Path, default=None,
                        help="also put the report in this markdown file, replacing its section of the "
                             "same title (docs/accuracy.md)")
    args = parser.parse_args()

    measure = load_profile("seed")  # any profile measures the same components
    data = {}
    for path in logs():
        convs = conversations(path)
        samples = [s for t in convs for s in growth_samples(t, measure)]
        data[path] = (convs, samples)
    claude_logs = [p for p in data if p.parent.name == "claude-code" and data[p][1]]
    all_claude = [s for p in claude_logs for s in data[p][1]]
    if args.write_profile:
        profile = fit_claude(all_claude)
        (PROFILES_DIR / "claude.json").write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {PROFILES_DIR / 'claude.json'}", file=sys.stderr)
    counters = {name: load_profile(name) for name in PROFILES}  # seed as a profile: same vector
    if (PROFILES_DIR / "claude.json").exists():
        counters["claude"] = load_profile("claude")

    # Held-out claude fits: one per session, fitted on the others.
    fits = held_out_fits(all_claude)
    held_out = {path: fits[SESSION.get(path.name, path.name)] for path in claude_logs}

    lines: list[str] = []
    out = lines.append
    out("## Estimates against recorded prompt growth (real logs)\n")
    out("Generated by `python bench/real_usage.py --doc docs/accuracy.md` (the `claude` profile "
        "refitted with `--write-profile`). Ratio = estimate of the messages added "
        "between two consecutive model calls ÷ the growth of the prompt the model recorded "
        f"(pairs that grew by ≥ {MIN_GROWTH} tokens); aggregate over the log, and in brackets "
        "the share of pairs under-counted by more than 10%. `claude (held out)` is fitted on the "
        "other Claude Code sessions only (leave one session out); `claude` is the shipped "
        "profile, fitted on all of them (so its figures on these logs are not held out).\n")
    header = ["log", "pairs", *PROFILES, *(["claude"] if "claude" in counters else []),
              "claude (held out)"]
    out("| " + " | ".join(header) + " |")
    out("|" + "---|" * len(header))
    totals: dict[str, list] = {}
    for path, (convs, samples) in data.items():
        if not samples:
            continue
        cells = [f"{path.parent.name}/{path.name[:40]}", str(score(samples, measure)["pairs"])]
        row = dict(counters)
        if path in held_out:
            row["claude (held out)"] = held_out[path]
        for name in header[2:]:
            counter = row.get(name)
            if counter is None:
                cells.append("—")
                continue
            s = score(samples, counter)
            cells.append(f"{s['ratio']:.2f} ({s['under10'] * 100:.0f}%)" if s["pairs"] else "—")
            if path.parent.name == "claude-code":
                totals.setdefault(name, []).extend(
                    (growth_estimate(x, counter), x.recorded, growth_estimate(x, counter) / x.recorded)
                    for x in samples if x.recorded >= MIN_GROWTH)
        out("| " + " | ".join(cells) + " |")
    cells = ["**all Claude Code logs**", str(len(totals.get("seed", [])))]
    for name in header[2:]:
        rows = totals.get(name)
        if not rows:
            cells.append("—")
            continue
        ratio = sum(r[0] for r in rows) / sum(r[1] for r in rows)
        under = sum(r[2] < 0.9 for r in rows) / len(rows)
        cells.append(f"**{ratio:.3f} ({under * 100:.1f}%)**")
    out("| " + " | ".join(cells) + " |")
    out("")
    out("Target for `claude` on logs it was not fitted on: aggregate 1.00–1.25, at most 10% of "
        "pairs under by more than 10%. Codex rollouts here have all free text redacted to "
        "`[REDACTED_TEXT len=N …]` by their repository, so their ratios measure the redaction "
        "markers, not the text: they are shown for completeness only.\n")

    out("### The unlogged fixed part and the last prompt\n")
    out("Per conversation (a compaction starts a new one): the first recorded prompt, the "
        "inferred fixed part (system prompt, tools, injected context), and the estimate of the "
        "last call's prompt (fixed part + messages before it) against the recorded one, with the "
        "counter ctxfit picks for the log's model.\n")
    out("| conversation | calls | first prompt | fixed part | last recorded | last estimated | error |")
    out("|---|---|---|---|---|---|---|")
    from ctxfit_cli.counters.models import counter_for_models
    for path, (convs, _samples) in data.items():
        for t in convs:
            models = [c.model for c in t.calls if c.model]
            counter, _why = counter_for_models(models)
            pairs = call_estimates(t, counter)
            if not pairs:
                continue
            fixed = infer_fixed(t, counter)
            last, estimated = pairs[-1]
            name = conversation_name(path, t)
            out(f"| {name} | {len(pairs)} | {pairs[0][0].prompt_tokens:,} | {fixed.tokens:,} | "
                f"{last.prompt_tokens:,} | {estimated:,} | {estimated / last.prompt_tokens - 1:+.1%} |")
    out("")
    lines.extend(why_section(data, all_claude, counters["claude"], fits))
    text = "\n".join(lines)
    print(text)
    if args.doc:
        replace_section(args.doc, text)
        print(f"wrote {args.doc}", file=sys.stderr)


#: Shares of call pairs the fit may leave more than 10% under, for the trade-off table (the
#: shipped fit uses `calibrate.GROWTH_UNDER_SHARE`).
TRADE_OFF = (0.03, GROWTH_UNDER_SHARE, 0.08, 0.15, 0.3)


def why_section(data: dict, samples: list, claude, fits: dict) -> list[str]:
    """The measurements behind the `claude` profile's form, as markdown lines."""
    lines: list[str] = []
    out = lines.append
    out("### Why the pairs scatter, measured\n")
    v1 = held_out_score(samples, held_out_fits(samples, framing=False, name="claude-v1"))
    v2 = held_out_score(samples, fits)
    per_block = claude.framing.get("tool_calls", 0)
    out(f"**Framing of tool blocks.** Claude's prompt format wraps every tool call and every result "
        f"in tags of its own, which no measure of the log's text sees. Fitted with one weight per "
        f"tool block beside the character rates, the fit gives each call and each result "
        f"{per_block} tokens; held out (leave one session out) the aggregate goes from "
        f"{v1['ratio']:.3f} ({v1['under10']:.1%} of pairs under by more than 10%) without that "
        f"weight — the form of `claude` version 1, where a small tool round's fixed cost could only "
        f"be covered by inflating character rates, which then over-count every large result — "
        f"to {v2['ratio']:.3f} ({v2['under10']:.1%}) with it.\n")
    lines.extend(conversation_table(data, claude))
    lines.extend(model_table(data, claude))
    lines.extend(thinking_note(data, claude))
    rows = trade_off(data, samples)
    lines.extend(trade_off_table(rows))
    lines.extend(conclusion(v2, last_call_errors(data, claude), rows))
    return lines


def pair_rows(data: dict, counter, key) -> dict:
    """Scored pairs (≥ `MIN_GROWTH`) of the Claude Code logs grouped by ``key(path, transcript,
    sample)``: lists of (estimate, recorded)."""
    groups: dict = {}
    measure = load_profile("seed")
    for path, (convs, _samples) in data.items():
        if path.parent.name != "claude-code":
            continue
        for t in convs:
            for s in growth_samples(t, measure):
                if s.recorded >= MIN_GROWTH:
                    groups.setdefault(key(path, t, s), []).append((growth_estimate(s, counter), s.recorded))
    return groups


def summary_cells(rows: list) -> list[str]:
    ratios = sorted(e / r for e, r in rows)
    return [str(len(rows)), f"{ratios[len(ratios) // 2]:.2f}",
            f"{sum(e for e, _ in rows) / sum(r for _, r in rows):.2f}",
            f"{sum(x < 0.9 for x in ratios) / len(ratios):.0%}"]


def conversation_table(data: dict, claude) -> list[str]:
    rows = pair_rows(data, claude, lambda path, t, s: conversation_name(path, t))
    errors = dict(last_call_errors(data, claude))
    lines = ["**Per conversation** (shipped `claude` profile): what sets the last call's error is "
             "how much of the recorded growth the log does not hold. Pairs under by more than 10% "
             "are those whose prompt grew by more than their messages: hook output (PreToolUse and "
             "PostToolUse hooks run on nearly every call of the spotter sessions; the log's "
             "`hook_progress` records name each hook but hold none of its output), reminders "
             "Claude Code injects, a file a formatter changed. Every pair is held to 90% of its "
             "own growth but for a few, so a conversation with few such pairs is over-counted "
             "most.\n",
             "| conversation | pairs | median ratio | aggregate | under by >10% | last call |",
             "|---|---|---|---|---|---|"]
    for name, group in rows.items():
        error = f"{errors[name]:+.1%}" if name in errors else "—"
        lines.append("| " + " | ".join([name, *summary_cells(group), error]) + " |")
    return lines + [""]


def model_table(data: dict, claude) -> list[str]:
    rows = pair_rows(data, claude, lambda path, t, s: _pair_model(t, s))
    lines = ["**Per model** (shipped `claude` profile; a pair's two calls went to the same model, "
             "pairs across a model switch are left out): one set of rates serves all of them; "
             "a model whose median ratio stood apart would need its own.\n",
             "| model | pairs | median ratio | aggregate | under by >10% |", "|---|---|---|---|---|"]
    for model, group in sorted(rows.items()):
        lines.append("| " + " | ".join([model, *summary_cells(group)]) + " |")
    return lines + [""]


def _pair_model(t, sample) -> str:
    return next((c.model for c in t.calls if c.message == sample.message), "?")


def thinking_note(data: dict, claude) -> list[str]:
    """Do earlier turns' thinking blocks stay in the prompt? Pairs that add one say so."""
    from ctxfit_cli.core.model import PartKind
    from ctxfit_cli.core.usage import usable
    found = []  # (estimate, thinking tokens in it, recorded)
    for path, (convs, _samples) in data.items():
        for t in convs if path.parent.name == "claude-code" else ():
            calls = usable(t.calls)
            for a, b in zip(calls, calls[1:]):
                added = t.messages[a.message:b.message]
                thinking = "".join(p.text for m in added for p in m.parts if p.kind is PartKind.THINKING)
                grew = b.prompt_tokens - a.prompt_tokens
                if thinking and grew >= MIN_GROWTH and a.model == b.model:
                    estimate = total_tokens(added, claude)
                    found.append((estimate, claude.tokens(claude.measure(thinking)), grew))
    if not found:
        return []
    kept = sum(e for e, _, _ in found) / sum(r for _, _, r in found)
    stripped = sum(e - k for e, k, _ in found) / sum(r for _, _, r in found)
    return [f"**Thinking.** {len(found)} pairs add a reply with thinking blocks "
            f"({sum(k for _, k, _ in found):,} estimated tokens of thinking). Counting that "
            f"thinking, their aggregate ratio is {kept:.2f}; leaving it out (as if earlier turns' "
            f"thinking were dropped from the prompt) it would be {stripped:.2f}. The recorded growth "
            "holds the thinking, so it stays counted.\n"]


def trade_off(data: dict, samples: list) -> list[tuple[str, dict, list]]:
    """(fit, held-out score, last-call errors of the same fit made on all logs): the floors'
    fit for each share of `TRADE_OFF`, then fits to the median pair (`median_fit`)."""
    rows = []
    for share in TRADE_OFF:
        held = held_out_score(samples, held_out_fits(samples, max_under_share=share, name=f"claude-{share}"))
        full = ProfileCounter(fit_claude(samples, max_under_share=share, name=f"claude-all-{share}"))
        rows.append((f"floors, {share:.1%} may stay under", held, last_call_errors(data, full)))
    for lift in MEDIAN_LIFTS:
        fits = {session: median_fit([s for s in samples if session_of(s) != session], lift, f"median-{lift}-{session}")
                for session in dict.fromkeys(session_of(s) for s in samples)}
        full = median_fit(samples, lift, f"median-{lift}")
        rows.append((f"median pair × {lift:.2f} ({full.framing['tool_calls']} per block)",
                     held_out_score(samples, fits), last_call_errors(data, full)))
    return rows


#: How far above the median pair the median fits of the trade-off table are lifted.
MEDIAN_LIFTS = (1.0, 1.1)


def median_fit(samples, lift: float, name: str) -> ProfileCounter:
    """The `cl100k` profile's shape scaled, plus a framing per tool block, both fitted to the
    median pair (least absolute relative error, by reweighted least squares) and lifted by
    `lift`: the counter that tracks the typical pair rather than the floor every pair is held to."""
    import numpy as np
    shape = load_profile("cl100k")
    X = np.array([[shape.exact_tokens(s.vector), s.tool_blocks] for s in samples])
    y = np.array([s.recorded - s.framing for s in samples], dtype=float)
    w = np.linalg.lstsq(X, y, rcond=None)[0]
    for _ in range(300):
        weight = 1 / np.maximum(np.abs(y - X @ w), 1.0)
        w = np.linalg.lstsq(X * np.sqrt(weight)[:, None], y * np.sqrt(weight), rcond=None)[0]
    scale, per_block = float(w[0]) * lift, max(float(w[1]) * lift, 0.0)
    data = {"name": name, "version": 1,
            "rates": {c: round(r / scale, 3) for c, r in zip(CLASSES, shape.rates)},
            "runs": {r: round(x * scale, 3) for r, x in zip(RUNS, shape.runs)},
            "framing": {"tool_calls": round(per_block), "tool_results": round(per_block)}}
    return ProfileCounter(data, source="median fit")


def trade_off_table(rows: list) -> list[str]:
    header = ["fit", "held-out aggregate", "held-out under by >10%",
              *[name.split("/", 1)[1] for name, _ in rows[0][2]]]
    lines = ["**The trade-off.** The shipped fit holds every pair to 90% of its growth but for "
             f"{GROWTH_UNDER_SHARE:.1%} of them (the floors). Letting more pairs stay under lowers "
             "every estimate; a fit to the median pair (`cl100k`'s shape scaled, plus a cost per "
             "block) ignores the floors altogether. For each, the held-out pair scores and the last "
             "call's error of each Claude Code conversation (the fit made on all logs):\n",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, held, errors in rows:
        lines.append("| " + " | ".join([label, f"{held['ratio']:.3f}", f"{held['under10']:.1%}",
                                         *[f"{e:+.1%}" for _, e in errors]]) + " |")
    return lines + [""]


def meets_pair_target(score: dict) -> bool:
    return score["under10"] <= 0.10 and 1.0 <= score["ratio"] <= 1.25


def within(errors: list) -> bool:
    return all(abs(e) <= 0.10 for _, e in errors)


def conclusion(held: dict, errors: list, rows: list) -> list[str]:
    """What the figures above say about the two targets, in words."""
    over = [(name.split("/", 1)[1], e) for name, e in errors if abs(e) > 0.10]
    text = (f"**Where that leaves the targets.** Held out, the pairs "
            f"{'meet' if meets_pair_target(held) else 'miss'} theirs (aggregate {held['ratio']:.3f}, "
            f"{held['under10']:.1%} under by more than 10%). The last call's "
            f"estimate is within 10% of the recorded prompt on {len(errors) - len(over)} of "
            f"{len(errors)} Claude Code conversations")
    if over:
        text += " but not on " + ", ".join(f"{name} ({e:+.1%})" for name, e in over)
    text += "."
    both = [r for r in rows if meets_pair_target(r[1]) and within(r[2])]
    last_only = [r for r in rows if within(r[2])]
    if not both and last_only:
        label, score, _ = min(last_only, key=lambda r: r[1]["under10"])
        text += (f" No fit in the table does both. The last call alone is within reach — "
                 f"{label} puts every conversation within 10% — but leaves "
                 f"{score['under10']:.1%} of the held-out pairs more than 10% under: the pairs "
                 f"holding text the log does not (hook output, reminders) are under unless every "
                 f"pair like them is over-counted, and a conversation with little such text is "
                 f"then over-counted by that margin. The conversations differ in how much of their "
                 f"prompt the log does not hold, and nothing in these logs tells that text apart.")
    return [text + "\n"]


def replace_section(doc: Path, text: str) -> None:
    """Put `text` (which starts with its heading) in `doc` in place of the section with that
    heading and everything after it (it is the last section), or at the end."""
    heading = text.split("\n", 1)[0]
    old = doc.read_text(encoding="utf-8") if doc.exists() else ""
    head = old.split(heading, 1)[0].rstrip("\n")
    doc.write_text((head + "\n\n" if head else "") + text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
