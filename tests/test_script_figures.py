"""The characters and tokens per writing system an estimate reports (the seed rule's) are read
off a profile's vectors when the log is counted with a profile: the same figures, exactly, as
measuring every text again with the seed rule."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from test_fit_properties import SCRIPTS

from ctxfit_cli.core.estimate import TranscriptEstimate
from ctxfit_cli.core.model import Message, Part, PartKind, Role
from ctxfit_cli.counters.profiles import load_profile
from ctxfit_cli.counters.seed import SEED

PROFILES = [load_profile(name) for name in ("claude", "seed")]
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"])) | st.sampled_from(sorted(SCRIPTS.values()))


def figures(message: Message, counter) -> tuple:
    fresh = Message(message.role, message.parts, b"")  # nothing memoized
    report = TranscriptEstimate("t", "anthropic", counter=counter)
    report.add(fresh)
    return report.script_chars, report.script_tokens


@given(st.lists(st.tuples(TEXT, TEXT, st.sampled_from([PartKind.TEXT, PartKind.TOOL_CALL])), min_size=1, max_size=4))
def test_assistant_message_figures_are_the_seed_rules(parts):
    message = Message(Role.ASSISTANT, tuple(Part(kind, text, tool, "call_1") for text, tool, kind in parts), b"")
    for profile in PROFILES:
        assert figures(message, profile) == figures(message, SEED)


@given(st.lists(TEXT, min_size=1, max_size=4))
def test_result_figures_are_the_seed_rules(texts):
    message = Message(
        Role.USER, tuple(Part(PartKind.TOOL_RESULT, t, "", f"call_{i}") for i, t in enumerate(texts)), b""
    )
    for profile in PROFILES:
        assert figures(message, profile) == figures(message, SEED)


def test_long_mixed_text():
    text = "".join(SCRIPTS.values()) * 300  # long enough for the vectorized measuring
    message = Message(Role.USER, (Part(PartKind.TEXT, text), Part(PartKind.TOOL_RESULT, text[7:], "", "c")), b"")
    for profile in PROFILES:
        assert figures(message, profile) == figures(message, SEED)
