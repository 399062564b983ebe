"""The library facade: `fit`, `Session` and `count` on dicts, SDK objects and LangChain messages."""

from __future__ import annotations

import copy

import orjson
import pytest
from anthropic.types import Message as AnthropicMessage
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from openai.types.chat import ChatCompletion

import ctxfit_cli
from ctxfit_cli import CLEARED_RESULT, TRIMMED_HISTORY, CannotFit, FitOptions, Session, count, fit, validate_request
from ctxfit_cli.errors import BadInput
from ctxfit_cli.formats.payload import fit_transcript
from conftest import Chat, ascii_text, read, run_cli

TOOLS_ANTHROPIC = [{"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}]


def sub_agent(dialect: str, calls: int, tokens: int = 500, system: bool = True) -> Chat:
    chat = Chat(dialect, system="You are an agent." if system else None).user("Read every file.")
    for i in range(calls):
        chat.round(ascii_text(tokens + 37 * (i % 5)))
    return chat


def reference(chat: Chat, budget: int, **options) -> list[dict]:
    """The messages the CLI's `fit` sends for the same conversation."""
    payload = fit_transcript(chat.transcript(), FitOptions(budget=budget, **options)).payload
    messages = orjson.loads(payload)["messages"]
    return [m for m in messages if m.get("role") != "system"] if chat.dialect == "anthropic" else messages


def as_json(messages: list) -> list[dict]:
    return [ctxfit_cli.sdk.as_request_dict(m).value for m in messages]


# --- fit() on dicts ------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
@pytest.mark.parametrize("budget", [2_000, 5_000, 40_000])
def test_fit_sends_what_the_cli_sends_and_changes_nothing(dialect, budget):
    chat = sub_agent(dialect, 30)
    if dialect == "anthropic":
        system, messages = chat.lines[0]["content"], chat.lines[1:]
    else:
        system, messages = None, chat.lines
    before = copy.deepcopy(messages)
    sent = fit(messages, budget=budget, system=system)
    assert messages == before
    assert sent == reference(chat, budget)
    assert validate_request({"messages": sent}, dialect) == []
    kept = {id(m) for m in messages}
    for out in sent:  # the caller's very object, or a changed copy (never the caller's object edited)
        assert (id(out) in kept) == (out in messages)


def test_unchanged_messages_are_the_objects_given_and_cleared_ones_copies():
    chat = sub_agent("anthropic", 12, tokens=1_000, system=False)
    sent = fit(chat.lines, budget=6_000)
    cleared = [m for m in sent if isinstance(m["content"], list)
               and any(b.get("content") == CLEARED_RESULT for b in m["content"])]
    assert cleared and all(all(m is not original for original in chat.lines) for m in cleared)
    assert sent[-1] is chat.lines[-1] and sent[0] is chat.lines[0]


def test_stage_rounds_puts_the_note_on_a_copy_of_the_first_message():
    chat = sub_agent("anthropic", 40, tokens=900, system=False)
    session = Session(budget=5_000, min_clear_tokens=10_000)  # nothing clearable: rounds are dropped
    sent = session.fit(chat.lines)
    assert session.plan.stage == "rounds"
    assert sent[0] is not chat.lines[0] and chat.lines[0] == {"role": "user", "content": "Read every file."}
    assert sent[0]["content"][-1] == {"type": "text", "text": TRIMMED_HISTORY}
    assert validate_request({"messages": sent}, "anthropic") == []
    assert sent == reference(chat, 5_000, min_clear_tokens=10_000)


def test_past_the_window_cannot_fit_names_the_figures():
    messages = [{"role": "user", "content": ascii_text(3_000)}]
    with pytest.raises(CannotFit) as caught:
        fit(messages, budget=1_000, window=2_000)
    assert "too long for the model" in str(caught.value) and "2,000" in str(caught.value)
    assert caught.value.window == 2_000 and caught.value.smallest > 2_000


def test_over_the_budget_within_the_window_is_sent_and_reported():
    messages = [{"role": "user", "content": ascii_text(3_000)}]
    session = Session(budget=1_000)
    assert session.fit(messages) == messages
    assert session.plan.overrun and not session.plan.fits


def test_a_history_the_cli_repairs_the_library_repairs_the_same_way(tmp_path):
    """DESIGN §13: every command takes the same inputs. An open call is answered with the
    aborted note, as `ctxfit fit` answers it, and the session says so."""
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]
    session = Session(budget=1_000)
    sent = session.fit(messages)
    assert sent[:2] == messages and sent[0] is messages[0]
    assert sent[2]["role"] == "tool" and sent[2]["tool_call_id"] == "c1"
    assert any("has no result" in line for line in session.repairs)
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in messages))
    assert orjson.loads(run_cli("fit", str(path)).stdout)["messages"] == sent


