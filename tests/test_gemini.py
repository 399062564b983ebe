"""The Gemini dialect on hand-made contents: reading, pairing, repairs, fitting and the validator.

`gemini_problems` is an independent check of a generateContent body, written from the API's
documented errors and sharing no code with ctxfit's validator; every payload here passes both.
"""

from __future__ import annotations

import io
from collections import Counter

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfit_cli.core.fitting import FitOptions
from ctxfit_cli.core.notes import ABORTED_CALL, CLEARED_RESULT, TRIMMED_HISTORY
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.errors import BadInput
from ctxfit_cli.formats import read_transcripts
from ctxfit_cli.formats.payload import fit_transcript, with_agent_note
from fuzzing import invoke

DATA = ("text", "inlineData", "inline_data", "fileData", "file_data", "functionCall", "function_call",
        "functionResponse", "function_response", "executableCode", "codeExecutionResult")


def gemini_problems(body: dict) -> list[str]:
    """What the Gemini API refuses: roles user/model, the user first, roles alternating, parts
    present, one kind of data per part (no empty text), every model content's calls answered by
    as many responses in the next content, of the same names (and ids where both have one), and
    no response anywhere else."""
    out = []
    contents = body.get("contents") or []
    if not contents:
        return ["no contents"]
    roles = [c.get("role", "user") for c in contents]
    if roles[0] != "user":
        out.append("the first content is not the user's")
    for i, content in enumerate(contents):
        if roles[i] not in ("user", "model"):
            out.append(f"{i}: role {roles[i]}")
        if i and roles[i] == roles[i - 1] == "model":  # (two user contents in a row are taken)
            out.append(f"{i}: two {roles[i]} contents in a row")
        parts = content.get("parts") or []
        if not parts:
            out.append(f"{i}: no parts")
        for part in parts:
            data = [k for k in part if k in DATA and part[k] not in (None, "")]
            if len(data) != 1 and not (not data and part.get("thoughtSignature")):
                out.append(f"{i}: a part with data {data}")
        calls = [_body(p, "functionCall", "function_call") for p in parts if _body(p, "functionCall", "function_call")]
        responses = [_body(p, "functionResponse", "function_response") for p in parts
                     if _body(p, "functionResponse", "function_response")]
        if any(not x.get("name") for x in calls + responses):
            out.append(f"{i}: a call or response without a name")
        if calls and roles[i] != "model" or responses and roles[i] != "user":
            out.append(f"{i}: a call or response in the wrong role")
        if responses:
            before = contents[i - 1].get("parts", []) if i else []
            asked = [_body(p, "functionCall", "function_call") for p in before if _body(p, "functionCall", "function_call")]
            if Counter(c.get("name") for c in asked) != Counter(r.get("name") for r in responses):
                out.append(f"{i}: responses {[r.get('name') for r in responses]} for calls {[c.get('name') for c in asked]}")
            asked_ids = {c.get("id") for c in asked} - {None}
            if asked_ids and any(r.get("id") and r["id"] not in asked_ids for r in responses):
                out.append(f"{i}: a response id answers no call")
        if calls:
            after = contents[i + 1].get("parts", []) if i + 1 < len(contents) else []
            answered = [p for p in after if _body(p, "functionResponse", "function_response")]
            if len(answered) != len(calls):
                out.append(f"{i}: {len(calls)} calls, {len(answered)} responses after them")
    return out


def _body(part: dict, camel: str, snake: str):
    return part.get(camel) or part.get(snake)


def user(text: str) -> dict:
    return {"role": "user", "parts": [{"text": text}]}


def model(text: str) -> dict:
    return {"role": "model", "parts": [{"text": text}]}


def call(name: str, call_id: str | None = None, **args) -> dict:
    body = {"name": name, "args": args}
    return {"functionCall": {**({"id": call_id} if call_id else {}), **body}}


def response(name: str, output: str, call_id: str | None = None) -> dict:
    return {"functionResponse": {**({"id": call_id} if call_id else {}), "name": name, "response": {"output": output}}}


