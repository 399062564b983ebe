"""Issue #34 ("In a log"): an agent's log with records of types ctxfit does not know, or
keys it does not know on the records it reads, is read as if they were not there — the same
messages, recorded calls, estimate and fitted payload — and what was skipped is counted and said.

The property runs over every real log of an agent whose log is records appended as it runs
(Claude Code, Codex, Gemini CLI's JSON Lines recording): the records of unknown types are put
anywhere, the first line included (detection then reads on to a record it recognises), and the
unknown keys on any record. Logs that are one JSON document (Cline, OpenHands, SWE-agent, a
Gemini CLI .json recording) have no records to insert and are not part of it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import orjson
import pytest
from conftest import REALWORLD, needs_realworld
from fuzzing import invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.skipped import Skipped, summary

LOGS = sorted(
    p for kind in ("claude-code", "codex", "gemini-cli") for p in (REALWORLD / kind).glob("*.jsonl")
)
#: Names no agent writes: a record type or key made of them is unknown to every reader.
NAMES = st.text("abcdefghijklmnopqrstuvwxyz-_", min_size=1, max_size=12).map(lambda s: f"zz-{s}")
VALUES = st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=20), st.booleans(), st.none(),
                   st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 9), max_size=2))
BUDGET = 30_000


#: A record of a type no reader knows, with keys no reader knows.
UNKNOWN_RECORDS = st.builds(lambda kind, rest: {"type": kind, **rest}, NAMES,
                            st.dictionaries(NAMES, VALUES, max_size=3))


@st.composite
def mutations(draw, count: int):
    """Where to insert unknown records (before which line: 0 is before the first, and drawn
    half the time) and which records get which unknown keys."""
    inserted = draw(st.lists(st.tuples(st.integers(0, count), UNKNOWN_RECORDS), min_size=1, max_size=6))
    if draw(st.booleans()):
        inserted.append((0, draw(UNKNOWN_RECORDS)))
    keyed = draw(st.dictionaries(st.integers(0, count - 1), st.dictionaries(NAMES, VALUES, min_size=1, max_size=2),
                                 max_size=8))
    return inserted, keyed


def mutated(lines: list[bytes], inserted: list[tuple[int, dict]], keyed: dict[int, dict]) -> bytes:
    out: list[bytes] = []
    for index in range(len(lines) + 1):
        out += [orjson.dumps(record) for at, record in inserted if at == index]
        if index < len(lines):
            line = lines[index]
            if index in keyed:
                value = orjson.loads(line)
                line = orjson.dumps({**value, **keyed[index]}) if isinstance(value, dict) else line
            out.append(line)
    return b"\n".join(out) + b"\n"


def reading(name: str, data: bytes) -> tuple[list, dict]:
    """Each conversation's messages (role and bytes) and recorded calls, and what was skipped."""
    skipped = Skipped()
    conversations = []
    for transcript in read_transcripts(name, io.BytesIO(data), None, None, skipped):
        messages = [(m.role, m.raw) for m in transcript.messages]  # (calls and repairs: once read)
        conversations.append((transcript.format, messages, list(transcript.calls), len(transcript.repairs)))
    return conversations, skipped.as_dict()


def figures(path: Path) -> tuple[dict, list]:
    """`estimate --json` totals (the path left out) and `fit --json` payloads of a file."""
    estimate = invoke(["estimate", str(path), "--json", "--top", "0"])
    assert estimate.exit_code == 0, estimate.stderr
    total = json.loads(estimate.stdout)["total"]
    total["largest"].pop("path")
    fit = invoke(["fit", str(path), "--budget", str(BUDGET), "--json"])
    assert fit.exit_code in (0, 4), fit.stderr
    payloads = json.loads(fit.stdout)["payloads"] if fit.exit_code == 0 else None
    return total, payloads


_KNOWN: dict[Path, tuple] = {}


def untouched(path: Path) -> tuple:
    if path not in _KNOWN:
        _KNOWN[path] = (reading(path.name, path.read_bytes()), figures(path))
    return _KNOWN[path]


@needs_realworld
def test_the_logs_of_agents_that_append_records_are_there():
    assert len(LOGS) >= 18, LOGS


@needs_realworld
@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_unknown_records_and_keys_change_nothing_but_the_count(path, tmp_path):
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    (conversations, skipped), (total, payloads) = untouched(path)
    assert skipped == {"records": {}, "keys": {}}  # every real log is known to its reader

    @settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(mutations(len(lines)))
    def check(mutation):
        inserted, keyed = mutation
        data = mutated(lines, inserted, keyed)
        got, counted = reading(path.name, data)
        assert got == conversations
        assert sum(counted["records"].values()) == len(inserted)
        copy = tmp_path / path.name
        copy.write_bytes(data)
        assert figures(copy) == (total, payloads)

    check()


