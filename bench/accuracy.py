"""Measure every estimate against the real tokenizers and write docs/accuracy.md.

    python bench/corpus.py                      # once: fetch and build bench/corpus/
    python bench/accuracy.py --write-profiles   # refit ctxfit_cli/counters/profiles/*.json, then report
    python bench/accuracy.py                    # report with the shipped profiles

Each kind of the corpus (a language, or code / JSON / shell output / emoji text) is split in two
halves by paragraph (see `halves`). Profiles are fitted on the first half only and
every figure in the report is measured on the second half, so no profile is scored on text it
was fitted to.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import corpus as corpus_module  # noqa: E402

from ctxfit_cli.counters.calibrate import calibrate  # noqa: E402
from ctxfit_cli.counters.seed import SEED, naive_tokens  # noqa: E402
from ctxfit_cli.counters.profiles import (  # noqa: E402
    CLASSES, PROFILES_DIR, RUNS, class_counts, load_profile, seed_profile,
)

#: Version of the shipped fitted profiles (2: finer classes and run weights; 3: refitted on a
#: corpus with Persian and emoji sequences, which version 2 under-counted).
PROFILE_VERSION = 3
from ctxfit_cli.counters.tokenizers import available_tokenizers, get_tokenizer  # noqa: E402

FAMILIES = ["cl100k", "o200k", "tekken", "qwen"]
#: Heading of the section bench/real_usage.py writes at the end of the report.
REAL_USAGE_HEADING = "## Estimates against recorded prompt growth (real logs)"
LANGUAGE_ORDER = ["en", "de", "pt", "pl", "cs", "ru", "uk", "el", "ar", "fa", "he", "hi", "mr",
                  "th", "zh", "ja", "ko", "ka", "code", "json", "shell", "emoji", "emoji_seq"]
LABEL = {"ka": "ka (Georgian, 'other' class)", "fa": "fa (Persian)", "code": "source code",
         "json": "JSON tool output", "shell": "shell output", "emoji": "emoji-heavy text",
         "emoji_seq": "emoji sequences (ZWJ, skin tones, flags, keycaps)"}


def halves(paragraphs: list[str]) -> tuple[list[str], list[str]]:
    """Paragraphs 0,1 / 2,3 / 4,5 ... go alternately to the fitting and the test half (the
    corpus alternates its sources paragraph by paragraph, so both halves get both)."""
    fit = [p for i, p in enumerate(paragraphs) if i % 4 < 2]
    test = [p for i, p in enumerate(paragraphs) if i % 4 >= 2]
    return fit, test


def pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def share(x: float) -> str:
    return f"{x * 100:.1f}%"


def count(counter, text: str) -> int:
    return counter.tokens(counter.measure(text))


def write_profiles(train: dict[str, list[str]], tokenizers: dict) -> None:
    texts = ["\n\n".join(train[k]) for k in LANGUAGE_ORDER if k in train]
    family_profiles = {}
    for name, tok in tokenizers.items():
        t0 = time.perf_counter()
        profile = calibrate(texts, tok, name=name,
                            description=f"Calibrated against {tok.description}; "
                                        "errs high on almost every paragraph.")
        profile["version"] = PROFILE_VERSION
        family_profiles[name] = profile
        print(f"calibrated {name} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    seed = seed_profile()
    for name, profile in {**family_profiles, "seed": seed}.items():
        (PROFILES_DIR / f"{name}.json").write_text(
            json.dumps(profile, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    safe = {
        "name": "safe",
        "version": PROFILE_VERSION,
        "description": "Never below any shipped tokenizer profile: per class, the lowest rate of "
                       + ", ".join(family_profiles) + "; per kind of run, the highest weight.",
        "tokenizer": None,
        "rates": {c: min(p["rates"][c] for p in family_profiles.values()) for c in CLASSES},
        "runs": {r: max(p["runs"][r] for p in family_profiles.values()) for r in RUNS},
    }
    (PROFILES_DIR / "safe.json").write_text(json.dumps(safe, indent=2) + "\n", encoding="utf-8")


def throughput(test: dict[str, list[str]], profile) -> tuple[list[tuple[str, float, float]], float, float]:
    """Seed vs profile measuring time per kind (each paragraph measured as one part)."""
    rows = []
    total_seed = total_profile = 0.0
    for kind in LANGUAGE_ORDER:
        parts = test.get(kind, [])
        chars = sum(map(len, parts))
        best = {}
        for label, fn in (("seed", SEED.measure), ("profile", profile.measure)):
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                for part in parts:
                    fn(part)
                times.append(time.perf_counter() - t0)
            best[label] = min(times)
        rows.append((kind, chars / best["seed"] / 1e6, chars / best["profile"] / 1e6))
        total_seed += best["seed"]
        total_profile += best["profile"]
    all_chars = sum(sum(map(len, test.get(k, []))) for k in LANGUAGE_ORDER)
    return rows, all_chars / total_seed / 1e6, all_chars / total_profile / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write-profiles", action="store_true",
                        help="refit the tokenizer profiles and safe on the first halves")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "accuracy.md")
    args = parser.parse_args()

    data = corpus_module.load()
    if not data:
        sys.exit("no corpus: run python bench/corpus.py first")
    kinds = [k for k in LANGUAGE_ORDER if k in data]
    train = {k: halves(data[k])[0] for k in kinds}
    test = {k: halves(data[k])[1] for k in kinds}
    have = available_tokenizers()
    tokenizers = {n: get_tokenizer(n) for n in FAMILIES if have.get(n)}
    missing = [n for n in FAMILIES if not have.get(n)]

    if args.write_profiles:
        write_profiles(train, tokenizers)
    profile_names = [n for n in FAMILIES if (PROFILES_DIR / f"{n}.json").exists()] + ["safe"]
    profiles = {n: load_profile(n) for n in ["seed", *profile_names]}

    # Exact counts on the test halves.
    files = {k: "\n\n".join(test[k]) for k in kinds}
    vectors = {k: class_counts(files[k]) for k in kinds}
    par_vectors = {k: [class_counts(p) for p in test[k]] for k in kinds}
    exact = {t: {k: count(tok, files[k]) for k in kinds} for t, tok in tokenizers.items()}
    par_exact = {t: {k: [count(tok, p) for p in test[k]] for k in kinds}
                 for t, tok in tokenizers.items()}

    def file_error(profile_name: str, t: str, k: str) -> float:
        return profiles[profile_name].tokens(vectors[k]) / exact[t][k] - 1

    def paragraph_stats(profile_name: str, t: str, k: str) -> tuple[float, float, float]:
        p = profiles[profile_name]
        errors = [p.tokens(v) / e - 1 for v, e in zip(par_vectors[k], par_exact[t][k]) if e]
        return (sum(x < 0 for x in errors) / len(errors),
                sum(x < -0.10 for x in errors) / len(errors), min(errors))

    lines: list[str] = []
    out = lines.append
    out("# Accuracy of ctxfit's token estimates\n")
    out("Generated by `python bench/accuracy.py` (profiles refitted with `--write-profiles`) on "
        "the corpus built by `python bench/corpus.py`. Do not edit by hand.\n")
    out("**Method.** Every kind of text is split by paragraph into two halves; the profiles were "
        "fitted on the first half and every number below is measured on the **second half** "
        "only. *Whole-file error* is the signed error of the estimate for the whole half "
        "(estimate ÷ exact − 1: negative = under-estimate, the dangerous direction). Paragraphs "
        "are the corpus paragraphs (≥ 200 characters), each counted on its own. `÷4` is chars ÷ 4; "
        "`seed` is the DESIGN §3 rule (ASCII 4, CJK 1, other 2 chars/token).\n")
    out("**Corpus.** Debian's translated package descriptions (DDTP) and gettext catalogues of "
        "Debian packages for the languages, the Python standard library for code, real command "
        "output on a Debian machine for JSON and shell text, emoji-heavy text made by "
        "inserting emoji (skin tones, ZWJ sequences, flags) into English and Russian "
        "descriptions, and text made mostly of emoji sequences (ZWJ families and professions "
        "with skin tones, couples, country and subdivision flags, keycaps) with a few English "
        "and Persian words. Characters per kind (test half): "
        + ", ".join(f"{k} {len(files[k]):,}" for k in kinds) + ".\n")
    if missing:
        out(f"Tokenizers not installed when this report was made: {', '.join(missing)}.\n")
    out("**Persian and emoji sequences (issue 11).** The version-2 profiles, fitted before these "
        "two kinds were in the corpus, under-counted them on the same test halves: emoji "
        "sequences by 17.5% (cl100k), 5.2% (o200k) and 26.1% (tekken) — and `safe` by 14.5% "
        "against Tekken — and Persian by 14.4% (Qwen's profile against its tokenizer). The "
        "version-3 profiles below are fitted with them.\n")

    # Summary against targets.
    out("## Targets (issue 5)\n")
    out("| profile | against | files under | paragraphs under by >10% | mean file over-estimate "
        "| worst file | worst paragraph |")
    out("|---|---|---|---|---|---|---|")
    summary = {}
    for t in tokenizers:
        for pname in ([t] if t in profiles else []) + ["safe"]:
            errs = [file_error(pname, t, k) for k in kinds]
            stats = [paragraph_stats(pname, t, k) for k in kinds]
            n_par = sum(len(par_exact[t][k]) for k in kinds)
            under10 = sum(s[1] * len(par_exact[t][k]) for s, k in zip(stats, kinds)) / n_par
            under_files = [k for k, e in zip(kinds, errs) if e < 0]
            summary[(pname, t)] = (under_files, under10, statistics.mean(errs))
            out(f"| {pname} | {t} | {len(under_files)}"
                + (f" ({', '.join(under_files)})" if under_files else "")
                + f" | {share(under10)} | {pct(statistics.mean(errs))} | {pct(min(errs))} "
                f"| {pct(min(s[2] for s in stats))} |")
    out("")
    out("Targets: for each profile against its own tokenizer, no file under, ≤ 2% of paragraphs "
        "under by more than 10%, mean whole-file over-estimate ≤ 12%; `safe` under-estimates no "
        "file for any tokenizer.\n")
    own_rows = {t: v for (p, t), v in summary.items() if p == t}
    safe_rows = {t: v for (p, t), v in summary.items() if p == "safe"}
    verdict = [
        ("no file under (own tokenizer)", all(not v[0] for v in own_rows.values())),
        ("≤ 2% of paragraphs under by >10% (own tokenizer)",
         all(v[1] <= 0.02 for v in own_rows.values())),
        ("mean whole-file over-estimate ≤ 12% (own tokenizer)",
         all(v[2] <= 0.12 for v in own_rows.values())),
        ("safe: no file under for any tokenizer", all(not v[0] for v in safe_rows.values())),
    ]
    out("**Verdict.** " + "; ".join(f"{name}: {'met' if ok else '**not met**'}"
                                    for name, ok in verdict) + ".\n")
    if not verdict[2][1]:
        out("The mean over-estimate target conflicts with the paragraph target: with one rate per "
            "character class, paragraphs of 200+ characters scatter around the fit (word length, "
            "numbers and markup vary from paragraph to paragraph), and pushing all but 2% of them "
            "above −10% lifts whole files to +6% at the least and +15% on average. The paragraph "
            "guarantee is kept, since an estimate that errs low is the failure ctxfit exists to "
            "prevent; a user who wants less margin can fit their own profile "
            "(`ctxfit calibrate`) on their own text.\n")

    for t, tok in tokenizers.items():
        out(f"## {t}: {tok.description}\n")
        out("Whole-file signed error of each estimate (test half).\n")
        header = ["kind", "chars/token", "÷4", "seed", *profile_names]
        out("| " + " | ".join(header) + " |")
        out("|" + "---|" * len(header))
        for k in kinds:
            chars = len(files[k])
            cells = [LABEL.get(k, k), f"{chars / exact[t][k]:.2f}",
                     pct(naive_tokens(chars) / exact[t][k] - 1), pct(file_error("seed", t, k))]
            cells += [pct(file_error(p, t, k)) for p in profile_names]
            out("| " + " | ".join(cells) + " |")
        out("")
        own = t if t in profiles else "safe"
        out(f"Paragraphs (test half): share under-estimated (any amount / by more than 10%) and "
            f"the worst paragraph, for seed, the `{own}` profile and `safe`.\n")
        header = ["kind", "paragraphs", "seed under", "seed worst", f"{own} under",
                  f"{own} >10% under", f"{own} worst", "safe under", "safe worst"]
        out("| " + " | ".join(header) + " |")
        out("|" + "---|" * len(header))
        for k in kinds:
            s, p, sf = (paragraph_stats(x, t, k) for x in ("seed", own, "safe"))
            out(f"| {LABEL.get(k, k)} | {len(test[k])} | {share(s[0])} | {pct(s[2])} | "
                f"{share(p[0])} | {share(p[1])} | {pct(p[2])} | {share(sf[0])} | {pct(sf[2])} |")
        out("")

    # Rates.
    def weights(heading: str, names, values) -> None:
        """One row per class or run, one column per profile."""
        out(f"| {heading} | " + " | ".join(profiles) + " |")
        out("|---|" + "---|" * len(profiles))
        for i, name in enumerate(names):
            out(f"| {name} | " + " | ".join(f"{values(p)[i]:g}" for p in profiles.values()) + " |")
        out("")

    out("## Profile rates (characters per token)\n")
    weights("class", CLASSES, lambda p: p.rates)
    out("Run weights (tokens per run start):\n")
    weights("run", RUNS, lambda p: p.runs)

    # Throughput.
    rows, seed_rate, profile_rate = throughput(test, profiles["safe"])
    out("## Speed: profile vs seed\n")
    out("Millions of characters per second measuring each test paragraph (about 450 characters) "
        "as one text part (best of 5, one core). All profiles share the same measuring code. "
        "Strings this short take the pure-Python path (numpy pays off from 512 characters on); "
        "the issue-5 throughput target is measured on mixed text and on tool-result-sized pieces "
        "in `docs/profile_speed.md` (`python bench/profile_speed.py`).\n")
    out("| kind | seed | profile | profile ÷ seed |")
    out("|---|---|---|---|")
    for kind, s, p in rows:
        out(f"| {LABEL.get(kind, kind)} | {s:,.0f} | {p:,.0f} | {p / s:.2f} |")
    out(f"| **whole corpus** | {seed_rate:,.0f} | {profile_rate:,.0f} | "
        f"{profile_rate / seed_rate:.2f} |")
    out("")
    out("The seed rule answers pure-ASCII text in constant time (`str.isascii` is a flag "
        "CPython keeps on every string); a profile must read the text: nine ASCII classes and "
        "three kinds of run start cost about a dozen C-level passes (`translate`, `count`), which "
        "on paragraph-sized strings is dominated by per-call overhead. This is the price of the "
        "finer features that bring the mean over-estimate down (see Targets).\n")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    # The section on recorded usage is written by bench/real_usage.py --doc: keep it.
    kept = ""
    if args.out.exists() and REAL_USAGE_HEADING in (old := args.out.read_text(encoding="utf-8")):
        kept = "\n\n" + REAL_USAGE_HEADING + old.split(REAL_USAGE_HEADING, 1)[1].rstrip("\n") + "\n"
    args.out.write_text("\n".join(lines) + kept, encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    for (pname, t), (under_files, under10, mean) in summary.items():
        print(f"{pname:7s} vs {t:7s} files under {under_files} par>10% {share(under10)} "
              f"mean {pct(mean)}", file=sys.stderr)


if __name__ == "__main__":
    main()