def rounds(n: int, size: int = 4000, ids: bool = True) -> list[dict]:
    contents = [user("Read every chapter.")]
    for i in range(n):
        contents.append({"role": "model", "parts": [call("read_file", f"c{i}" if ids else None, path=f"ch{i}.md")]})
        contents.append({"role": "user", "parts": [response("read_file", f"chapter {i} " + "x" * size, f"c{i}" if ids else None)]})
    return contents


def request_bytes(contents: list[dict], **fields) -> bytes:
    return orjson.dumps({**fields, "contents": contents})


def read(data: bytes, name: str = "request.json"):
    [transcript] = read_transcripts(name, io.BytesIO(data))
    return transcript.materialize()


def fitted(contents: list[dict], budget: int, **fields):
    transcript = read(request_bytes(contents, **fields))
    done = fit_transcript(transcript, FitOptions(budget=budget))
    payload = orjson.loads(done.payload)
    assert validate_request(payload, "gemini") == [], done.payload
    assert gemini_problems(payload) == [], done.payload
    return done, payload


# --- reading ---------------------------------------------------------------------------------


def test_a_request_is_read_as_gemini_with_its_fixed_part_and_other_fields():
    data = request_bytes(rounds(1), systemInstruction={"parts": [{"text": "Be brief."}]},
                         tools=[{"functionDeclarations": [{"name": "read_file"}]}],
                         generationConfig={"temperature": 0})
    transcript = read(data)
    assert (transcript.format, transcript.dialect) == ("request", "gemini")
    assert [m.role.value for m in transcript.messages] == ["user", "assistant", "user"]
    assert transcript.system[0].parts[0].text == "Be brief."
    assert [k for k, _ in transcript.extra] == ["generationConfig"]
    call_part, result_part = transcript.messages[1].parts[0], transcript.messages[2].parts[0]
    assert (call_part.kind.value, call_part.tool, call_part.call_id) == ("tool_call", "read_file", "c0")
    assert (result_part.kind.value, result_part.call_id) == ("tool_result", "c0")
    assert result_part.text.startswith("chapter 0 ")  # Gemini CLI's {"output": ...}: the text


def test_parts_of_every_kind_and_both_spellings_are_read():
    content = {"role": "model", "parts": [
        {"text": "thinking...", "thought": True, "thoughtSignature": "c2ln"},
        {"function_call": {"name": "ls", "args": {"dir": "."}}},
        {"executableCode": {"language": "PYTHON", "code": "print(1)"}}]}
    answer = {"role": "user", "parts": [{"function_response": {"name": "ls", "response": {"files": ["a"]}}},
                                         {"inline_data": {"mime_type": "application/octet-stream", "data": "AAAA"}}]}
    transcript = read(request_bytes([user("go"), content, answer]))
    kinds = [[p.kind.value for p in m.parts] for m in transcript.messages]
    assert kinds == [["text"], ["thinking", "tool_call", "text"], ["tool_result", "image"]]
    assert transcript.messages[1].parts[1].call_id == transcript.messages[2].parts[0].call_id == "ls#0"
    assert transcript.messages[2].parts[0].text == '{"files":["a"]}'


def test_a_list_of_contents_and_contents_one_per_line_are_gemini():
    contents = rounds(2, size=10)
    assert read(orjson.dumps(contents)).dialect == "gemini"
    lines = b"\n".join(orjson.dumps(c) for c in contents) + b"\n"
    transcript = read(lines, "chat.jsonl")
    assert (transcript.format, transcript.dialect, len(transcript.messages)) == ("gemini", "gemini", 5)


def test_a_role_ctxfit_does_not_know_is_pinned_not_refused():
    """DESIGN §14: a content of an unknown role is kept as it came, counted, and valid."""
    unknown = {"role": "function", "parts": [{"text": "x" * 400}]}
    transcript = read(request_bytes([user("go"), unknown, model("ok")]))
    pinned = transcript.messages[1]
    assert pinned.pinned and pinned.raw == orjson.dumps(unknown)
    assert validate_request({"contents": [user("go"), unknown, model("ok")]}, "gemini") == []


