"""Calibrated estimation profiles: characters per token for finer character classes.

A *profile* is a small versioned JSON data file::

    {"name": "cl100k", "version": 2, "description": "...", "tokenizer": "cl100k",
     "rates": {"upper": 2.7, "vowel": 4.6, ..., "other": 0.9},
     "runs": {"words": 0.2, "numbers": 1.4, "punct_runs": 0.5, "script_words": 0.7}}

where each rate is *characters per token* for one character class (`CLASSES`) and each run
weight is *tokens per run start* for one kind of run (`RUNS`: words, numbers, punctuation runs,
words of non-Latin scripts; 0 if absent). An optional ``"framing"`` gives whole tokens per tool
call, tool result or thinking block (`FRAMING_KINDS`), which the estimate adds to each message's
overhead (the `claude` profile, fitted on recorded usage, has one). A `ProfileCounter` measures a text as a vector of
character counts per class followed by run starts per kind, and turns a summed vector into
tokens with one rounding rule, the same for every profile and the same as the seed rule's:

    tokens = ceil(sum over ASCII classes of chars / rate + ASCII runs * weight)
           + ceil(sum over CJK classes of chars / rate)
           + ceil(sum over all other classes of chars / rate + script words * weight)

computed exactly (in integers). So the `seed` profile (ASCII
classes 4, CJK classes 1, everything else 2) gives DESIGN §3's ``ceil(ascii/4) + cjk +
ceil(other/2)`` exactly (its run weights are 0), and a calibrated profile rounds at most three
times too. Class counts add up exactly across texts; run starts of two texts measured apart are
at most one more per kind than of the two joined, never fewer, so summing parts errs high. The estimate
module rounds once per message and kind of content, so vectors are summed first and estimates
still add up across messages.

The character classes, the kinds of run and how a text is measured at C speed are in
`char_classes.py`; this module holds what a profile adds: its rates, the rounding rule, checking
and loading profile files.

>>> p = load_profile("seed")
>>> p.tokens(p.measure("hello, мир, 世界"))
7
>>> sorted(builtin_profiles())[:3]
['cl100k', 'claude', 'o200k']
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, cast

from ..errors import BadInput, UsageProblem
from .char_classes import CLASSES, COMPONENTS, N_CLASSES, RUNS, class_counts
from .seed import Vector

#: Kinds of block a profile may give a fixed framing cost (``"framing": {"tool_calls": 52}``:
#: whole tokens per block, added to the message's overhead by `core.costs`). A model's
#: prompt format wraps each tool call and each result in tags of its own; no text measure sees
#: them, and without a cost per block a fit inflates character rates to cover small tool rounds.
FRAMING_KINDS: tuple[str, ...] = ("tool_calls", "tool_results", "thinking")

#: Profiles of format 1 had coarser classes; each class of today falls wholly inside one of them.
LEGACY_CLASS: dict[str, str] = {
    **{c: c for c in CLASSES},
    "upper": "letter",
    "vowel": "letter",
    "rare": "letter",
    "newline": "space",
    "bracket": "punct",
    "latin1": "latin",
    "latin_ext": "latin",
    "cyrillic_ext": "cyrillic",
    "hebrew": "arabic_hebrew",
    "arabic": "arabic_hebrew",
    "cjk_punct": "han",
}
LEGACY_CLASSES = (
    "letter",
    "digit",
    "space",
    "punct",
    "latin",
    "greek",
    "cyrillic",
    "arabic_hebrew",
    "indic",
    "thai",
    "han",
    "kana",
    "hangul",
    "gen_punct",
    "symbol",
    "emoji",
    "other",
)

#: Where the built-in profiles live (package data).
PROFILES_DIR = Path(__file__).parent / "profiles"

_ASCII_CLASSES = ("upper", "vowel", "rare", "letter", "digit", "space", "newline", "bracket", "punct")
#: Which group of DESIGN §3's seed rule each class (and run count) belongs to.
SEED_GROUP: dict[str, str] = {
    **dict.fromkeys(_ASCII_CLASSES, "ascii"),
    **dict.fromkeys(("han", "cjk_punct", "kana", "hangul"), "cjk"),
    **dict.fromkeys(
        (
            "latin",
            "latin1",
            "latin_ext",
            "greek",
            "cyrillic",
            "cyrillic_ext",
            "hebrew",
            "arabic",
            "indic",
            "thai",
            "gen_punct",
            "symbol",
            "emoji",
            "other",
        ),
        "other",
    ),
    **dict.fromkeys(("words", "numbers", "punct_runs"), "ascii"),
    "script_words": "other",
}


# --- Profiles -------------------------------------------------------------------------------


class ProfileCounter:
    """A `Counter` whose vector is characters per class and run starts per kind of run
    (`COMPONENTS`), and whose rates come from a profile.

    `name` is ``profile:NAME@VERSION`` so that it never collides with a tokenizer's or the seed
    rule's cache key; `profile` is the bare NAME.
    """

    classes = COMPONENTS
    #: The components of a vector that are the seed rule's ASCII, CJK and other characters: every
    #: class lies wholly inside one of its groups, so the seed rule's counts of a text are read off
    #: the text's vector, exactly (`core.costs` reports them without measuring again).
    script_groups = tuple(
        tuple(i for i, c in enumerate(CLASSES) if SEED_GROUP[c] == group) for group in ("ascii", "cjk", "other")
    )

    def __init__(self, data: dict[str, Any], *, source: str = "<dict>") -> None:
        self.data = validate_profile(data, source=source)
        self.profile: str = self.data["name"]
        self.version: int = self.data["version"]
        self.description: str = self.data.get("description", "")
        self.tokenizer: str | None = self.data.get("tokenizer")
        self.name = f"profile:{self.profile}@{self.version}"
        rates, runs = self.data["rates"], self.data.get("runs", {})
        self.rates: tuple[float, ...] = tuple(float(rates[c]) for c in CLASSES)
        #: Tokens per run start, per kind of `RUNS` (0 where the profile gives none).
        self.runs: tuple[float, ...] = tuple(float(runs.get(r, 0)) for r in RUNS)
        #: Whole tokens per block of each kind of `FRAMING_KINDS` (only those the profile gives).
        self.framing: dict[str, int] = {k: v for k, v in self.data.get("framing", {}).items() if v}
        # Exact arithmetic in integers: within a group, tokens per unit t_i = c_i / D with D the
        # lcm of the denominators (rates and run weights are decimals, so exact fractions).
        # (Fractions, reduced, as (numerator, denominator): importing `fractions` loads
        # `decimal`, ~15 ms of every process that counts.)
        per_unit = [(i, _ratio(str(rates[c]), inverse=True)) for i, c in enumerate(CLASSES)]
        per_unit += [(N_CLASSES + i, _ratio(str(runs.get(r, 0)))) for i, r in enumerate(RUNS)]
        groups = []
        for group in ("ascii", "cjk", "other"):
            members = [(i, t) for i, t in per_unit if SEED_GROUP[COMPONENTS[i]] == group and t[0]]
            denominator = math.lcm(*(den for _i, (_num, den) in members))
            groups.append((tuple((i, num * (denominator // den)) for i, (num, den) in members), denominator))
        self._groups = tuple(groups)

    def measure(self, text: str) -> Vector:
        return class_counts(text)

    def tokens(self, vector: Vector) -> int:
        total = 0
        for members, denominator in self._groups:
            scaled = 0
            for i, per_unit in members:
                scaled += vector[i] * per_unit
            total += -(-scaled // denominator)
        return total

    def exact_tokens(self, vector: Vector) -> float:
        """The unrounded estimate (chars / rate per class plus run weights), for fitting and
        reports."""
        return sum(v / r for v, r in zip(vector, self.rates)) + sum(
            v * w for v, w in zip(vector[N_CLASSES:], self.runs)
        )

    def __repr__(self) -> str:
        return f"ProfileCounter({self.profile!r}, version={self.version})"


def _ratio(decimal: str, *, inverse: bool = False) -> tuple[int, int]:
    """A decimal number as written (`str` of a float: "0.25", "3", "1e-05") as an exact reduced
    fraction (numerator, denominator), or its inverse; as `fractions.Fraction(decimal)` gives it.

    >>> _ratio("3.75"), _ratio("3.75", inverse=True), _ratio("1e-05"), _ratio("0")
    ((15, 4), (4, 15), (1, 100000), (0, 1))
    """
    mantissa, _, exponent = decimal.lower().partition("e")
    whole, _, digits = mantissa.partition(".")
    numerator, power = int(whole + digits), int(exponent or 0) - len(digits)
    denominator = 10**-power if power < 0 else 1
    numerator *= 10**power if power > 0 else 1
    if inverse:
        numerator, denominator = denominator, numerator
    if denominator < 0:
        numerator, denominator = -numerator, -denominator
    common = math.gcd(numerator, denominator)
    return numerator // common, denominator // common


_KIND_WORDS = {str: "a string", int: "an integer", dict: "an object"}
#: Bounds on a profile's numbers: no tokenizer spends more than a few tokens on a character or
#: packs more than a few hundred into one, and numbers past these overflow the sums.
MIN_RATE, MAX_RATE = 0.01, 1000


def validate_profile(data: Any, *, source: str = "<dict>") -> dict[str, Any]:
    """Check a profile's shape; return it, or raise `BadInput` saying what is wrong.

    A profile written for the coarser classes of ctxfit 0.x (``letter``, ``space``, ``punct``,
    ``arabic_hebrew``, ... and no ``runs``) is accepted: each class of today takes the rate of
    the old class it falls in, which gives the same estimates.
    """

    def bad(problem: str) -> BadInput:
        return BadInput(source, None, f"not a ctxfit profile: {problem}")

    if not isinstance(data, dict):
        raise bad("expected a JSON object")
    for key, kind in (("name", str), ("version", int), ("rates", dict)):
        if not isinstance(data.get(key), kind) or isinstance(data.get(key), bool):
            raise bad(f"{key!r} must be {_KIND_WORDS[kind]}")
    rates = data["rates"]
    if set(rates) == set(LEGACY_CLASSES) and "runs" not in data:
        data = {**data, "rates": {c: rates[LEGACY_CLASS[c]] for c in CLASSES}}
        rates = data["rates"]
    missing = [c for c in CLASSES if c not in rates]
    unknown = [c for c in rates if c not in CLASSES]
    if missing or unknown:
        raise bad(f"rates must name exactly the classes {', '.join(CLASSES)} (missing: {missing}, unknown: {unknown})")
    for c, rate in rates.items():
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not (MIN_RATE <= rate <= MAX_RATE):
            raise bad(f"rate of {c!r} must be a number of characters per token from {MIN_RATE} to {MAX_RATE}")
    runs = data.get("runs", {})
    if not isinstance(runs, dict) or any(r not in RUNS for r in runs):
        raise bad(f"'runs' must be an object with some of the keys {', '.join(RUNS)}")
    for r, weight in runs.items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not (0 <= weight <= MAX_RATE):
            raise bad(f"weight of run {r!r} must be a number of tokens from 0 to {MAX_RATE}")
    framing = data.get("framing", {})
    if not isinstance(framing, dict) or any(k not in FRAMING_KINDS for k in framing):
        raise bad(f"'framing' must be an object with some of the keys {', '.join(FRAMING_KINDS)}")
    for k, tokens in framing.items():
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens <= MAX_RATE:
            raise bad(f"framing of {k!r} must be a whole number of tokens from 0 to {MAX_RATE}")
    return cast("dict[str, Any]", data)


def builtin_profiles() -> list[str]:
    """Names of the profiles shipped with ctxfit.

    >>> "safe" in builtin_profiles()
    True
    """
    return sorted(p.stem for p in PROFILES_DIR.glob("*.json"))


def load_profile(name_or_path: str | Path) -> ProfileCounter:
    """A built-in profile by name (``seed``, ``safe``, ``cl100k``, ...) or a profile JSON file.

    >>> load_profile("safe").profile
    'safe'
    """
    text = str(name_or_path)
    if text.endswith(".json") or "/" in text or Path(text).is_file():
        path = Path(text)
        try:
            raw = path.read_bytes()
        except OSError as error:
            raise BadInput(text, None, f"cannot read profile ({error.strerror})") from None
        source = text
    else:
        if text not in builtin_profiles():
            known = ", ".join(builtin_profiles())
            raise UsageProblem(
                f"unknown profile {text!r}; built-in profiles: {known} (or give a path to a profile .json file)"
            )
        raw = (PROFILES_DIR / f"{text}.json").read_bytes()
        source = f"built-in profile {text}"
    try:
        data = json.loads(raw)
    except ValueError as error:
        raise BadInput(source, None, f"not JSON ({error})") from None
    except RecursionError:
        raise BadInput(source, None, "not a ctxfit profile: nested far too deeply") from None
    return ProfileCounter(data, source=source)


def seed_vector(vector: Vector) -> tuple[int, int, int]:
    """A class vector folded into the seed rule's (ascii, cjk, other) (run starts ignored)."""
    folded = {"ascii": 0, "cjk": 0, "other": 0}
    for c, v in zip(CLASSES, vector):
        folded[SEED_GROUP[c]] += v
    return folded["ascii"], folded["cjk"], folded["other"]


def seed_profile() -> dict[str, Any]:
    """The DESIGN §3 rule as a profile dict (what ``profiles/seed.json`` holds)."""
    rate = {"ascii": 4, "cjk": 1, "other": 2}
    return {
        "name": "seed",
        "version": 1,
        "description": "DESIGN §3: ASCII 4 characters per token, CJK 1, everything else 2.",
        "tokenizer": None,
        "rates": {c: rate[SEED_GROUP[c]] for c in CLASSES},
        "runs": dict.fromkeys(RUNS, 0),
    }
