"""Properties of the readers over generated logs shaped as Claude Code and Codex write them
(issue #9): the conversation read back is the one the log meant, and every fitted request is
valid for its dialect at every budget."""

from __future__ import annotations

import io

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfit_cli.core.fitting import FitOptions
from ctxfit_cli.core.model import Role
from ctxfit_cli.core.notes import ABORTED_CALL
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.detection import SNIFF_LIMIT
from ctxfit_cli.formats.payload import fit_transcript

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SHARES = (1.0, 0.5, 0.2, 0.05)
words = st.text("abcdefgh xyz", max_size=120).map(lambda t: "w" + t)  # never only whitespace


def lines_of(records: list[dict]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def read_last(data: bytes):
    return [t.materialize() for t in read_transcripts("gen.jsonl", io.BytesIO(data))][-1]


def assert_fits_validly(transcript) -> None:
    full = fit_transcript(transcript, FitOptions(budget=10**9, window=10**9)).tokens
    for share in SHARES:
        fitted = fit_transcript(transcript, FitOptions(budget=max(1, int(full * share)), window=10**9))
        problems = validate_request(orjson.loads(fitted.payload), transcript.dialect)
        assert problems == [], (share, problems)


# --- Claude Code ---------------------------------------------------------------------------


@st.composite
def claude_code_logs(draw):
    """(records, replies): each reply is (id, call ids, answered call ids, text after results)."""
    records: list[dict] = []
    replies = []
    uuid = iter(range(10**6))

    def record(kind: str, message: dict, **extra) -> None:
        records.append({"type": kind, "uuid": f"u{next(uuid)}", "parentUuid": None, "sessionId": "s",
                        "isSidechain": False, "message": message, **extra})

    def progress() -> None:
        if draw(st.booleans()):
            records.append({"type": "progress", "uuid": f"u{next(uuid)}", "sessionId": "s", "data": {}})

    record("user", {"role": "user", "content": draw(words)})
    for n in range(draw(st.integers(1, 6))):
        reply_id, calls = f"msg_{n}", [f"toolu_{n}_{k}" for k in range(draw(st.integers(0, 3)))]
        blocks = ([{"type": "text", "text": draw(words)}] if draw(st.booleans()) or not calls else [])
        blocks += [{"type": "tool_use", "id": c, "name": "Bash", "input": {"cmd": draw(words)}} for c in calls]
        usage = {"input_tokens": 1, "cache_creation_input_tokens": 10 * n, "cache_read_input_tokens": 100,
                 "output_tokens": 5}
        # Results are written when each tool finishes: any time after its tool_use record,
        # possibly between later records of the same reply.
        pending: list[str] = []
        for block in blocks:
            record("assistant", {"id": reply_id, "role": "assistant", "model": "claude-x",
                                 "content": [block], "usage": usage})
            progress()
            if block["type"] == "tool_use":
                pending.append(block["id"])
            while pending and draw(st.booleans()):
                done = pending.pop(draw(st.integers(0, len(pending) - 1)))
                record("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": done, "content": draw(words)}]})
        open_at_end = bool(pending) and draw(st.booleans())
        answered = [c for c in calls if c not in pending] if open_at_end else list(calls)
        text = draw(st.one_of(st.none(), st.just("[Request interrupted by user]"), words))
        if not calls and text is None:
            text = draw(words)  # a reply without calls ends the turn: the next one needs a prompt
        if not open_at_end:
            draw(st.permutations(pending))
            results = [{"type": "tool_result", "tool_use_id": c, "content": draw(words)} for c in pending]
            if text is not None and draw(st.booleans()):  # text beside results, in one record
                record("user", {"role": "user", "content": [{"type": "text", "text": text}] + results})
                text_written = True
            else:
                for result in results:
                    record("user", {"role": "user", "content": [result]})
                text_written = False
            if text is not None and not text_written:
                record("user", {"role": "user", "content": [{"type": "text", "text": text}]})
        replies.append((reply_id, calls, answered, None if open_at_end else text))
        if open_at_end:
            break
    return records, replies


@SETTINGS
@given(claude_code_logs())
def test_claude_code_logs_read_back_as_meant_and_fit_validly(log):
    records, replies = log
    transcript = read_last(lines_of(records))
    assistants = [m for m in transcript.messages if m.role is Role.ASSISTANT]
    assert [m.call_ids for m in assistants] == [tuple(calls) for _, calls, _, _ in replies]
    assert [(c.id, c.message) for c in transcript.calls] == [
        (r[0], i) for r, i in zip(replies, (i for i, m in enumerate(transcript.messages) if m.role is Role.ASSISTANT))]
    roles = [m.role for m in transcript.messages]
    assert all(a is not b for a, b in zip(roles, roles[1:])), "roles alternate"
    for i, message in enumerate(transcript.messages):
        if message.role is Role.ASSISTANT and message.call_ids:
            answer = transcript.messages[i + 1]
            assert answer.result_ids == message.call_ids
    unanswered = sum(len(calls) - len(answered) for _, calls, answered, _ in replies)
    assert len(transcript.repairs) == unanswered
    aborted = [p for m in transcript.messages for p in m.parts if p.text == ABORTED_CALL]
    assert len(aborted) == unanswered
    assert_fits_validly(transcript)


