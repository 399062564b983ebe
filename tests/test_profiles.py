"""Calibrated profiles: class counting, the seed profile, loading, and calibration."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfit_cli.counters.seed import SEED, add, script_counts
from ctxfit_cli.errors import BadInput, UsageProblem
from ctxfit_cli.counters.profiles import (
    CLASSES, COMPONENTS, LEGACY_CLASSES, N_CLASSES, RUNS, ProfileCounter, builtin_profiles,
    class_counts, load_profile, seed_vector,
)

# Text drawn from the blocks where class borders lie, plus anything at all.
_BLOCKS = [(0x20, 0x7F), (0x80, 0x800), (0x0E00, 0x0F00), (0x1100, 0x1200), (0x2000, 0x2100),
           (0x2E70, 0x3100), (0x3130, 0x3190), (0x4E00, 0x4F00), (0xA000, 0xB000),
           (0xD700, 0xD800), (0xF900, 0x10000), (0x1B000, 0x1B100), (0x1F300, 0x1FB00),
           (0x20000, 0x20100)]
_chars = st.one_of(
    *[st.integers(lo, hi - 1).map(chr) for lo, hi in _BLOCKS],
    st.characters(),  # includes lone surrogates
)
texts = st.lists(_chars, max_size=60).map("".join) | st.text(max_size=60)
SEED_PROFILE = load_profile("seed")


def test_every_builtin_profile_loads():
    names = builtin_profiles()
    assert {"seed", "safe", "cl100k"} <= set(names)
    for name in names:
        profile = load_profile(name)
        assert profile.profile == name
        assert len(profile.rates) == len(CLASSES) and len(profile.runs) == len(RUNS)
        assert profile.tokens(profile.measure("hello, мир")) > 0


def test_a_profiles_exact_rates_are_the_fractions_of_its_decimals():
    """`ProfileCounter` turns its decimal rates into exact integer ratios without `fractions`
    (its import costs every counting process ~15 ms): the very ratios `Fraction` gives."""
    import math
    from fractions import Fraction

    from ctxfit_cli.counters.profiles import SEED_GROUP

    for name in builtin_profiles():
        profile = load_profile(name)
        rates, runs = profile.data["rates"], profile.data.get("runs", {})
        per_unit = [(i, 1 / Fraction(str(rates[c]))) for i, c in enumerate(CLASSES)]
        per_unit += [(N_CLASSES + i, Fraction(str(runs.get(r, 0)))) for i, r in enumerate(RUNS)]
        groups = []
        for group in ("ascii", "cjk", "other"):
            members = [(i, t) for i, t in per_unit if SEED_GROUP[COMPONENTS[i]] == group and t]
            denominator = math.lcm(*(t.denominator for _i, t in members))
            groups.append((tuple((i, int(t * denominator)) for i, t in members), denominator))
        assert profile._groups == tuple(groups), name


def test_class_counts_examples():
    counts = dict(zip(COMPONENTS, class_counts("Ok 42 — ça, мир, 世界とハングル 한국 🙂 ❤️ ёі")))
    assert counts["upper"] == counts["rare"] == counts["vowel"] == counts["latin1"] == 1
    assert counts["digit"] == 2 and counts["cyrillic"] == 3 and counts["cyrillic_ext"] == 2
    assert counts["han"] == 2 and counts["kana"] == 5 and counts["hangul"] == 2
    assert counts["gen_punct"] == 1 and counts["emoji"] == 2 and counts["symbol"] == 1
    assert (counts["words"], counts["numbers"], counts["punct_runs"]) == (2, 1, 2)
    assert counts["script_words"] == 5  # ç, мир, 世界とハングル, 한국, ёі


def test_run_starts_examples():
    runs = lambda text: class_counts(text)[N_CLASSES:]  # noqa: E731
    assert runs("foo(bar, 42) + x1") == (3, 2, 4, 0)  # "(", ",", ")", "+"
    assert runs("Größe und Weite") == (4, 0, 0, 1)  # Gr, e, und, Weite; öß
    assert runs("") == (0, 0, 0, 0)
    assert runs("a" * 5000 + " b" * 5000) == (5001, 0, 0, 0)


@settings(max_examples=100, deadline=None)
@given(texts, texts)
def test_vectors_add_up(a, b):
    # Class counts add up exactly; a run may continue across the joint, so the parts measured
    # apart have at most one more run start of each kind, never fewer (they err high).
    whole, parts = class_counts(a + b), add(class_counts(a), class_counts(b))
    assert whole[:N_CLASSES] == parts[:N_CLASSES]
    assert all(0 <= p - w <= 1 for w, p in zip(whole[N_CLASSES:], parts[N_CLASSES:]))
    for name in builtin_profiles():
        profile = load_profile(name)
        assert profile.tokens(parts) >= profile.tokens(whole)


@settings(max_examples=100, deadline=None)
@given(texts)
def test_seed_profile_is_the_seed_rule(text):
    for t in (text, text * 40):  # * 40 takes the bulk paths (popcount, translate)
        vector = class_counts(t)
        assert sum(vector[:N_CLASSES]) == len(t)
        assert seed_vector(vector) == script_counts(t)
        assert SEED_PROFILE.tokens(vector) == SEED.tokens(SEED.measure(t))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["text", "call", "result"]), texts, texts), min_size=1, max_size=4))
def test_seed_cost_read_off_a_profiles_vectors_is_the_seed_rules(parts):
    """A replay of a big log takes the seed rule's counts off the vectors measured on other
    cores: the same estimate as the seed rule measuring every string again."""
    from ctxfit_cli.core.costs import message_cost, seed_cost_read_off
    from ctxfit_cli.core.model import Message, Part, PartKind, Role

    kinds = {"text": PartKind.TEXT, "call": PartKind.TOOL_CALL, "result": PartKind.TOOL_RESULT}
    for role in (Role.ASSISTANT, Role.USER):
        made = tuple(Part(kinds[k], text, tool=name, call_id=name[::-1]) for k, text, name in parts)
        read_off = seed_cost_read_off(Message(role, made, b""), load_profile("claude"))
        assert read_off == message_cost(Message(role, made, b""), SEED)


def test_seed_profile_on_long_mixed_text():
    rng = random.Random(3)
    pool = [chr(rng.randrange(lo, hi)) for lo, hi in _BLOCKS for _ in range(50)]
    for _ in range(50):
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(1, 3000)))
        assert SEED_PROFILE.tokens(class_counts(text)) == SEED.tokens(SEED.measure(text))
    ascii_text = "def f(x):\n    return x + 42  # ok\n" * 500  # over the popcount threshold
    counts = dict(zip(COMPONENTS, class_counts(ascii_text)))
    assert counts["upper"] + counts["vowel"] + counts["rare"] + counts["letter"] == sum(
        c.isalpha() for c in ascii_text)
    assert counts["digit"] == sum(c.isdigit() for c in ascii_text)
    assert (counts["space"], counts["newline"]) == (ascii_text.count(" "), ascii_text.count("\n"))
    assert counts["bracket"] + counts["punct"] == sum(
        not c.isalnum() and c not in " \n" for c in ascii_text)
    short = "def f(x):\n    return x + 42  # ok\n"  # the short path agrees with the long one
    assert class_counts(ascii_text) == tuple(500 * v for v in class_counts(short)[:N_CLASSES]) + (
        class_counts(ascii_text)[N_CLASSES:])
    assert class_counts(ascii_text)[N_CLASSES:] == tuple(500 * v for v in class_counts(short)[N_CLASSES:])


@settings(max_examples=50, deadline=None)
@given(texts)
def test_safe_is_never_below_a_family_profile(text):
    safe = load_profile("safe")
    vector = class_counts(text * 20)
    for name in builtin_profiles():
        family = load_profile(name)
        # safe covers the profiles fitted against a real tokenizer (not seed, not the `claude`
        # profile, which is fitted on recorded usage: bench/real_usage.py).
        if family.tokenizer:
            assert safe.exact_tokens(vector) >= family.exact_tokens(vector) - 1e-9


def test_profile_names_do_not_collide_with_tokenizers():
    assert load_profile("cl100k").name == "profile:cl100k@3"
    assert load_profile("seed").name != SEED.name


def test_profile_of_the_old_coarser_classes_still_loads():
    old = {"name": "old", "version": 1, "rates": dict.fromkeys(LEGACY_CLASSES, 2)}
    old["rates"]["letter"] = 4
    counter = ProfileCounter(old)
    assert counter.rates[CLASSES.index("upper")] == 4 and counter.runs == (0, 0, 0, 0)
    assert counter.tokens(counter.measure("Hello, world")) == 4  # ceil(10/4 + 2/2)


def test_profile_file_and_errors(tmp_path):
    good = tmp_path / "mine.json"
    good.write_text(json.dumps({"name": "mine", "version": 2, "rates": dict.fromkeys(CLASSES, 3)}))
    assert load_profile(str(good)).tokens(class_counts("abcdef")) == 2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "bad", "version": 1, "rates": {"letter": 4}}))
    with pytest.raises(BadInput, match="missing"):
        load_profile(bad)
    (tmp_path / "notjson.json").write_text("{")
    with pytest.raises(BadInput, match="not JSON"):
        load_profile(tmp_path / "notjson.json")
    with pytest.raises(UsageProblem, match="built-in profiles"):
        load_profile("no-such-profile")
    with pytest.raises(BadInput, match="from 0.01 to 1000"):
        ProfileCounter({"name": "z", "version": 1, "rates": dict.fromkeys(CLASSES, 0)})


def _framed(**framing) -> ProfileCounter:
    # A name of its own per framing: estimates are cached on messages by counter name.
    name = "framed-" + "-".join(f"{k}{v}" for k, v in framing.items())
    return ProfileCounter({"name": name, "version": 1, "rates": dict.fromkeys(CLASSES, 4),
                           "framing": framing})


def test_framing_is_added_once_per_tool_block_and_survives_merging():
    from ctxfit_cli.core.costs import block_framing, merged_cost, message_cost
    from ctxfit_cli.core.model import Message, Part, PartKind, Role
    counter = _framed(tool_calls=7, tool_results=5)
    assert block_framing(counter) == {"tool_calls": 7, "tool_results": 5} and block_framing(SEED) == {}
    calls = Message(Role.ASSISTANT, (Part(PartKind.TEXT, "abcd"), Part(PartKind.TOOL_CALL, "{}", "Bash", "id1"),
                                     Part(PartKind.TOOL_CALL, "{}", "Read", "id2")), b"")
    cost = message_cost(calls, counter)
    assert cost.by_kind["overhead"] == 4 + 2 * 7 and cost.framing == 14
    assert cost.tokens == sum(cost.by_kind.values())
    result = Message(Role.USER, (Part(PartKind.TOOL_RESULT, "x" * 40, call_id="id1"),), b"")
    one = message_cost(result, counter)
    # A result's own tokens (40 characters and its call id's 3, at 4 a token) stay apart from it.
    assert one.by_kind["overhead"] == 4 + 5 and one.results == (11,) and one.tokens == 11 + 9
    assert merged_cost([one, one], counter).by_kind["overhead"] == 4 + 2 * 5
    # Text alone is not framed, and a profile without framing adds nothing.
    assert message_cost(Message(Role.USER, (Part(PartKind.TEXT, "abcd"),), b""), counter).tokens == 1 + 4
    assert message_cost(calls, _framed()).by_kind["overhead"] == 4


@pytest.mark.parametrize("framing, problem", [
    ({"tool_use": 3}, "'framing' must be an object"), ({"tool_calls": 2.5}, "whole number"),
    ({"tool_calls": -1}, "whole number"), ({"thinking": True}, "whole number"),
])
def test_bad_framing_is_refused(framing, problem):
    with pytest.raises(BadInput, match=problem):
        _framed(**framing)


def test_shipped_claude_profile_frames_tool_calls_and_results_alike():
    claude = load_profile("claude")
    assert claude.version >= 2 and claude.name == f"profile:claude@{claude.version}"
    assert claude.framing["tool_calls"] == claude.framing["tool_results"] > 0
    assert "thinking" not in claude.framing  # too few thinking blocks in the logs to fit one
    # The other shipped profiles are fitted on text alone: no framing.
    assert all(not load_profile(name).framing for name in builtin_profiles() if name != "claude")


class _KnownRates:
    """A stand-in tokenizer whose true rates are known: letters 5, spaces 10, Cyrillic 2.5."""

    name = "known"
    rates = {"letter": 5.0, "space": 10.0, "cyrillic": 2.5}

    def measure(self, text):
        counts = dict(zip(CLASSES, class_counts(text)))
        counts["letter"] += counts["vowel"] + counts["rare"]
        return (-(-sum(2 * counts[c] / r for c, r in self.rates.items()) // 2),)

    def tokens(self, vector):
        return int(vector[0])


def test_calibrate_recovers_known_rates():
    pytest.importorskip("numpy")
    from ctxfit_cli.counters.calibrate import calibrate

    rng = random.Random(11)
    files = []
    for mix in (0.0, 0.3, 0.7, 1.0):
        paragraphs = []
        for _ in range(40):
            words = []
            while sum(map(len, words)) < 300:
                letters = "абвгдежзик" if rng.random() < mix else "abcdefghij"
                words.append("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
            paragraphs.append(" ".join(words))
        files.append("\n\n".join(paragraphs))
    tokenizer = _KnownRates()
    profile = calibrate(files, tokenizer, name="known")
    # Letters and words go together in this sample, so the fit may share the cost between the
    # letter rates and the word weight; what must hold is that it errs high, and by little.
    counter = ProfileCounter(profile)
    for text in files:
        exact = tokenizer.tokens(tokenizer.measure(text))
        assert exact <= counter.tokens(counter.measure(text)) <= 1.06 * exact
    assert 0.8 * 2.5 <= profile["rates"]["cyrillic"] <= 1.02 * 2.5 or profile["runs"]["script_words"]
    assert set(profile["fit"]["unseen_classes"]) >= {"han", "emoji"}


# --- The numpy path and the pure-Python path give the same vectors ---------------------------

from ctxfit_cli.counters import char_classes as _profiles  # noqa: E402

_astral_high = st.integers(0x40000, 0x10FFFF).map(chr)  # script letters by lead byte (UTF-32 path)
_surrogate = st.integers(0xD800, 0xDFFF).map(chr)  # lone (or paired by chance) surrogates
_mixed_texts = st.lists(
    st.one_of(_chars, _chars, _chars, _astral_high, _surrogate,
              st.sampled_from(["hello ", "42", "){", " мир", "世界", "🙂", "\U0001F1E9\U0001F1EA",
                               "\u200d", "\ufe0f", "\n"])),
    max_size=80,
).map("".join)


def _both_paths(text):
    pytest.importorskip("numpy")
    return _profiles._class_counts_python(text), _profiles._class_counts_numpy(text)


@settings(max_examples=200, deadline=None)
@given(_mixed_texts, st.integers(1, 700))
def test_numpy_path_is_the_python_path(text, times):
    python, numpy_ = _both_paths(text)
    assert numpy_ == python
    long = text * times  # long texts: numpy's pair histogram, Python's bulk passes
    assert _profiles._class_counts_numpy(long) == _profiles._class_counts_python(long)


def test_numpy_path_on_every_code_point():
    # Aligned blocks of 64 code points share their UTF-8 lead and second byte, so comparing
    # the vectors block by block compares every code point's class and kind of run.
    pytest.importorskip("numpy")
    for start in range(0, 0x110000, 64):
        block = "".join(map(chr, range(start, start + 64)))
        assert _profiles._class_counts_numpy(block) == _profiles._class_counts_python(block), hex(start)
    everything = "".join(map(chr, range(0x10000))) + "".join(map(chr, range(0x10000, 0x110000, 97)))
    assert _profiles._class_counts_numpy(everything) == _profiles._class_counts_python(everything)


@pytest.mark.parametrize("use_numpy", [True, False])
def test_class_counts_dispatch(monkeypatch, use_numpy):
    # Forcing either path through the public entry point (and the profile's `measure`) gives the
    # same vectors, short and long.
    if use_numpy:
        pytest.importorskip("numpy")
    monkeypatch.setattr(_profiles, "USE_NUMPY", use_numpy)
    rng = random.Random(5)
    pool = [chr(rng.randrange(lo, hi)) for lo, hi in _BLOCKS for _ in range(50)] + ["🙂", "\U000E0067"]
    for n in (0, 1, 5, 511, 512, 4000, 40001):
        text = "".join(rng.choice(pool) for _ in range(n))
        assert class_counts(text) == _profiles._class_counts_python(text)
        assert SEED_PROFILE.measure(text) == _profiles._class_counts_python(text)
    ascii_text = "def f(x):\n    return x + 42  # ok\n" * 2000
    assert class_counts(ascii_text) == _profiles._class_counts_python(ascii_text)


def test_without_numpy_the_python_path_is_used(monkeypatch):
    monkeypatch.setattr(_profiles, "_np", None)
    text = "Ok 42 — ça, мир, 世界 🙂 " * 100
    assert class_counts(text) == _profiles._class_counts_python(text)


def test_numpy_pair_histogram_in_chunks(monkeypatch):
    pytest.importorskip("numpy")
    monkeypatch.setattr(_profiles, "_PAIRS_CHUNK", 1000)  # many bincount calls, odd lengths too
    rng = random.Random(9)
    pool = [chr(rng.randrange(lo, hi)) for lo, hi in _BLOCKS for _ in range(50)]
    for n in (40_000, 40_001, 77_777):
        text = "".join(rng.choice(pool) for _ in range(n))
        assert _profiles._class_counts_numpy(text) == _profiles._class_counts_python(text)


@pytest.mark.parametrize("length", [2048, 2049, 4095, 4096, 4097, 70_000, (1 << 20) + 5])
def test_long_ascii_texts_count_the_same_whatever_masks_earlier_texts_left(length, monkeypatch):
    from ctxfit_cli.counters import char_classes
    """The popcount masks grow with the longest text measured so far: a text longer than the
    last one, or shorter, counts what `bytes.count` counts."""
    monkeypatch.setattr(char_classes, "_masks", ())
    alphabet = "aeiouXYZ0123 \n()[]{}.,;:!?-_qwrtpsdfghjklzxcvbnm"
    for n in (length, length // 2 + 2048, length * 2):
        text = (alphabet * (n // len(alphabet) + 1))[:n]
        flags = text.encode().translate(char_classes._ASCII_FLAGS)
        want = [flags.count(bytes([1 << i])) for i in range(8)]
        upper, vowel, rare, _letter, digit, space, newline, bracket, punct = char_classes._ascii_counts(text)[:9]
        assert [upper, vowel, rare, digit, space, newline, bracket, punct] == want, n
