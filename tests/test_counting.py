"""The seed rule of DESIGN §3, pinned with exact numbers, and its additivity."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfit_cli.counters.seed import SEED, naive_tokens, script_counts
from ctxfit_cli.core import costs as message_costs
from ctxfit_cli.core.costs import MESSAGE_OVERHEAD, message_cost, total_tokens
from ctxfit_cli.core.model import Message, Part, PartKind, Role


def tokens(text: str) -> int:
    return SEED.tokens(SEED.measure(text))


def test_pure_ascii_is_four_characters_per_token_rounded_up():
    assert script_counts("abcd" * 25) == (100, 0, 0)
    assert tokens("a" * 100) == 25
    assert tokens("a" * 101) == 26
    assert tokens("") == 0


def test_pure_cjk_is_one_character_per_token():
    chinese = "这是一个测试句子"  # 8 Han characters
    japanese = "これはテストです。"  # hiragana, katakana and the ideographic full stop
    korean = "한국어 문장"  # Hangul syllables and one ASCII space
    assert script_counts(chinese) == (0, 8, 0) and tokens(chinese) == 8
    assert script_counts(japanese) == (0, 9, 0) and tokens(japanese) == 9
    assert script_counts(korean) == (1, 5, 0) and tokens(korean) == 1 + 5
    assert script_counts("ＡＢＣ，") == (0, 4, 0)  # full-width forms


def test_pure_cyrillic_is_two_characters_per_token():
    assert script_counts("привет") == (0, 0, 6)
    assert tokens("привет") == 3
    assert tokens("приветы") == 4  # 7 / 2 rounded up


def test_mixed_text_counts_each_script_at_its_rate():
    text = "Hello, мир! 世界 😀 café"
    # ascii: "Hello, " + "! " + " " + " " + "caf" = 7 + 2 + 1 + 1 + 3 = 14
    assert script_counts(text) == (14, 2, 5)
    assert tokens(text) == 4 + 2 + 3


def test_other_scripts_and_symbols_count_as_other():
    for text in ("αβγ", "שלום", "नमस", "สวัส", "“—”", "⚡⭐"):
        assert script_counts(text)[1] == 0, text
        assert script_counts(text)[2] == len(text), text


def _reference(text: str) -> tuple[int, int, int]:
    a = c = o = 0
    for ch in text:
        cp = ord(ch)
        if cp < 0x80:
            a += 1
        elif (0x1100 <= cp <= 0x11FF or 0x2E80 <= cp <= 0x2FFF or 0x3000 <= cp <= 0x9FFF
              or 0xAC00 <= cp <= 0xD7FF or 0xF900 <= cp <= 0xFAFF or 0xFF00 <= cp <= 0xFFFF
              or 0x1B000 <= cp <= 0x1BFFF or 0x20000 <= cp <= 0x3FFFF):
            c += 1
        else:
            o += 1
    return a, c, o


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_fast_classifier_matches_a_per_character_reference(text):
    assert script_counts(text) == _reference(text)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=100), st.text(max_size=100))
def test_measurements_add_up(a, b):
    assert script_counts(a + b) == tuple(x + y for x, y in zip(script_counts(a), script_counts(b)))


def _message(text: str) -> Message:
    return Message(Role.USER, (Part(PartKind.TEXT, text),), raw=b"")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=80), max_size=6), st.lists(st.text(max_size=80), max_size=6))
def test_estimates_add_up_across_messages(a, b):
    first, second = [_message(t) for t in a], [_message(t) for t in b]
    assert total_tokens(first + second) == total_tokens(first) + total_tokens(second)


def test_message_overhead_and_rounding_per_message():
    # 2 ASCII chars round up to 1 token, per message: two such messages cost 2 tokens + overheads.
    assert message_cost(_message("ab")).tokens == 1 + MESSAGE_OVERHEAD
    assert total_tokens([_message("ab"), _message("ab")]) == 2 * (1 + MESSAGE_OVERHEAD)


def test_naive_rule_is_chars_over_four():
    assert naive_tokens(10) == 3


# --- the fast seed path and merged estimates -----------------------------------------------------

_texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)
_parts = st.lists(st.builds(
    Part, st.sampled_from(list(PartKind)), _texts, st.sampled_from(["", "read_file", "読む"]),
    st.sampled_from(["", "call_1", "вызов"]), st.sampled_from([0, 0, 85, 1600]), st.booleans(),
), max_size=6).map(tuple)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(list(Role)), _parts)
def test_the_fast_seed_path_matches_the_general_one(role, parts):
    # _compute_cost measures every string with the counter; _seed_cost is its hand-tuned twin.
    assert message_costs._seed_cost(role, parts) == message_costs._compute_cost(role, parts, SEED)


@settings(max_examples=200, deadline=None)
@given(st.lists(_parts, min_size=1, max_size=3))
def test_merged_estimate_equals_the_estimate_of_the_joined_parts(pieces):
    costs = [message_costs.parts_cost(Role.USER, parts) for parts in pieces]
    assert message_costs.merged_cost(costs) == message_costs.parts_cost(Role.USER, sum(pieces, ()))
