"""formats/built.py: the one builder of the request messages of the agents whose logs hold turns
in no dialect (Copilot CLI, Pi, Cursor, Qwen Code, Goose, Amp, Crush)."""

from __future__ import annotations

import io

import orjson
import pytest
from fuzzing import invoke

from ctxfit_cli.core.model import RecordedCall
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.errors import NoConversation
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.built import Call, Image, Shape, Thinking, Turn, sends, transcript
from ctxfit_cli.formats.common import Where

W = Where("log.jsonl", 1)


def sent(t) -> list[dict]:
    return [orjson.loads(m.raw) for m in t.messages]


def round_trip(*, reply_text: str = "", arguments: object = None) -> list[Turn]:
    return [
        Turn("user", W, ["do it"]),
        Turn("assistant", W, [reply_text], [Call("c1", "run", {"a": 1} if arguments is None else arguments)]),
        Turn("result", W, ["done"], call_id="c1"),
    ]


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
def test_a_round_is_a_valid_request_in_either_dialect(dialect):
    t = transcript("log.jsonl", "pi", dialect, round_trip(), [])
    assert validate_request({"messages": sent(t)}, dialect) == []


def test_openai_sends_one_text_as_a_string_unless_the_reader_writes_parts():
    turns = [Turn("user", W, ["hi"])]
    assert sent(transcript("x", "pi", "openai", turns, []))[0]["content"] == "hi"
    parts = sent(transcript("x", "goose", "openai", turns, [], shape=Shape(user_parts=True)))
    assert parts[0]["content"] == [{"type": "text", "text": "hi"}]


def test_a_result_is_blocks_or_its_one_text_as_the_reader_writes_it():
    blocks = sent(transcript("x", "pi", "anthropic", round_trip(), []))[2]["content"][0]["content"]
    text = sent(transcript("x", "amp", "anthropic", round_trip(), [], shape=Shape(result_text=True)))
    assert blocks == [{"type": "text", "text": "done"}] and text[2]["content"][0]["content"] == "done"
    blank = [*round_trip()[:2], Turn("result", W, ["  "], call_id="c1")]
    assert sent(transcript("x", "pi", "openai", blank, []))[2]["content"] == ""
    assert sent(transcript("x", "crush", "openai", blank, [], shape=Shape(result_text=True)))[2]["content"] == "  "


def test_arguments_written_as_json_text_are_an_object_for_anthropic_and_text_for_openai():
    turns = round_trip(arguments='{"path": "a.py"}')
    assert sent(transcript("x", "crush", "anthropic", turns, []))[1]["content"][0]["input"] == {"path": "a.py"}
    assert sent(transcript("x", "crush", "openai", turns, []))[1]["tool_calls"][0]["function"]["arguments"] == (
        '{"path": "a.py"}'
    )
    not_object = sent(transcript("x", "crush", "anthropic", round_trip(arguments="[1]"), []))
    assert not_object[1]["content"][0]["input"] == {"input": [1]}


def test_a_results_images_follow_it_in_a_user_message_for_openai():
    turns = [*round_trip()[:2], Turn("result", W, ["see", Image("image/png", "AAAA")], call_id="c1")]
    messages = sent(transcript("x", "pi", "openai", turns, []))
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user"]
    assert messages[3]["content"][0]["type"] == "image_url"


def test_signed_thinking_is_sent_back_to_anthropic_only():
    turns = round_trip()
    turns[1].content.insert(0, Thinking("hmm", "sig"))
    assert sent(transcript("x", "pi", "anthropic", turns, []))[1]["content"][0]["type"] == "thinking"
    assert sent(transcript("x", "pi", "openai", turns, []))[1]["content"] is None


def test_given_counts_the_messages_the_history_became():
    """A compaction's history of four turns: three Anthropic messages (its two user texts are one
    user turn; the user's text after it joins its last), four OpenAI ones."""
    history = [
        Turn("user", W, ["summary"]),
        Turn("user", W, ["context"]),
        Turn("assistant", W, ["ok"], [Call("c0", "run", {})]),
        Turn("result", W, ["r"], call_id="c0"),
    ]
    turns = [*history, Turn("user", W, ["next"]), Turn("assistant", W, ["sure"])]
    anthropic = transcript("x", "qwen-code", "anthropic", turns, [], given=len(history))
    openai = transcript("x", "qwen-code", "openai", turns, [], given=len(history))
    assert (anthropic.given, len(anthropic.messages)) == (3, 4)
    assert (openai.given, len(openai.messages)) == (4, 6)
    assert transcript("x", "qwen-code", "openai", turns, []).given == 0


def test_calls_keep_their_messages_and_every_model_named_is_kept():
    silent = Turn("assistant", W, ["  "], recorded=RecordedCall(0, "", "model-a"))
    turns = [Turn("user", W, ["hi"]), silent, Turn("assistant", W, ["yes"], recorded=RecordedCall(0, "", "model-b"))]
    t = transcript("x", "goose", "openai", turns, [])
    assert [(c.message, c.model) for c in t.calls] == [(1, "model-b")]
    assert t.named_models == ["model-a", "model-b"]


def test_turns_that_send_nothing_are_no_conversation():
    empty = [Turn("user", W, [" "]), Turn("assistant", W, [], recorded=RecordedCall(0, "", "m"))]
    assert not sends(empty, "anthropic") and not sends(empty, "openai")
    assert sends([Turn("result", W, [], call_id="c")], "openai")
    with pytest.raises(NoConversation, match="has no messages"):
        transcript("x", "pi", "openai", empty, [])


def test_the_turns_are_not_changed():
    turns = round_trip()
    before = repr(turns)
    transcript("x", "pi", "anthropic", turns, [], given=2)
    assert repr(turns) == before


@pytest.mark.parametrize(
    "messages", [[], [{"role": "user", "messageId": 0, "content": [{"type": "text", "text": " "}]}]]
)
def test_an_amp_thread_that_sends_nothing_is_no_conversation_naming_amp(tmp_path, messages):
    thread = tmp_path / "T-0.json"
    thread.write_bytes(orjson.dumps({"v": 1, "id": "T-0", "created": 1, "messages": messages}))
    with pytest.raises(NoConversation):
        list(read_transcripts(str(thread), io.BytesIO(thread.read_bytes())))
    for command in (["estimate"], ["fit", "--budget", "100"]):
        done = invoke([*command, str(thread)])
        assert done.exit_code == 3 and "Amp thread" in done.stderr and "Traceback" not in done.stderr, done.stderr