def test_a_log_that_opens_with_records_of_new_types_is_detected_and_says_what_it_skipped(tmp_path):
    log = tmp_path / "session.jsonl"
    records = [{"type": "mystery", "n": i} for i in range(10)] + [
        {"type": "user", "sessionId": "s", "uuid": "u1", "message": {"role": "user", "content": "hi"}, "zz-new": 1},
        {"type": "assistant", "sessionId": "s", "uuid": "a1", "message": {
            "id": "m1", "role": "assistant", "model": "claude-opus-4-6", "content": [{"type": "text", "text": "yo"}],
            "usage": {"input_tokens": 10, "output_tokens": 2}}},
    ]
    log.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    result = invoke(["estimate", str(log), "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["files"][0]["unread"] == {"records": {"mystery": 10}, "keys": {"zz-new": 1}}
    assert f"{log}: skipped 10 records ctxfit does not read: mystery 10" in result.stderr
    assert f"{log}: skipped 1 keys on records ctxfit does not read: zz-new 1" in result.stderr
    fit = invoke(["fit", str(log), "--json"])
    assert fit.exit_code == 0, fit.stderr
    assert json.loads(fit.stdout)["reports"][0]["unread"]["records"] == {"mystery": 10}
    assert "skipped 10 records ctxfit does not read: mystery 10" in fit.stderr


def test_the_summary_names_the_most_frequent_and_verbose_names_all():
    counts = {"records": {f"t{i}": 10 - i for i in range(8)}, "keys": {}}
    [line] = summary(counts)
    assert line == "skipped 52 records ctxfit does not read: t0 10, t1 9, t2 8, t3 7, t4 6, …"
    [every] = summary(counts, every=True)
    assert every.endswith("t6 4, t7 3")


def test_records_of_no_format_within_the_first_64_are_refused_naming_what_was_seen(tmp_path):
    log = tmp_path / "odd.jsonl"
    log.write_bytes(b"".join(orjson.dumps({"type": "mystery", "n": i}) + b"\n" for i in range(100)))
    result = invoke(["estimate", str(log)])
    assert result.exit_code == 3
    assert "none of its first 64 records" in result.stderr and "mystery" in result.stderr


# --- Gemini CLI 0.61: each result recorded twice, read once -----------------------------------------

def gemini_0_61(steps: int) -> bytes:
    """A recording as Gemini CLI 0.61.0 writes it (its shape taken from a real run against
    tests/fake_provider.py): each reply written without, then with, its tool calls and their
    results, and each result written again as the user message it sends next."""
    lines: list[dict] = [
        {"sessionId": "19510857", "projectHash": "7e1c4af69c30", "startTime": "2026-12-07T15:05:42.507Z",
         "lastUpdated": "2026-12-07T15:05:42.507Z", "kind": "main"},
        {"id": "u0", "timestamp": "2026-12-07T15:05:42.538Z", "type": "user", "content": [{"text": "read the files"}]},
    ]
    for step in range(steps + 1):
        reply = {"id": f"g{step}", "timestamp": "2026-12-07T15:05:43.459Z", "type": "gemini",
                 "content": f"Reading file {step}.", "thoughts": [], "model": "gemini-2.5-pro",
                 "tokens": {"input": 1000 + 50 * step, "output": 20, "cached": 800, "thoughts": 0, "tool": 0}}
        lines += [reply, {"$set": {"lastUpdated": "2026-12-07T15:05:43.459Z"}}]
        if step == steps:
            break
        response = {"functionResponse": {"id": f"read_file__call_{step}", "name": "read_file",
                                         "response": {"output": f"contents of file {step}"}}}
        call = {"id": f"read_file__call_{step}", "name": "read_file", "args": {"path": f"f{step}.py"},
                "result": [response], "status": "success", "timestamp": "2026-12-07T15:05:43.474Z"}
        lines += [{**reply, "toolCalls": [call]},
                  {"id": f"r{step}", "timestamp": "2026-12-07T15:05:43.476Z", "type": "user", "content": [response]},
                  {"$set": {"lastUpdated": "2026-12-07T15:05:43.480Z"}}]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def test_gemini_cli_0_61_results_recorded_twice_are_sent_once_without_a_repair(tmp_path):
    [transcript] = read_transcripts("session.jsonl", io.BytesIO(gemini_0_61(3)))
    contents = [orjson.loads(m.raw) for m in transcript.messages]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user", "model", "user", "model"]
    responses = [p["functionResponse"]["id"] for c in contents for p in c["parts"] if "functionResponse" in p]
    assert responses == ["read_file__call_0", "read_file__call_1", "read_file__call_2"]
    assert transcript.repairs == []
    log = tmp_path / "session-2026-12-07T15-05-19510857.jsonl"
    log.write_bytes(gemini_0_61(3))
    result = invoke(["estimate", str(log)])
    assert result.exit_code == 0 and "dropped a result" not in result.stderr, result.stderr


def test_a_user_message_with_a_result_no_call_holds_is_still_sent():
    data = gemini_0_61(1).replace(b'"content":[{"functionResponse":{"id":"read_file__call_0"',
                                  b'"content":[{"text":"also this"},{"functionResponse":{"id":"read_file__call_0"')
    [transcript] = read_transcripts("session.jsonl", io.BytesIO(data))
    texts = [p.get("text") for m in transcript.messages for p in orjson.loads(m.raw)["parts"]]
    assert "also this" in texts  # only the repeated result is left out


# --- fit of a log being written says so, as estimate does ---------------------------------------

@needs_realworld
def test_fit_of_a_log_cut_mid_record_says_it_is_still_being_written(tmp_path):
    whole = (REALWORLD / "claude-code" / "strato_ec25b596b582-0_full.jsonl").read_bytes()
    cut = tmp_path / "live.jsonl"
    cut.write_bytes(whole[: whole.index(b"\n", 100_000) + 200])  # ends inside a record
    result = invoke(["fit", str(cut), "--budget", "30000"])
    assert result.exit_code == 0, result.stderr
    assert f"{cut}: still being written (its last line (" in result.stderr
    assert "read up to its last complete record" in result.stderr
    report = json.loads(invoke(["fit", str(cut), "--budget", "30000", "--json"]).stdout)["reports"][0]
    assert any("is cut short" in why for why in report["still_being_written"])


# --- a big log read in pieces counts what it skipped as one reading does -------------------------

@needs_realworld
@pytest.mark.parametrize("pieces", [3, 7])
def test_a_log_read_in_pieces_counts_the_records_and_keys_it_skipped_as_one_process_does(pieces, tmp_path):
    from ctxfit_cli.fleet import log_split, work
    from ctxfit_cli.fleet.job import Job

    lines = (REALWORLD / "claude-code" / "entire-bmad_ec227c481d0b-0_full.jsonl").read_bytes().splitlines()
    inserted = [(at, {"type": f"zz-{at % 4}", "zz-x": at}) for at in range(0, len(lines), 29)]
    keyed = {at: {"zz-key": 1} for at in range(5, len(lines), 13)}
    log = tmp_path / "log.jsonl"
    log.write_bytes(mutated(lines, inserted, keyed))
    whole = work.run_file(str(log), Job("estimate", describe=False, split_big_files=False))
    [item] = whole.units[0].items
    split = log_split.estimate_split(str(log), str(log), None, None, window=None, fixed_tokens=None, top_n=5,
                                     pieces=pieces, workers=2)
    assert split is not None
    assert split.unread == item["unread"]
    assert sum(item["unread"]["records"].values()) == len(inserted) and item["unread"]["keys"]["zz-key"] > 0


#: Records whose `type` (or `role`, `message`, `info`, `history`) is a list or an object where every
#: agent writes a string: the shapes each reader asks of a record first.
ODD_SHAPES = [
    {key: (odd if value is ... else value) for key, value in shape.items()}
    for odd in (["x"], {"a": 1})
    for shape in [
        {"type": ..., "uuid": "u", "sessionId": "s"}, {"type": ..., "payload": {}},
        {"type": ..., "data": {}, "id": "x", "parentId": None}, {"role": ..., "content": "x"},
        {"role": "user", "message": ...}, {"info": ..., "messages": []}, {"history": ..., "sessionId": "s"},
        {"type": ..., "version": 3, "id": "x"},
    ]
]
EVERY_LOG = sorted(
    p for p in [*REALWORLD.glob("*/*"), *(Path(__file__).parent / "agent_schemas").glob("*")]
    if p.is_file() and p.suffix not in (".md", ".db")
)


@needs_realworld
@pytest.mark.parametrize("path", EVERY_LOG, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_record_whose_type_is_not_a_string_is_never_an_internal_error(path):
    """Every reader, handed a log with records whose `type` (or role, …) is a list or an object in
    front: it reads the log or refuses it in one line, never an internal error."""
    from ctxfit_cli.errors import BadInput, NoConversation

    odd = b"".join(orjson.dumps(shape) + b"\n" for shape in ODD_SHAPES)
    try:
        for transcript in read_transcripts(str(path), io.BytesIO(odd + path.read_bytes())):
            list(transcript.messages)
    except (BadInput, NoConversation):
        pass
