"""The library on Gemini contents: dicts and the real google-genai SDK's objects in, the same kind
out, and an agent loop with the real SDK whose every request, as the SDK sends it over a loopback
socket, is a valid generateContent body within the budget."""

from __future__ import annotations

import http.server
import threading

import orjson
import pytest

from ctxfit_cli import Session, count, fit, validate_request
from ctxfit_cli.core.notes import CLEARED_RESULT, TRIMMED_HISTORY
from test_gemini import gemini_problems

types = pytest.importorskip("google.genai.types")
genai = pytest.importorskip("google.genai")

SYSTEM = "You read files for the user."
TOOLS = [types.Tool(function_declarations=[types.FunctionDeclaration(
    name="read_file", description="Read a file.",
    parameters=types.Schema(type="OBJECT", properties={"path": types.Schema(type="STRING")}))])]


def history(steps: int, size: int = 4000, ids: bool = True, response_ids: bool = True) -> list:
    contents = [types.Content(role="user", parts=[types.Part.from_text(text="Read every chapter.")])]
    for i in range(steps):
        call = types.FunctionCall(name="read_file", args={"path": f"ch{i}.md"}, id=f"c{i}" if ids else None)
        contents.append(types.Content(role="model", parts=[types.Part(function_call=call)]))
        answer = types.FunctionResponse(name="read_file", response={"output": f"{i} " + "x" * size},
                                        id=f"c{i}" if ids and response_ids else None)
        contents.append(types.Content(role="user", parts=[types.Part(function_response=answer)]))
    return contents


def as_body(contents: list) -> dict:
    return {"contents": [c.model_dump(exclude_none=True, mode="json", by_alias=True) if hasattr(c, "model_dump")
                         else c for c in contents]}


def test_sdk_contents_come_back_as_sdk_contents_the_unchanged_ones_the_very_same():
    given = history(8)
    before = [c.model_dump() for c in given]
    sent = fit(given, budget=6000, system=SYSTEM, tools=TOOLS)
    assert [c.model_dump() for c in given] == before  # the caller's objects are never changed
    assert all(isinstance(c, types.Content) for c in sent)
    cleared = [c for c in sent if c.parts[0].function_response
               and c.parts[0].function_response.response == {"output": CLEARED_RESULT}]
    assert cleared and cleared[0].parts[0].function_response.id == "c0"
    assert sent[-1] is given[-1] and sent[0] is given[0]
    body = as_body(sent)
    assert validate_request(body, "gemini") == [] and gemini_problems(body) == []


@pytest.mark.parametrize("spelling", ["camel", "snake"])
def test_dicts_in_either_spelling_come_back_as_dicts(spelling):
    given = [c.model_dump(exclude_none=True, mode="json", by_alias=spelling == "camel") for c in history(8)]
    sent = fit(given, budget=6000)
    assert all(type(c) is dict for c in sent) and sent[-1] is given[-1]
    key = "functionResponse" if spelling == "camel" else "function_response"
    assert sent[2]["parts"][0][key]["response"] == {"output": CLEARED_RESULT}
    assert validate_request({"contents": sent}, "gemini") == [] and gemini_problems({"contents": sent}) == []


def test_responses_without_ids_are_paired_with_calls_by_name_and_order():
    """What an SDK loop holds: the model's calls have ids, `Part.from_function_response` none."""
    given = history(12, size=2000, response_ids=False)
    session = Session(budget=800, system=SYSTEM)
    sent = session.fit(given)
    # Stage 3 can cut only between rounds: it found them, so each response answered its call.
    assert session.plan.stage == "rounds" and sent[0].parts[-1].text == TRIMMED_HISTORY
    body = as_body(sent)
    assert validate_request(body, "gemini") == [] and gemini_problems(body) == []


def test_a_session_pays_for_what_is_new_and_its_cleared_set_only_grows():
    session = Session(budget=6000, system=types.Content(parts=[types.Part.from_text(text=SYSTEM)]), tools=TOOLS)
    assert session.dialect == "gemini"
    grown = history(1)
    cleared_before: set = set()
    for step in range(1, 14):
        sent = session.fit(grown)
        body = as_body(sent)
        assert validate_request(body, "gemini") == [] and gemini_problems(body) == [], step
        cleared = {ref.call_id for ref in session.plan.cleared}
        assert cleared_before <= cleared
        cleared_before = cleared
        grown = grown + history(step + 1)[-2:]
    assert cleared_before


def test_count_takes_sdk_objects_a_system_instruction_and_tools():
    contents = history(2, size=400)
    bare = count(contents)
    assert bare == count([c.model_dump(exclude_none=True, mode="json", by_alias=True) for c in contents])
    assert count(contents, system=SYSTEM) > bare
    assert count(contents, system=SYSTEM, tools=TOOLS) > count(contents, system=SYSTEM)


# --- an agent loop with the real SDK, against a provider on loopback -------------------------------


class _Provider(http.server.BaseHTTPRequestHandler):
    """generateContent: a read_file call for each of the first `STEPS` requests, then text."""

    STEPS = 14
    bodies: list[dict] = []

    def do_POST(self) -> None:
        body = orjson.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append({"path": self.path, "body": body})
        step = len(self.bodies)
        if step <= self.STEPS:
            part = {"functionCall": {"id": f"call-{step}", "name": "read_file", "args": {"path": f"ch{step}.md"}}}
        else:
            part = {"text": "All read."}
        reply = orjson.dumps({"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}],
                              "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1}})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *_) -> None:
        pass


@pytest.fixture
def provider():
    _Provider.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Provider)  # listening once made
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Provider.bodies
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def test_an_agent_loop_with_the_real_sdk_sends_valid_requests_within_the_budget(provider):
    from ctxfit_cli.formats import read_transcripts
    from ctxfit_cli.core.costs import total_tokens
    import io

    url, bodies = provider
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=url))
    config = types.GenerateContentConfig(system_instruction=SYSTEM, tools=TOOLS)
    budget = 5000
    session = Session(budget=budget, system=config.system_instruction, tools=config.tools)
    contents = [types.Content(role="user", parts=[types.Part.from_text(text="Read every chapter.")])]
    while True:
        reply = client.models.generate_content(model="gemini-2.5-flash", contents=session.fit(contents), config=config)
        content = reply.candidates[0].content
        contents.append(content)
        calls = [p.function_call for p in content.parts if p.function_call]
        if not calls:
            break
        contents.append(types.Content(role="user", parts=[types.Part.from_function_response(
            name=c.name, response={"output": f"{c.args['path']}: " + "z" * 3000}) for c in calls]))
    assert len(bodies) == _Provider.STEPS + 1
    for sent in bodies:
        assert sent["path"].endswith("/models/gemini-2.5-flash:generateContent")
        body = sent["body"]
        assert validate_request(body, "gemini") == [] and gemini_problems(body) == []
        [transcript] = read_transcripts("body", io.BytesIO(orjson.dumps(body)))
        transcript = transcript.materialize()
        assert total_tokens([*transcript.fixed, *transcript.messages]) <= budget
    assert any(CLEARED_RESULT in orjson.dumps(s["body"]).decode() for s in bodies)