def test_blank_blocks_refused_keys_and_two_turns_in_a_row_are_repaired_as_the_cli_repairs_them(tmp_path):
    messages = [{"role": "user", "content": "Read it.", "ts": 1},
                {"role": "user", "content": [{"type": "text", "text": "Now."}]},
                {"role": "assistant", "content": [{"type": "text", "text": "\n\n"},
                                                  {"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
                {"role": "user", "content": [{"type": "text", "text": ""}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
                {"role": "assistant", "content": "Done."}]
    original = copy.deepcopy(messages)
    session = Session(budget=10_000)
    sent = session.fit(messages)
    assert messages == original  # the caller's history is never changed
    assert validate_request({"messages": sent}, "anthropic") == []
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant"]
    assert sent[0]["content"] == [{"type": "text", "text": "Read it."}, {"type": "text", "text": "Now."}]
    assert sent[1]["content"] == [messages[2]["content"][1]]
    assert sent[3] is messages[5]
    assert sorted(session.repairs) == [
        "messages[0]: removed the key the API refuses: 'ts'",
        "messages[1]: two user messages in a row; combined this one into the one before, as the API combines them",
        "messages[2]: dropped 1 empty or whitespace-only text block",
        "messages[3]: dropped 1 empty or whitespace-only text block",
        "messages[3]: dropped an empty user message"]
    assert session.fit(messages + [{"role": "user", "content": "More."}])[:4] == sent  # the next step
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in messages))
    done = run_cli("fit", str(path))
    assert done.returncode == 0 and orjson.loads(done.stdout)["messages"] == sent


# --- dialects ------------------------------------------------------------------------------


@pytest.mark.parametrize("messages, tools, system, expected", [
    ([{"role": "user", "content": "hi"}], TOOLS_ANTHROPIC, None, "anthropic"),
    ([{"role": "user", "content": "hi"}], [{"type": "function", "function": {"name": "f"}}], None, "openai"),
    ([{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}], None, None, "openai"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}], None, None, "openai"),
    ([{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "x"}}]}], None, "s", "anthropic"),
])
def test_the_dialect_is_detected(messages, tools, system, expected):
    session = Session(budget=1_000, tools=tools, system=system)
    session.fit(messages)
    assert session.dialect == expected


# --- SDK objects ---------------------------------------------------------------------------


def anthropic_reply(i: int):
    return AnthropicMessage.model_validate({
        "id": f"msg_{i}", "type": "message", "role": "assistant", "model": "claude", "stop_reason": "tool_use",
        "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
        "content": [{"type": "text", "text": "Next."},
                    {"type": "tool_use", "id": f"toolu_{i}", "name": "read_file", "input": {"n": i}}]})


def openai_reply(i: int):
    return ChatCompletion.model_validate({
        "id": "x", "object": "chat.completion", "created": 0, "model": "gpt",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": f"call_{i}", "type": "function",
                            "function": {"name": "read_file", "arguments": "{}"}}]}}]}).choices[0].message


def test_anthropic_sdk_blocks_are_read_and_handed_back_as_they_are():
    history = [{"role": "user", "content": "Read every file."}]
    session = Session(budget=4_000, system="Be brief.", tools=TOOLS_ANTHROPIC)
    for i in range(12):
        reply = anthropic_reply(i)
        history.append({"role": "assistant", "content": reply.content})
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": reply.content[1].id, "content": ascii_text(600)}]})
        sent = session.fit(history)
        assert session.dialect == "anthropic"
        assert all(s is h for s, h in zip(sent, history) if s["role"] == "assistant")
        assert validate_request({"messages": as_json(sent)}, "anthropic") == []
        assert session.plan.tokens_after <= 4_000
    assert session.plan.stage == "clear"


def test_openai_sdk_messages_are_read_and_handed_back_as_they_are():
    history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Read every file."}]
    session = Session(budget=4_000)
    for i in range(12):
        reply = openai_reply(i)
        history += [reply, {"role": "tool", "tool_call_id": reply.tool_calls[0].id, "content": ascii_text(600)}]
        sent = session.fit(history)
        assert sent[0] is history[0] and session.dialect == "openai"
        assert all(s is h for s, h in zip(sent, history) if not isinstance(h, dict))
        assert validate_request({"messages": as_json(sent)}, "openai") == []
    assert session.plan.stage == "clear"