# --- pairing ------------------------------------------------------------------------------------


def test_calls_and_responses_pair_by_id_else_by_name_and_order():
    mixed = [user("go"), {"role": "model", "parts": [call("read", "r1"), call("grep"), call("read", "r2")]},
             {"role": "user", "parts": [response("grep", "g"), response("read", "a"), response("read", "b", "r2")]}]
    transcript = read(request_bytes(mixed))
    assert transcript.repairs == []
    assert [p.call_id for p in transcript.messages[1].parts] == ["r1", "grep#0", "r2"]
    assert [p.call_id for p in transcript.messages[2].parts] == ["grep#0", "r1", "r2"]


def test_a_round_without_ids_pairs_the_kth_call_of_a_name_with_its_kth_response():
    contents = [user("go"), {"role": "model", "parts": [call("read"), call("read")]},
                {"role": "user", "parts": [response("read", "a"), response("read", "b")]}]
    transcript = read(request_bytes(contents))
    assert [p.call_id for p in transcript.messages[2].parts] == ["read#0", "read#1"]
    assert transcript.repairs == []


# --- repairs ------------------------------------------------------------------------------------


def test_an_open_call_is_answered_with_its_name_and_id_and_reported():
    contents = [user("go"), {"role": "model", "parts": [call("read", "c1"), call("ls")]}]
    transcript = read(request_bytes(contents))
    answer = orjson.loads(transcript.messages[-1].raw)
    assert answer == {"role": "user", "parts": [
        {"functionResponse": {"id": "c1", "name": "read", "response": {"error": ABORTED_CALL}}},
        {"functionResponse": {"name": "ls", "response": {"error": ABORTED_CALL}}}]}
    assert len(transcript.repairs) == 2 and "aborted" in transcript.repairs[0]


def test_orphans_are_dropped_model_runs_merged_and_empty_contents_dropped():
    contents = [model("Hello."), user("one"), {"role": "user", "parts": []}, user("two"),
                {"role": "user", "parts": [response("read", "orphan", "zz")]}, model("ok"), model("and more")]
    transcript = read(request_bytes(contents))
    payload = orjson.loads(fit_transcript(transcript, FitOptions(budget=10_000)).payload)
    assert gemini_problems(payload) == [] and validate_request(payload, "gemini") == []
    # User contents in a row are sent as they came (the API takes them); the model's are merged.
    assert [c["role"] for c in payload["contents"]] == ["user", "model", "user", "user", "model"]
    assert payload["contents"][4]["parts"] == [{"text": "ok"}, {"text": "and more"}]
    repairs = " | ".join(transcript.repairs)
    for what in ("starts with an assistant", "no parts", "merged two model contents", "no call before it"):
        assert what in repairs, repairs
    assert "merged two user contents" not in repairs


# --- fitting ----------------------------------------------------------------------------------


def test_clearing_replaces_the_oldest_responses_and_keeps_every_other_byte():
    contents = rounds(8)
    data = request_bytes(contents, systemInstruction={"parts": [{"text": "Be brief."}]})
    done, payload = fitted(contents, 6000, systemInstruction={"parts": [{"text": "Be brief."}]})
    assert done.plan.stage == "clear"
    cleared = [i for i, c in enumerate(payload["contents"])
               if c["parts"][0].get("functionResponse", {}).get("response") == {"output": CLEARED_RESULT}]
    assert cleared and cleared == list(range(2, 2 + 2 * len(cleared), 2))  # the oldest ones
    first = payload["contents"][cleared[0]]["parts"][0]["functionResponse"]
    assert (first["id"], first["name"]) == ("c0", "read_file")
    for i, content in enumerate(payload["contents"]):
        if i not in cleared:
            assert orjson.dumps(content) in data  # unchanged contents leave as they came


