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
messages, with the `claude` profile) against the recorded one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from ctxfit_cli.core.usage import (  # noqa: E402
    MIN_GROWTH, call_estimates, growth_estimate, growth_samples, infer_fixed,
)
from ctxfit_cli.counters.calibrate import calibrate_from_growth  # noqa: E402
from ctxfit_cli.counters.profiles import PROFILES_DIR, ProfileCounter, load_profile  # noqa: E402
from ctxfit_cli.formats import read_transcripts  # noqa: E402
from ctxfit_cli.formats.usage import claude_code_call  # noqa: E402

REALWORLD = ROOT.parent / "shared" / "realworld"
PROFILES = ["seed", "cl100k", "o200k", "tekken", "qwen", "safe"]
#: Logs of one session (a sub-agent and its parent) are held out together.
SESSION = {"spotter_4d5611e5_agent-a2898e3.jsonl": "spotter_4d5611e5.jsonl"}
CLAUDE_DESCRIPTION = ("Calibrated on the recorded prompt growth of real Claude Code sessions "
                      "(Opus 4.6, Sonnet 4/4.5, Haiku 4.5; bench/real_usage.py); classes too rare "
                      "in those logs keep the rates of the safe profile.")


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


def fit_claude(samples) -> dict:
    base = load_profile("safe")
    return calibrate_from_growth([s.vector for s in samples], [s.recorded - s.framing for s in samples],
                                 [SESSION.get(Path(s.path).name, Path(s.path).name) for s in samples],
                                 name="claude", base=base, description=CLAUDE_DESCRIPTION)


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
    held_out = {}
    for path in claude_logs:
        session = SESSION.get(path.name, path.name)
        train = [s for s in all_claude if SESSION.get(Path(s.path).name, Path(s.path).name) != session]
        held_out[path] = ProfileCounter(fit_claude(train), source="held-out fit")

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
            name = f"{path.parent.name}/{path.name[:34]}" + (f":{t.line}" if t.line > 1 else "")
            out(f"| {name} | {len(pairs)} | {pairs[0][0].prompt_tokens:,} | {fixed.tokens:,} | "
                f"{last.prompt_tokens:,} | {estimated:,} | {estimated / last.prompt_tokens - 1:+.1%} |")
    out("")
    out("The `claude` profile errs high by design (every pair but the ones holding text the log "
        "does not have should be counted at least 90%), so the estimate of a whole conversation "
        "is over the recorded prompt by about as much as its aggregate ratio, less the share of "
        "the fixed part: on these logs that is more than the 10% a user may hope for. The "
        "scatter between pairs — hook output (this user's PostToolUse hooks add compiler and "
        "linter output to many prompts, recorded by the model but absent from the log), tool "
        "framing — is what forces that margin; on fewer than 400 pairs from three sessions we "
        "found no counter that keeps both the pairs and the whole conversation within 10%.\n")
    text = "\n".join(lines)
    print(text)
    if args.doc:
        replace_section(args.doc, text)
        print(f"wrote {args.doc}", file=sys.stderr)


def replace_section(doc: Path, text: str) -> None:
    """Put `text` (which starts with its heading) in `doc` in place of the section with that
    heading and everything after it (it is the last section), or at the end."""
    heading = text.split("\n", 1)[0]
    old = doc.read_text(encoding="utf-8") if doc.exists() else ""
    head = old.split(heading, 1)[0].rstrip("\n")
    doc.write_text((head + "\n\n" if head else "") + text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