def test_langchain_messages_come_back_as_langchain_messages():
    history = [SystemMessage("Be brief."), HumanMessage("Read every file.")]
    session = Session(budget=4_000)
    for i in range(12):
        history.append(AIMessage(content="", tool_calls=[{"name": "read_file", "args": {}, "id": f"c{i}"}]))
        history.append(ToolMessage(ascii_text(600), tool_call_id=f"c{i}"))
        before = [m.model_copy(deep=True) for m in history]
        sent = session.fit(history)
        assert history == before
    cleared = [m for m in sent if isinstance(m, ToolMessage) and m.content == CLEARED_RESULT]
    assert cleared and all(m.tool_call_id.startswith("c") for m in cleared)
    assert all(type(s) is type(h) for s, h in zip(sent, history))
    assert validate_request({"messages": as_json(sent)}, "openai") == []


def test_langchain_first_message_gets_the_note_as_a_copy():
    history = [HumanMessage("Read every file.")]
    for i in range(30):
        history.append(AIMessage(content="", tool_calls=[{"name": "read_file", "args": {}, "id": f"c{i}"}]))
        history.append(ToolMessage(ascii_text(900), tool_call_id=f"c{i}"))
    session = Session(budget=5_000, min_clear_tokens=10_000)
    sent = session.fit(history)
    assert session.plan.stage == "rounds"
    assert isinstance(sent[0], HumanMessage) and sent[0] is not history[0]
    assert history[0].content == "Read every file." and TRIMMED_HISTORY in str(sent[0].content)


# --- Session ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
@pytest.mark.parametrize("options", [{}, {"min_clear_tokens": 10_000}], ids=["clear", "rounds"])
def test_session_steps_equal_fresh_fits_and_keep_the_ratchets(dialect, options):
    chat = sub_agent(dialect, 60, tokens=400, system=False)
    session = Session(budget=6_000, **options)
    stages = set()
    history: list = [chat.lines[0]]
    cleared_before: set = set()
    start_before = 0
    for end in range(2, len(chat.lines) + 1):
        history.append(chat.lines[end - 1])
        if history[-1]["role"] == "assistant":
            continue  # a request is made before each assistant message
        sent = session.fit(history)
        assert sent == fit(list(history), budget=6_000, **options)
        stages.add(session.plan.stage)
        cleared = {r.call_id for r in session.plan.cleared}
        assert cleared >= cleared_before
        assert session.plan.start >= start_before or not session.plan.dropped
        cleared_before, start_before = cleared, session.plan.start
    assert stages == ({"none", "clear"} if not options else {"none", "rounds"})


def test_session_reads_only_the_new_messages(monkeypatch):
    chat = sub_agent("anthropic", 10, system=False)
    session = Session(budget=100_000)
    session.fit(chat.lines[:-2])
    read = []
    original = ctxfit_cli.api.as_request_dict
    monkeypatch.setattr(ctxfit_cli.api, "as_request_dict", lambda item, *where: read.append(item) or original(item, *where))
    session.fit(chat.lines)
    assert read == chat.lines[-2:]


@pytest.mark.parametrize("edit", ["replace", "remove", "insert", "rebuild"])
def test_session_starts_over_when_the_history_is_edited(edit):
    chat = sub_agent("anthropic", 30, tokens=500, system=False)
    session = Session(budget=5_000)
    history = list(chat.lines)
    session.fit(history)
    if edit == "replace":
        history[6] = {**history[6], "content": [{**history[6]["content"][0], "content": "short"}]}
    elif edit == "remove":
        del history[11:]
    elif edit == "insert":
        history[3:3] = [{"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "f", "input": {}}]},
                        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "y"}]}]
    else:
        history = copy.deepcopy(history)  # equal messages, new objects
    assert session.fit(history) == fit(history, budget=5_000)


def test_a_session_without_a_conversation_yet_returns_the_system_messages():
    session = Session(budget=1_000)
    history = [{"role": "system", "content": "Be brief."}]
    assert session.fit(history) == history
    history.append({"role": "user", "content": "hi"})
    assert session.fit(history) == history and session.plan.fixed_tokens > 0


# --- count() -------------------------------------------------------------------------------


def test_count_text_and_messages():
    assert count("Привет, мир") == 6
    chat = sub_agent("openai", 3, system=True)
    assert count(chat.lines) == fit_transcript(chat.transcript(), FitOptions(budget=10**6)).plan.tokens_before
    assert count([HumanMessage("hi")]) == count([{"role": "user", "content": "hi"}])
    assert count("hello world", counter="cl100k") > 0
    with_system = count([{"role": "user", "content": "hi"}], system="Be brief.", tools=TOOLS_ANTHROPIC)
    assert with_system > count([{"role": "user", "content": "hi"}])
