"""Speed of calibrated profiles against the seed rule (issue 5: a profile estimates at ≥ 50% of
the seed rule's throughput), and a check that measuring gives the same vectors as before.

    python bench/profile_speed.py [--mb 2] [--repeat 7] [--kind-kb 500] [--no-doc]
    python bench/profile_speed.py --check [--baseline REV]

Compared side by side on the same text, repetitions interleaved, fresh string objects every run
(CPython caches a string's UTF-8 form once something asks for it; strings read from a transcript
have no such cache):

- seed: `SEED.tokens(SEED.measure(s))`, the DESIGN §3 rule;
- each built-in profile: `p.tokens(p.measure(s))`, with numpy (when importable) and with the
  pure-Python fallback forced (`char_classes.USE_NUMPY = False`).

On (a) one ~2 MB mixed string (Russian, Chinese, Japanese, Korean, English, Python code, JSON,
shell output, a few emoji, in paragraphs of one kind each), (b) the same text cut into 2-20 KB
pieces (tool-result sized), and (c) each kind of text on its own. The seed rule costs nothing on
pure-ASCII strings (`str.isascii` is a flag CPython keeps), so no profile can reach half its
throughput there; the per-kind table shows the absolute speeds.

`--check` measures every text of bench/corpus/*.jsonl, every string of sample_transcripts/*.jsonl
(and of the mixed text and its pieces), whole and cut into random pieces, with the current
`class_counts` on each path and with `class_counts` of ctxfit_cli/profiles.py at git revision
`--baseline` (before the speed work), and fails unless every vector is identical.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from random import Random

import _common as c

sys.path.insert(0, str(c.ROOT / "sample_transcripts"))

import textgen  # noqa: E402

from ctxfit_cli.counters import char_classes, profiles  # noqa: E402
from ctxfit_cli.counters.seed import SEED  # noqa: E402

DOC = c.ROOT / "docs" / "profile_speed.md"
TARGET = 0.5
#: profiles.py as it was before the speed work (the reference for --check).
BASELINE = "fbfe2fd"

KOREAN = [
    "선장은 오랫동안 창가에 서서 강 위로 안개가 피어오르는 것을 바라보았다.",
    "그녀는 편지를 탁자 위에 올려놓았지만 끝내 열어 볼 용기가 나지 않았다.",
    "작은 마을에서는 모두가 서로를 알았고, 소문은 바람보다 빨리 퍼졌다.",
    "이 함수는 수정 시간 순으로 정렬된 파일 목록을 반환합니다.",
    "매개변수가 지정되지 않으면 설정 파일의 기본값이 사용됩니다.",
    "비가 사흘째 그치지 않아 방앗간으로 가는 길이 완전히 진흙탕이 되었다.",
    "저녁이 되자 집에 손님들이 모였고, 할머니는 오래된 주전자를 꺼내 오셨다.",
]
EMOJI = ["✅", "🎉", "🚀", "👍", "🙂", "❤️", "🔥", "⚠️", "👋🏽", "🇩🇪", "👨‍👩‍👧"]


def korean(n: int, seed: str) -> str:
    rng = Random(f"ctxfit-bench-ko:{seed}")
    out, size = [], 0
    while size < n:
        s = rng.choice(KOREAN)
        out.append(s)
        size += len(s) + 1
    return " ".join(out)[:n]


def sprinkle(text: str, rng: Random, every: int = 400) -> str:
    """A few emoji at sentence ends, about one per `every` characters."""
    parts = text.split(". ")
    return ". ".join(p + (" " + rng.choice(EMOJI) if rng.random() < 80 / every else "") for p in parts)


#: kind -> (generator of about n characters, weight in the mixed text)
KINDS = {
    "ru": (lambda n, s: textgen.russian(n, s), 0.18),
    "zh": (lambda n, s: textgen.chinese(n, s), 0.12),
    "ja": (lambda n, s: textgen.japanese(n, s), 0.08),
    "ko": (korean, 0.05),
    "en": (lambda n, s: textgen.english(n, s), 0.17),
    "code": (lambda n, s: textgen.python_source(n, s), 0.15),
    "json": (lambda n, s: textgen.json_output(n, s), 0.12),
    "shell": (lambda n, s: textgen.shell_output(n, s), 0.13),
}


def mixed_text(n_bytes: int, seed: str = "profile-speed") -> str:
    """About `n_bytes` of UTF-8: paragraphs of 1-8 KB of one kind each; emoji in some prose."""
    rng = Random(seed)
    names = list(KINDS)
    weights = [KINDS[k][1] for k in names]
    out, size, i = [], 0, 0
    while size < n_bytes:
        k = rng.choices(names, weights)[0]
        piece = KINDS[k][0](rng.randint(1_000, 8_000), f"{seed}:{i}")
        if k in ("ru", "en", "ko") and rng.random() < 0.4:
            piece = sprinkle(piece, rng)
        out.append(piece)
        size += len(piece.encode("utf-8")) + 2
        i += 1
    return "\n\n".join(out)


def kind_text(kind: str, n_bytes: int) -> str:
    out, size, i = [], 0, 0
    while size < n_bytes:
        piece = KINDS[kind][0](8_000, f"kind:{i}") if kind != "emoji" else sprinkle(
            textgen.english(8_000, f"emoji:{i}"), Random(i), every=60)
        out.append(piece)
        size += len(piece.encode("utf-8")) + 2
        i += 1
    return "\n\n".join(out)


def fresh(s: str) -> str:
    return s[:-1] + s[-1:]


def modes() -> list[tuple[str, bool]]:
    """(label, USE_NUMPY) for the paths this installation has."""
    out = [("python", False)]
    if char_classes._numpy() is not None:  # (imported here: ctxfit imports it only once it pays)
        out.insert(0, ("numpy", True))
    return out


def set_mode(use_numpy: bool) -> None:
    char_classes.USE_NUMPY = use_numpy


def time_texts(texts: dict[str, list[str]], repeat: int, names: list[str]) -> dict:
    """Median seconds per (contender, text set); contenders interleaved within each repetition."""
    counters = {name: profiles.load_profile(name) for name in names}
    contenders: list[tuple[str, object, bool | None]] = [("seed", SEED, None)]
    for label, flag in modes():
        contenders += [(f"{name} ({label})", counters[name], flag) for name in names]
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(repeat):
        for key, strings in texts.items():
            for cname, counter, flag in contenders:
                if flag is not None:
                    set_mode(flag)
                ss = [fresh(s) for s in strings]
                measure, tokens = counter.measure, counter.tokens
                times.setdefault((cname, key), []).append(
                    c.clock(lambda: [tokens(measure(s)) for s in ss]))
    set_mode(True)
    return {k: c.median(v) for k, v in times.items()}, [n for n, _, _ in contenders]


def speed(args) -> None:
    names = profiles.builtin_profiles()
    text = mixed_text(int(args.mb * 1e6))
    chunks = c.pieces(text)
    mb = len(text.encode("utf-8")) / 1e6
    kinds = {k: kind_text(k, int(args.kind_kb * 1e3)) for k in [*KINDS, "emoji"]}
    kind_mb = {k: len(t.encode("utf-8")) / 1e6 for k, t in kinds.items()}

    med, contenders = time_texts({"whole": [text], "pieces": chunks}, args.repeat, names)
    seed_w, seed_p = med["seed", "whole"], med["seed", "pieces"]
    rows = []
    for cname in contenders:
        w, p = med[cname, "whole"], med[cname, "pieces"]
        rows.append([cname, c.fmt_s(w), f"{mb / w:,.0f}", f"{seed_w / w:.2f}×",
                     c.fmt_s(p), f"{mb / p:,.0f}", f"{seed_p / p:.2f}×"])
    t1 = c.table(["counter", "whole: median", "MB/s", "÷ seed", f"{len(chunks)} pieces: median",
                  "MB/s", "÷ seed"], rows)

    kmed, _ = time_texts({k: [t] for k, t in kinds.items()}, args.repeat, names)
    # Per kind, one profile per path (every profile measures with the same code).
    per_kind = ["seed"] + [f"cl100k ({label})" for label, _ in modes()]
    krows = []
    for k in kinds:
        row = [k, f"{kind_mb[k]:.2f}"]
        for cname in per_kind:
            row.append(f"{kind_mb[k] / kmed[cname, k]:,.0f}")
        for cname in per_kind[1:]:
            row.append(f"{kmed['seed', k] / kmed[cname, k]:.2f}×")
        krows.append(row)
    t2 = c.table(["kind", "MB", *(f"{n} MB/s" for n in per_kind), *(f"{n} ÷ seed" for n in per_kind[1:])],
                 krows)

    verdicts = []
    for label, _ in modes():
        worst = min(min(seed_w / med[f"{n} ({label})", "whole"], seed_p / med[f"{n} ({label})", "pieces"])
                    for n in names)
        verdicts.append(f"{label}: worst profile ÷ seed {worst:.2f}× → "
                        f"{'PASS' if worst >= TARGET else 'FAIL'}")
    head = (f"Mixed text: {len(text):,} characters, {mb:.2f} MB of UTF-8; pieces = the same text cut into "
            f"{len(chunks)} strings of 2–20 KB. Medians of {args.repeat} interleaved runs; MB/s = MB of "
            f"UTF-8 per second; ÷ seed = profile throughput as a share of the seed rule's.")
    print(head)
    print(t1)
    print("Per kind (~%d KB each):" % args.kind_kb)
    print(t2)
    print("Target ≥ %.1f× of seed (whole and pieces):" % TARGET, "; ".join(verdicts))
    if args.no_doc:
        return
    import datetime as dt

    body = (f"# Profile speed\n\nGenerated by `python bench/profile_speed.py`; do not edit by hand.\n\n"
            f"{__doc__.split(chr(10) * 2, 2)[2].strip()}\n\n"
            f"**Command** (run {dt.datetime.now():%Y-%m-%d %H:%M}, {c.machine()}):\n\n"
            f"```\n{c.command_line()}\n```\n\n{head}\n\n{t1}\n\n"
            f"Per kind of text (~{args.kind_kb:g} KB each, one string; `cl100k` stands for every "
            f"profile, they all measure with the same code):\n\n{t2}\n\n"
            f"**Target** (issue 5): a calibrated profile estimates at ≥ 50% of the seed rule's "
            f"throughput, on the mixed text whole and in pieces. "
            + "; ".join(v.replace("PASS", "**PASS**").replace("FAIL", "**FAIL**") for v in verdicts)
            + ".\n")
    DOC.write_text(body, encoding="utf-8")
    print(f"wrote {DOC.relative_to(c.ROOT)}")


# --- --check ---------------------------------------------------------------------------------


def baseline_class_counts(rev: str):
    source = subprocess.run(["git", "show", f"{rev}:ctxfit_cli/profiles.py"], cwd=c.ROOT, check=True,
                            capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader("ctxfit_cli._profiles_baseline", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "ctxfit_cli"
    module.__file__ = str(c.ROOT / "ctxfit_cli" / "profiles.py")
    exec(compile(source, f"{rev}:ctxfit_cli/profiles.py", "exec"), module.__dict__)
    return module.class_counts


def strings_of(value, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            out.append(k)
            strings_of(v, out)
    elif isinstance(value, list):
        for v in value:
            strings_of(v, out)


def check_texts() -> dict[str, list[str]]:
    sets: dict[str, list[str]] = {}
    for path in sorted((c.ROOT / "bench" / "corpus").glob("*.jsonl")):
        sets[f"corpus/{path.name}"] = [json.loads(line)["text"] for line in path.open(encoding="utf-8")
                                       if line.strip()]
    for path in sorted((c.ROOT / "sample_transcripts").glob("*.json*")):
        strings: list[str] = []
        raw = path.read_text(encoding="utf-8")
        for line in (raw.splitlines() if path.suffix == ".jsonl" else [raw]):
            if line.strip():
                strings_of(json.loads(line), strings)
        strings.append(raw)
        sets[f"sample_transcripts/{path.name}"] = strings
    mixed = mixed_text(1_000_000, seed="check")
    sets["mixed text and pieces"] = [mixed, *c.pieces(mixed, seed=5)]
    sets["per kind"] = [kind_text(k, 100_000) for k in [*KINDS, "emoji"]]
    return sets


def check(args) -> int:
    old = baseline_class_counts(args.baseline)
    paths = [label for label, _ in modes()]
    rng = Random(7)
    n_strings = n_chars = bad = 0
    for name, strings in check_texts().items():
        whole = "\n\n".join(strings)
        cut = []
        i = 0
        while i < len(whole):  # random cuts, anywhere (also inside a paragraph or a word)
            n = rng.choice((1, 7, 60, 500, 3_000, 40_000))
            cut.append(whole[i:i + n])
            i += n
        todo = [*strings, whole, *cut]
        set_bad = 0
        for s in todo:
            want = old(s)
            for label, flag in modes():
                set_mode(flag)
                got = char_classes.class_counts(s)
                if got != want:
                    set_bad += 1
                    if set_bad <= 3:
                        print(f"  MISMATCH in {name} ({label}) on {s[:60]!r}...: {got} != {want}")
            set_mode(True)
        n_strings += len(todo)
        n_chars += sum(map(len, todo))
        bad += set_bad
        print(f"{name}: {len(todo):,} strings, {sum(map(len, todo)):,} characters: "
              f"{'identical' if not set_bad else f'{set_bad} MISMATCHES'}")
    print(f"checked {n_strings:,} strings ({n_chars:,} characters) on paths {', '.join(paths)} against "
          f"profiles.py at {args.baseline}: {'all identical' if not bad else f'{bad} mismatches'}")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=2.0, help="size of the mixed text in MB of UTF-8")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--kind-kb", type=float, default=500, help="size of each per-kind text in KB")
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/profile_speed.md")
    ap.add_argument("--check", action="store_true", help="compare vectors with the baseline instead")
    ap.add_argument("--baseline", default=BASELINE, help="git revision of the reference profiles.py")
    args = ap.parse_args()
    if args.check:
        return check(args)
    speed(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
