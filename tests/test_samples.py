"""The bundled sample transcripts and their generators (sample_transcripts/).

The samples are committed outputs of deterministic scripts: these tests check that every sample
parses and is well formed (each tool call answered by exactly one result), that regenerating them
gives the committed bytes, that the text generators are deterministic and give the requested
length and writing system, and that the DESIGN §7 sub-agent scenario has the promised shape.
"""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

SAMPLES_DIR = Path(__file__).resolve().parent.parent / "sample_transcripts"
sys.path.insert(0, str(SAMPLES_DIR))

import generate  # noqa: E402
import subagents  # noqa: E402
import textgen  # noqa: E402


# --- committed samples ----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(generate.SAMPLES))
def test_committed_sample_parses_line_by_line(name):
    path = SAMPLES_DIR / name
    data = path.read_bytes()
    assert data.endswith(b"\n") and b"\r" not in data
    text = data.decode("utf-8")
    if name.endswith(".json"):
        request = json.loads(text)
        assert {"model", "max_tokens", "system", "tools", "messages"} <= set(request)
    else:
        for number, line in enumerate(text.split("\n")[:-1], 1):
            assert isinstance(json.loads(line), dict), f"{name}:{number}"


@pytest.mark.parametrize("name", sorted(generate.SAMPLES))
def test_committed_sample_is_well_formed_and_sized(name):
    # check_file: roles alternate, each tool call has exactly one result and vice versa,
    # images are real PNGs; returns the seed-rule estimate of the text content.
    lines, tokens = generate.check_file(SAMPLES_DIR / name)
    assert lines > 0
    if name in generate.LARGE:
        assert tokens >= 50_000
        assert (SAMPLES_DIR / name).stat().st_size <= 1_500_000
    else:
        assert tokens < 5_000