def test_trimming_notes_the_first_content_and_merges_the_kept_user_turn_into_it():
    contents = [user("Task."), model("On it.")]
    for turn in range(6):
        contents += [user(f"question {turn} " + "q" * 3000), model(f"answer {turn} " + "a" * 3000)]
    done, payload = fitted(contents, 3000)
    assert done.plan.stage == "turns"
    head = payload["contents"][0]
    assert head["parts"][0] == {"text": "Task."} and head["parts"][1] == {"text": TRIMMED_HISTORY}
    assert head["parts"][2]["text"].startswith("question ")  # the kept turn, merged in
    assert len(done.payload) < len(request_bytes(contents))


def test_one_long_turn_keeps_whole_rounds():
    done, payload = fitted(rounds(12, size=2000), 2500)
    assert done.plan.stage in ("clear", "rounds")
    done, payload = fitted(rounds(12, size=2000), 900)
    assert done.plan.stage == "rounds"
    assert payload["contents"][1]["role"] == "model"


def test_the_agent_note_goes_into_system_instruction():
    transcript = read(request_bytes(rounds(1, size=10)))
    noted = with_agent_note(transcript)
    payload = orjson.loads(fit_transcript(noted, FitOptions(budget=10_000)).payload)
    assert "Context management" in payload["systemInstruction"]["parts"][-1]["text"]
    assert validate_request(payload, "gemini") == []


def test_fit_then_estimate_reads_the_payload_back_as_gemini(tmp_path):
    path = tmp_path / "request.json"
    path.write_bytes(request_bytes(rounds(6), systemInstruction={"parts": [{"text": "Be brief."}]},
                                   generationConfig={"maxOutputTokens": 100}))
    done = invoke(["fit", "--budget", "5000", "--json", str(path)])
    assert done.exit_code == 0, done.stderr
    document = orjson.loads(done.stdout_bytes)
    [report], [payload] = document["reports"], document["payloads"]
    assert report["dialect"] == "gemini" and list(payload)[0] == "generationConfig"
    back = invoke(["estimate", "--json", "-"], input=orjson.dumps(payload))
    assert back.exit_code == 0, back.stderr
    estimate = orjson.loads(back.stdout_bytes)
    assert estimate["total"]["tokens"] == report["tokens_sent"]
    refit = invoke(["fit", "--budget", "5000", "-"], input=orjson.dumps(payload))
    assert refit.stdout_bytes == orjson.dumps(payload) + b"\n"


# --- the validator ------------------------------------------------------------------------------


KNOWN_BAD = {
    "the first content from the model": [model("hi"), user("go")],
    "a role the API does not know": [user("go"), {"role": "assistant", "parts": [{"text": "x"}]}],
    "empty parts": [user("go"), {"role": "model", "parts": []}],
    "an empty text part": [user("go"), model("")],
    "two kinds of data in one part": [{"role": "user", "parts": [{"text": "a", "inlineData": {"data": "", "mimeType": "x"}}]}],
    "a call never answered": [user("go"), {"role": "model", "parts": [call("ls", "c1")]}, user("next")],
    "a call at the end": [user("go"), {"role": "model", "parts": [call("ls", "c1")]}],
    "fewer responses than calls": [user("go"), {"role": "model", "parts": [call("ls"), call("ls")]},
                                   {"role": "user", "parts": [response("ls", "a")]}],
    "a response with no call before it": [user("go"), model("ok"), {"role": "user", "parts": [response("ls", "a")]}],
    "a response answering another call's id": [user("go"), {"role": "model", "parts": [call("ls", "c1")]},
                                               {"role": "user", "parts": [response("ls", "a", "c9")]}],
    "a response of another name": [user("go"), {"role": "model", "parts": [call("ls")]},
                                   {"role": "user", "parts": [response("cat", "a")]}],
    "a call from the user": [{"role": "user", "parts": [call("ls")]}],
    "a call without a name": [user("go"), {"role": "model", "parts": [{"functionCall": {"args": {}}}]},
                              {"role": "user", "parts": [{"functionResponse": {"response": {}}}]}],
}