# --- Codex ---------------------------------------------------------------------------------


def item(payload: dict, kind: str = "response_item") -> dict:
    return {"timestamp": "t", "type": kind, "payload": payload}


def message(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


@st.composite
def codex_rollouts(draw):
    """(records, expected last conversation as (role, call ids or result id) pairs)."""
    records = [item({"id": "s", "base_instructions": {"text": "You are Codex."}}, "session_meta")]
    expected: list[tuple[str, object]] = []
    n = 0
    for turn in range(draw(st.integers(1, 4))):
        if turn and draw(st.integers(0, 3)) == 0:  # compaction: the model sees only its history
            summary = draw(words)
            records.append(item({"message": "", "replacement_history": [message("user", summary)]}, "compacted"))
            expected = [("user", ())]
        records.append(item(message("user", draw(words))))
        expected.append(("user", ()))
        for _ in range(draw(st.integers(0, 3))):
            calls = [f"call_{n}_{k}" for k in range(draw(st.integers(1, 3)))]
            n += 1
            records.append(item(message("assistant", draw(words))))
            records += [item({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": c}) for c in calls]
            expected.append(("assistant", tuple(calls)))
            waiting, outputs = [], draw(st.permutations(calls))
            for call_id in outputs:
                if draw(st.booleans()):  # Codex writes a developer or user message here
                    role = draw(st.sampled_from(["developer", "user"]))
                    records.append(item(message(role, draw(words))))
                    waiting.append("system" if role == "developer" else "user")
                records.append(item({"type": "function_call_output", "call_id": call_id, "output": draw(words)}))
            expected += [("tool", (c,)) for c in outputs] + [(r, ()) for r in waiting]
        records.append(item(message("assistant", draw(words))))
        expected.append(("assistant", ()))
    if draw(st.booleans()):  # a live rollout: the last call is still running
        records.append(item(message("user", draw(words))))
        expected.append(("user", ()))
        records.append(item({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "live"}))
        expected += [("assistant", ("live",)), ("tool", ("live",))]
    return records, expected


def _shape(message) -> tuple[str, object]:
    if message.role is Role.TOOL:
        return "tool", message.result_ids
    return message.role.value, message.call_ids


@SETTINGS
@given(codex_rollouts())
def test_codex_rollouts_read_back_as_meant_and_fit_validly(rollout):
    records, expected = rollout
    transcript = read_last(lines_of(records))
    assert [_shape(m) for m in transcript.messages] == expected
    assert_fits_validly(transcript)


# --- Detection -----------------------------------------------------------------------------


@settings(max_examples=5, deadline=None)
@given(st.integers(SNIFF_LIMIT - 2, SNIFF_LIMIT + 300))
def test_a_late_first_anthropic_block_is_read_as_anthropic(plain_lines):
    lines = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(plain_lines)]
    if lines and lines[-1]["role"] == "assistant":
        lines.append({"role": "user", "content": "go"})
    lines += [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "ls", "input": {}}]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}]
    transcript = read_last(lines_of(lines))
    assert transcript.dialect == "anthropic"
    assert transcript.messages[-1].result_ids == ("t",)
    assert_fits_validly(transcript)


# --- Many system lines ---------------------------------------------------------------------


@SETTINGS
@given(st.sampled_from(["anthropic", "openai"]), st.lists(words, min_size=1, max_size=5),
       st.lists(words, min_size=1, max_size=4), st.integers(1, 100))
def test_many_system_lines_are_promised_at_the_size_the_payload_holds(dialect, systems, turns, percent):
    lines = [{"role": "system", "content": s} for s in systems]
    for i, text in enumerate(turns):
        lines += [{"role": "user", "content": f"{text} {i}"}, {"role": "assistant", "content": text}]
    transcript = [t.materialize() for t in read_transcripts("gen.jsonl", io.BytesIO(lines_of(lines)), dialect)][-1]
    full = fit_transcript(transcript, FitOptions(budget=10**9, window=10**9)).tokens
    fitted = fit_transcript(transcript, FitOptions(budget=max(1, full * percent // 100), window=10**9))
    assert validate_request(orjson.loads(fitted.payload), dialect) == []
    [again] = read_transcripts("payload", io.BytesIO(fitted.payload))
    again = again.materialize()
    assert fit_transcript(again, FitOptions(budget=10**9, window=10**9)).tokens == fitted.tokens