def test_generate_reproduces_committed_bytes(tmp_path):
    subprocess.run([sys.executable, str(SAMPLES_DIR / "generate.py"), "--out", str(tmp_path), "--quiet"],
                   check=True, capture_output=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(generate.SAMPLES)
    for name in generate.SAMPLES:
        assert (tmp_path / name).read_bytes() == (SAMPLES_DIR / name).read_bytes(), name


def test_subagent_reader_shape():
    records = [json.loads(line) for line in (SAMPLES_DIR / "subagent_reader.anthropic.jsonl").read_text("utf-8").splitlines()]
    assert records[0]["role"] == "system"
    messages = records[1:]
    human = [m for m in messages if m["role"] == "user" and isinstance(m["content"], str)]
    assert len(human) == 1 and messages[0] is human[0]
    for m in messages[1:]:
        if m["role"] == "user":
            assert all(b["type"] == "tool_result" for b in m["content"])
    calls_per_round = [sum(b["type"] == "tool_use" for b in m["content"]) for m in messages if m["role"] == "assistant"]
    assert 25 <= len(calls_per_round) - 1 <= 35 and max(calls_per_round) >= 2
    errors = [b for m in messages if m["role"] == "user" and isinstance(m["content"], list) for b in m["content"] if b.get("is_error")]
    assert len(errors) == 1
    assert any(b["type"] == "thinking" for m in messages if m["role"] == "assistant" for b in m["content"])


def test_claude_code_session_features():
    records = [json.loads(line) for line in (SAMPLES_DIR / "claude_code_session.jsonl").read_text("utf-8").splitlines()]
    types = {r["type"] for r in records}
    assert {"summary", "file-history-snapshot", "user", "assistant", "system", "queue-operation"} <= types
    assert any(r.get("isMeta") for r in records)
    # one response split over several records sharing message.id
    ids = [r["message"]["id"] for r in records if r["type"] == "assistant"]
    assert max(ids.count(i) for i in ids) >= 3
    # a pair of parallel results arriving in the opposite order of their calls
    calls = [r["message"]["content"][0]["id"] for r in records
             if r["type"] == "assistant" and r["message"]["content"][0]["type"] == "tool_use"]
    results = [b["tool_use_id"] for r in records if r["type"] == "user" and isinstance(r["message"]["content"], list)
               for b in r["message"]["content"] if b.get("type") == "tool_result"]
    assert sorted(calls) == sorted(results) and calls != results


def test_openai_sample_has_invalid_arguments_and_parallel_calls():
    messages = [json.loads(line) for line in (SAMPLES_DIR / "openai_agent.openai.jsonl").read_text("utf-8").splitlines()]
    calls = [tc for m in messages for tc in m.get("tool_calls") or []]
    invalid = 0
    for tc in calls:
        try:
            json.loads(tc["function"]["arguments"])
        except ValueError:
            invalid += 1
    assert invalid == 1
    assert max(len(m.get("tool_calls") or []) for m in messages) >= 2


# --- text generators ------------------------------------------------------------------------

GENERATORS = [textgen.russian, textgen.chinese, textgen.japanese, textgen.english,
              textgen.python_source, textgen.shell_output, textgen.json_output]


@pytest.mark.parametrize("fn", GENERATORS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [3_000, 20_000])
def test_textgen_deterministic_and_sized(fn, n):
    a, b = fn(n, 7), fn(n, 7)
    assert a == b
    assert fn(n, 8) != a
    assert 0.9 * n <= len(a) <= 1.1 * n


def _letters(text):
    return [c for c in text if c.isalpha()]


def test_russian_is_cyrillic_prose():
    text = textgen.russian(20_000, 1)
    letters = _letters(text)
    assert sum("CYRILLIC" in unicodedata.name(c) for c in letters) / len(letters) > 0.9
    assert text.startswith("Глава ") and "\n\n" in text and "—" in text


def test_chinese_is_han_prose():
    text = textgen.chinese(10_000, 1)
    letters = _letters(text)
    assert sum("CJK UNIFIED IDEOGRAPH" in unicodedata.name(c) for c in letters) / len(letters) > 0.9
    assert "。" in text and "，" in text and text.startswith("第")


def test_japanese_mixes_scripts():
    text = textgen.japanese(10_000, 1)
    names = [unicodedata.name(c) for c in _letters(text)]
    kanji = sum("CJK UNIFIED IDEOGRAPH" in n for n in names)
    hiragana = sum("HIRAGANA" in n for n in names)
    katakana = sum("KATAKANA" in n for n in names)
    assert min(kanji, hiragana, katakana) > 0.05 * len(names)
    assert all(p in text for p in "、。「」")


def test_english_python_and_json_outputs():
    assert textgen.english(5_000, 1).isascii()
    source = textgen.python_source(10_000, 1)
    compile(source, "<generated>", "exec")  # syntactically valid Python
    assert "def " in source and "class " in source and '"""' in source and "# " in source
    json.loads(textgen.json_output(5_000, 1))
    for kind in textgen.SHELL_KINDS:
        assert textgen.shell_output(2_000, 1, kind=kind)


def test_seed_estimate_matches_the_package_counter():
    counting = pytest.importorskip("ctxfit_cli.counters.seed")
    for text in (textgen.russian(3_000, 2), textgen.japanese(3_000, 2), textgen.chinese(3_000, 2),
                 textgen.python_source(3_000, 2), "Привет, 世界! 👋 ｆｕｌｌ"):
        assert generate.script_counts(text) == counting.script_counts(text)


# --- DESIGN §7 sub-agent scenario -----------------------------------------------------------


def test_subagent_scenario_shape():
    messages = subagents.subagent_messages(3)
    assert len(messages) == 1 + 2 * 40 + 1
    human = [m for m in messages if m["role"] == "user" and isinstance(m["content"], str)]
    assert len(human) == 1 and messages[0] is human[0]
    chapters = []
    for k in range(1, 41):
        call_msg, result_msg = messages[2 * k - 1], messages[2 * k]
        calls = [b for b in call_msg["content"] if b["type"] == "tool_use"]
        assert call_msg["role"] == "assistant" and len(calls) == 1
        assert calls[0]["name"] == "read_chapter" and calls[0]["input"] == {"chapter": k}
        assert result_msg["role"] == "user" and len(result_msg["content"]) == 1
        result = result_msg["content"][0]
        assert result["type"] == "tool_result" and result["tool_use_id"] == calls[0]["id"]
        assert 93_000 <= len(result["content"]) <= 95_000
        letters = _letters(result["content"][:5_000])
        assert sum("CYRILLIC" in unicodedata.name(c) for c in letters) / len(letters) > 0.9
        chapters.append(result["content"])
    assert len(set(chapters)) == 40
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"][0]["type"] == "text"
    ids = [messages[2 * k - 1]["content"][1]["id"] for k in range(1, 41)]
    assert len(set(ids)) == 40 and all(i.startswith("toolu_01") and len(i) == 30 for i in ids)
    other = subagents.subagent_messages(4, chapters=2)
    assert other[1]["content"][1]["id"] not in ids and other[2]["content"][0]["content"] != chapters[0]


def test_subagents_cli_writes_jsonl(tmp_path):
    assert subagents.main(["--out", str(tmp_path), "--agents", "2", "--chapters", "3", "--chars", "2000"]) == 0
    for i in (1, 2):
        lines = (tmp_path / f"subagent_{i}.anthropic.jsonl").read_text("utf-8").splitlines()
        records = [json.loads(line) for line in lines]
        assert records[0] == {"role": "system", "content": subagents.SYSTEM_PROMPT}
        assert len(records) == 1 + 1 + 2 * 3 + 1
        generate.check_anthropic(records[1:])