@pytest.mark.parametrize("case", KNOWN_BAD, ids=list(KNOWN_BAD))
def test_the_validator_refuses_what_the_api_refuses(case):
    body = {"contents": KNOWN_BAD[case]}
    assert validate_request(body, "gemini"), case
    assert gemini_problems(body), f"the independent check misses {case}"


def test_the_validator_accepts_what_the_api_accepts():
    signed = {"role": "model", "parts": [{"text": "", "thoughtSignature": "c2ln"}, call("ls", "c1")]}
    good = [user("go"), signed, {"role": "user", "parts": [response("ls", "a", "c1"), {"text": "and now?"}]},
            model("done")]
    assert validate_request({"contents": good, "systemInstruction": {"parts": [{"text": "x"}]},
                             "tools": [{"functionDeclarations": [{"name": "ls"}]}, {"googleSearch": {}}]},
                            "gemini") == []
    assert validate_request({"contents": [user("go")], "tools": [{"name": "ls", "input_schema": {}}]}, "gemini")
    # Gemini CLI 0.61's router request: two user contents in a row, which the API takes.
    assert validate_request({"contents": [user("history"), user("route this")]}, "gemini") == []
    # Gemini CLI 0.61 on resume: one call answered twice under its id.
    twice = [user("go"), {"role": "model", "parts": [call("ls", "c1")]},
             {"role": "user", "parts": [response("ls", "a", "c1"), response("ls", "a", "c1")]}]
    assert validate_request({"contents": twice}, "gemini") == []


# --- properties ----------------------------------------------------------------------------------


@st.composite
def conversations(draw):
    """A Gemini conversation: the task, then turns of rounds with parallel calls, ids or not."""
    contents = [user("Task: " + "t" * draw(st.integers(0, 400)))]
    for turn in range(draw(st.integers(1, 4))):
        if turn:
            contents.append(user(f"turn {turn} " + "u" * draw(st.integers(0, 2000))))
        for r in range(draw(st.integers(0, 4))):
            names = draw(st.lists(st.sampled_from(["read", "grep", "ls"]), min_size=1, max_size=3))
            ids = draw(st.booleans())
            calls = [call(n, f"t{turn}r{r}c{k}" if ids else None) for k, n in enumerate(names)]
            answers = [response(n, "o" * draw(st.integers(0, 3000)), f"t{turn}r{r}c{k}" if ids else None)
                       for k, n in enumerate(names)]
            if draw(st.booleans()):
                answers.reverse()  # answered in another order: ids (or names and order) pair them
            contents += [{"role": "model", "parts": calls}, {"role": "user", "parts": answers}]
        contents.append(model("turn done " + "m" * draw(st.integers(0, 800))))
    return contents


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contents=conversations(), budget=st.integers(200, 20_000))
def test_any_conversation_fits_into_a_valid_request_and_unchanged_contents_keep_their_bytes(contents, budget):
    data = request_bytes(contents)
    before = orjson.dumps(contents)
    transcript = read(data)
    assert transcript.repairs == [] or any("merged" in r for r in transcript.repairs)
    done = fit_transcript(transcript, FitOptions(budget=budget))
    if done.plan.cannot_fit:
        return
    payload = orjson.loads(done.payload)
    assert validate_request(payload, "gemini") == []
    assert gemini_problems(payload) == []
    assert orjson.dumps(contents) == before  # the input is never changed
    changed = 0
    for content in payload["contents"]:
        if orjson.dumps(content) not in data:
            changed += 1
    assert changed <= len(done.plan.cleared) + 1  # cleared results, and the noted first content
    assert fit_transcript(read(data), FitOptions(budget=budget)).payload == done.payload


@settings(max_examples=25, deadline=None)
@given(contents=conversations())
def test_as_a_conversation_grows_the_cleared_set_only_grows(contents):
    budget = 4000
    previous: set = set()
    for end in range(2, len(contents) + 1):
        if contents[end - 1]["role"] != "model":
            continue
        done = fit_transcript(read(request_bytes(contents[:end])), FitOptions(budget=budget))
        now = {(ref.index, ref.call_id) for ref in done.plan.cleared}
        assert previous <= now
        previous = now
