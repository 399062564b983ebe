"""Unknown is pinned, never refused (DESIGN §14, issue #33 item 1).

A message, item or role ctxfit does not know — Claude Code 2.1's `system` entries inside
`messages`, Codex 0.171's `additional_tools` and `configuration_update` items, a Gemini content of
an unknown role — is kept in place byte for byte, counted, never cleared and never left out by
trimming; the request around it is still fitted, and valid. An unknown block or part inside a
known message is counted and sent unchanged with its message. `fit`, `estimate` and the library
(`fit`, `Session`, which the proxy runs) read such a request alike.

The property test inserts unknown entries of every kind anywhere into requests made from the real
logs in ../shared/realworld (and a Codex Responses body of the shape Codex 0.171 sends).
"""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path

import orjson
import pytest
from conftest import REALWORLD, needs_realworld, read
from fuzzing import invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fit_properties import budgets, conversations
from test_replay_oracle import brute_shared, brute_still_sent, walk

from ctxfit_cli import api
from ctxfit_cli.core.costs import MESSAGE_OVERHEAD, message_cost
from ctxfit_cli.core.fitting import FitOptions
from ctxfit_cli.core.notes import CLEARED_RESULT
from ctxfit_cli.core.validate import validate_request
from ctxfit_cli.formats import PARSERS, read_transcripts
from ctxfit_cli.formats.common import Where
from ctxfit_cli.formats.payload import fit_transcript

#: Where each dialect keeps its conversation in a request.
ARRAY = {"anthropic": "messages", "openai": "messages", "responses": "input", "gemini": "contents"}


def fitted(request: dict, budget: int, **options) -> tuple[dict, object]:
    """The request fitted by `fit`'s own path: (payload, plan)."""
    [transcript] = read_transcripts("request.json", io.BytesIO(orjson.dumps(request)), "request")
    done = fit_transcript(transcript.materialize(), FitOptions(budget=budget, **options))
    return orjson.loads(done.payload), done


def read_dialect(request: dict) -> str:
    [transcript] = read_transcripts("request.json", io.BytesIO(orjson.dumps(request)), "request")
    return transcript.dialect


# --- requests as the agents send them today --------------------------------------------------------


def claude_code_body(reads: int = 10, size: int = 6000) -> dict:
    """A Claude Code 2.1 request: the agent list as a `system` entry at messages[1], and the
    "task tools haven't been used recently" reminders after two results (with the
    `mid-conversation-system-2026-04-07` beta, each follows a user turn, before the reply)."""
    messages: list[dict] = [
        {"role": "user", "content": [{"type": "text", "text": "Read the ten files and summarise them."}]},
        {"role": "system", "content": [{"type": "text", "text": "Available agents: general-purpose, Explore. " * 20}]},
    ]
    for i in range(reads):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Reading file {i}."},
            {"type": "tool_use", "id": f"toolu_{i:02d}", "name": "Read", "input": {"file_path": f"/w/f{i}.txt"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i:02d}", "content": f"line of file {i}\n" * (size // 16)}]})
        if i in (4, 8):
            messages.append({"role": "system", "content": "The task tools haven't been used recently."})
    return {"model": "claude-opus-4-8", "max_tokens": 32000,
            "system": [{"type": "text", "text": "You are Claude Code."}],
            "tools": [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}}],
            "messages": messages}


def codex_body(reads: int = 10, size: int = 6000) -> dict:
    """A Codex 0.171 Responses request: no top-level tools or instructions, `input[0]` an
    `additional_tools` item, `configuration_update` items, reasoning with `encrypted_content`,
    and the code-mode `exec` tool's `custom_tool_call` / `custom_tool_call_output` pairs."""
    items: list[dict] = [
        {"type": "additional_tools", "tools": [{"type": "custom", "name": "exec", "description": "Run code. " * 30}]},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Read the ten files."}]},
        {"type": "configuration_update", "reasoning": {"effort": "high"}},
    ]
    for i in range(reads):
        items.append({"type": "reasoning", "summary": [], "encrypted_content": "gAAAA" + "x" * 200})
        items.append({"type": "custom_tool_call", "call_id": f"call_{i}", "name": "exec", "input": f"cat /w/f{i}.txt"})
        items.append({"type": "custom_tool_call_output", "call_id": f"call_{i}",
                      "output": f"line of file {i}\n" * (size // 16)})
        if i == 5:
            items.append({"type": "configuration_update", "reasoning": {"effort": "low"}})
    return {"model": "gpt-6.2-sol", "stream": True, "store": False, "input": items}


def gemini_resume_body(reads: int = 6) -> dict:
    """Gemini CLI 0.61 on resume: every tool result sent twice under its call's id."""
    contents: list[dict] = [{"role": "user", "parts": [{"text": "Read the files."}]}]
    for i in range(reads):
        contents.append({"role": "model", "parts": [
            {"functionCall": {"id": f"c{i}", "name": "read_file", "args": {"path": f"f{i}"}},
             "thoughtSignature": "c2ln"}]})
        output = {"output": f"line {i}\n" * 600}
        response = {"functionResponse": {"id": f"c{i}", "name": "read_file", "response": output}}
        contents.append({"role": "user", "parts": [response, response]})
    contents += [{"role": "model", "parts": [{"text": "Done."}]}, {"role": "user", "parts": [{"text": "Go on."}]}]
    return {"contents": contents, "systemInstruction": {"parts": [{"text": "You are Gemini CLI."}]}}


def in_order(payload: bytes, pieces: list[bytes]) -> bool:
    """Whether every piece is in `payload`, each after the one before."""
    at = 0
    for piece in pieces:
        found = payload.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def pinned_tokens(entries: list[dict], dialect: str) -> int:
    return sum(message_cost(PARSERS[dialect](e, orjson.dumps(e), Where("x", 0))).tokens for e in entries)


# --- the shapes seen with the real agents ----------------------------------------------------------


@pytest.mark.parametrize("budget", [100_000, 8_000, 2_000, 1_000])
def test_claude_codes_system_entries_are_kept_in_place_and_the_request_fitted(budget):
    body = claude_code_body()
    entries = [m for m in body["messages"] if m["role"] == "system"]
    payload, done = fitted(body, budget)
    sent = orjson.dumps(payload)
    assert validate_request(payload, "anthropic") == []
    assert in_order(sent, [orjson.dumps(e) for e in entries])
    assert done.tokens <= budget or done.plan.overrun
    if budget < 10_000:  # fitted, not passed through
        assert done.plan.cleared and (CLEARED_RESULT.encode() in sent or done.plan.dropped)
    if budget <= 2_000:
        assert done.plan.stage == "rounds" and done.plan.pinned  # rounds left out, the entries kept
    # A system entry follows a user turn: the first message (with the note and the kept turn
    # merged into it when trimmed), never stands first.
    assert payload["messages"][0]["role"] == "user" and payload["messages"][1] == entries[0]


def test_a_claude_code_body_reads_alike_in_estimate_fit_and_the_library():
    body = claude_code_body()
    estimate = invoke(["estimate", "--json", "-"], input=orjson.dumps(body))
    assert estimate.exit_code == 0, estimate.stderr
    report = orjson.loads(estimate.stdout_bytes)
    assert report["total"]["messages"] == len(body["messages"])  # the system entries are numbered
    fit = invoke(["fit", "--budget", "3000", "-"], input=orjson.dumps(body))
    assert fit.exit_code == 0, fit.stderr
    again = orjson.loads(invoke(["estimate", "--json", "-"], input=fit.stdout_bytes).stdout_bytes)
    assert again["total"]["tokens"] <= 3000 < report["total"]["tokens"]  # fitted, as `fit` said
    sent = api.fit(body["messages"], 3_000, system=body["system"], tools=body["tools"])
    payload, _ = fitted(body, 3_000)
    assert [orjson.dumps(m) for m in sent] == [orjson.dumps(m) for m in payload["messages"]]


@pytest.mark.parametrize("budget", [100_000, 4_000, 1_500])
def test_codexs_unknown_items_are_kept_and_its_custom_tool_calls_cleared(budget):
    body = codex_body()
    unknown = [i for i in body["input"] if i["type"] in ("additional_tools", "configuration_update")]
    payload, done = fitted(body, budget)
    sent = orjson.dumps(payload)
    assert validate_request(payload, "responses") == []
    assert in_order(sent, [orjson.dumps(i) for i in unknown])  # stage 3 keeps configuration_update
    assert payload["input"][0] == unknown[0]
    outputs = [i for i in payload["input"] if i["type"] == "custom_tool_call_output"]
    calls = {i["call_id"] for i in payload["input"] if i["type"] == "custom_tool_call"}
    assert {o["call_id"] for o in outputs} == calls  # pairs never split
    if budget < 10_000:  # recognised results are cleared (those left out went with their rounds)
        assert done.plan.cleared and (any(o["output"] == CLEARED_RESULT for o in outputs) or done.plan.dropped)
        assert done.tokens <= budget or done.plan.overrun
    library = api.fit(body["input"], budget, dialect="responses")
    assert [orjson.dumps(i) for i in library] == [orjson.dumps(i) for i in payload["input"]]


def test_gemini_cli_results_sent_twice_are_both_counted_and_the_request_fitted():
    body = gemini_resume_body()
    once = gemini_resume_body()
    for content in once["contents"]:
        if any("functionResponse" in p for p in content["parts"]):
            content["parts"] = content["parts"][:1]
    assert validate_request(body, "gemini") == []
    _, whole = fitted(body, 1_000_000)
    _, single = fitted(once, 1_000_000)
    assert whole.tokens > single.tokens + 2_000  # what is sent is counted: both copies
    payload, done = fitted(body, 2_000)
    assert validate_request(payload, "gemini") == [] and done.plan.cleared
    for content in payload["contents"]:
        responses = [p for p in content["parts"] if "functionResponse" in p]
        assert len(responses) in (0, 2) and (not responses or responses[0] == responses[1])
    library = api.fit(body["contents"], 2_000, system=body["systemInstruction"], dialect="gemini")
    assert [orjson.dumps(c) for c in library] == [orjson.dumps(c) for c in payload["contents"]]


def test_gemini_clis_router_request_is_valid_and_sent_as_it_came():
    body = {"contents": [{"role": "user", "parts": [{"text": "the history"}]},
                         {"role": "user", "parts": [{"text": "Pick the model for this request."}]}],
            "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {"type": "object"}}}
    assert validate_request(body, "gemini") == []
    payload, done = fitted(body, 1_000)
    assert payload["contents"] == body["contents"] and not done.plan.cleared
    assert api.fit(body["contents"], 1_000, dialect="gemini") == body["contents"]


def test_unknown_roles_are_pinned_in_every_chat_dialect():
    odd = {"role": "critic", "content": "Be harsher."}
    user = {"role": "user", "content": "Review this."}
    for dialect, reply in (("anthropic", {"role": "assistant", "content": "Done."}),
                           ("openai", {"role": "assistant", "content": "Done.", "refusal": None})):
        messages = [user, odd, reply]
        assert validate_request({"messages": messages}, dialect) == []
        message = PARSERS[dialect](odd, orjson.dumps(odd), Where("x", 0))
        assert message.pinned and message_cost(message).tokens > 0
    odd_item = {"type": "message", "role": "critic", "content": "Be harsher."}
    assert validate_request({"input": [{"role": "user", "content": "hi"}, odd_item]}, "responses") == []


def test_a_known_mistake_is_still_refused():
    """Only what ctxfit does not know is let through: another API's role in a Gemini content is
    what the API refuses (`Please use a valid role: user, model.`)."""
    problems = validate_request({"contents": [{"role": "user", "parts": [{"text": "go"}]},
                                              {"role": "assistant", "parts": [{"text": "x"}]}]}, "gemini")
    assert problems and "role" in problems[0]


# --- the property: unknown entries anywhere in real requests --------------------------------------


def _open_free_prefix(messages: list[dict], dialect: str, limit: int) -> list[dict]:
    """The longest prefix of at most `limit` messages that leaves no call open."""
    best = 1
    for k in range(1, min(limit, len(messages)) + 1):
        last, following = messages[k - 1], messages[k] if k < len(messages) else None
        if dialect == "anthropic" and last.get("role") == "user":
            best = k
        elif dialect == "openai" and last.get("role") in ("user", "tool") and (
                following is None or following.get("role") != "tool"):
            best = k
        elif dialect == "gemini" and last.get("role", "user") == "user":
            best = k
    return messages[:best]


def _real_request(log: str, limit: int = 60) -> dict:
    """A request an agent sends, from a real log (`ctxfit fit` at a budget that keeps it all),
    cut to at most `limit` messages where no call is open."""
    with open(REALWORLD / log, "rb") as stream:
        transcript = next(read_transcripts(log, stream)).materialize()
    payload = orjson.loads(fit_transcript(transcript.materialize(), FitOptions(budget=10**9)).payload)
    dialect = transcript.dialect
    key = ARRAY[dialect]
    payload[key] = _open_free_prefix(payload[key], dialect, limit)
    return payload


#: Real logs with tool rounds to clear and to leave out, one per dialect they are sent as (and a
#: sub-agent's: one turn, stage 3 only).
REAL_LOGS = (
    "claude-code/full-session-four.jsonl",
    "claude-code/spotter_4d5611e5_agent-a2898e3.jsonl",
    "codex/rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl",
    "gemini-cli/session-2025-10-29T10-36-453aa339.json",
)
_BASES: dict[str, dict] = {}


def _base(name: str) -> dict:
    if name not in _BASES:
        _BASES[name] = codex_body(reads=8, size=3000) if name == "codex-responses" else _real_request(name)
    return _BASES[name]


def _unknown_entries(dialect: str) -> list[dict]:
    """Entries of each kind ctxfit does not know, as each dialect would carry them."""
    text = "A note the agent added. " * 12
    if dialect == "anthropic":
        return [{"role": "system", "content": [{"type": "text", "text": text}]}, {"role": "critic", "content": text}]
    if dialect == "openai":
        return [{"role": "critic", "content": text}, {"role": "observer", "content": [{"type": "text", "text": text}]}]
    if dialect == "responses":
        return [{"type": "configuration_update", "reasoning": {"effort": "low"}},
                {"type": "additional_tools", "tools": [{"type": "custom", "name": "exec", "description": text}]},
                {"type": "future_item", "payload": {"note": text}}]
    return [{"role": "critic", "parts": [{"text": text}]}, {"role": "observer", "parts": [{"futurePart": {"x": text}}]}]


def _unknown_block(dialect: str) -> dict:
    return {"anthropic": {"type": "future_block", "data": "new " * 40},
            "openai": {"type": "future_part", "data": "new " * 40},
            "responses": {"type": "future_part", "data": "new " * 40},
            "gemini": {"futurePart": {"data": "new " * 40}}}[dialect]


def _with_block(entry: dict, block: dict, dialect: str) -> dict | None:
    """The message with the unknown block added to its content (None when it takes none)."""
    if dialect == "gemini":
        return {**entry, "parts": [*entry.get("parts", []), block]} if entry.get("role", "user") == "user" else None
    if dialect == "responses":
        if entry.get("type", "message") != "message" or entry.get("role") != "user":
            return None
        content = entry["content"]
        parts = [{"type": "input_text", "text": content}] if isinstance(content, str) else list(content)
        return {**entry, "content": [*parts, block]}
    if entry.get("role") != "user":
        return None
    content = entry.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    return {**entry, "content": [*blocks, block]}


@needs_realworld
@settings(max_examples=int(os.environ.get("PIN_EXAMPLES", 40)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), name=st.sampled_from([*REAL_LOGS, "codex-responses"]),
       share=st.sampled_from([2.0, 0.5, 0.2, 0.05]))
def test_unknown_entries_anywhere_are_kept_in_order_and_the_rest_fits_as_before(data, name, share):
    base = _base(name)
    dialect = read_dialect(base)
    key = ARRAY[dialect]
    known = base[key]
    kinds = _unknown_entries(dialect)
    count = data.draw(st.integers(1, 4), label="entries")
    placed = sorted(
        ((data.draw(st.integers(1, len(known)), label="position"), data.draw(st.sampled_from(kinds), label="kind"))
         for _ in range(count)), key=lambda p: p[0])
    entries = [entry for _, entry in placed]
    inserted = list(known)
    for offset, (position, entry) in enumerate(placed):
        inserted.insert(position + offset, entry)
    request = {**base, key: inserted}
    assert validate_request(request, dialect) == [], "an unknown entry is let through"

    budget = max(200, int(share * fitted(request, 10**9)[1].tokens))
    payload, done = fitted(request, budget)
    sent = orjson.dumps(payload)
    assert validate_request(payload, dialect) == []
    assert in_order(sent, [orjson.dumps(e) for e in entries]), "an unknown entry was lost or moved"
    # Counted: the entries add their own tokens to the request (and a message's overhead for each
    # reply an item is put inside of: a Responses reply's items on either side of it are then two).
    added = fitted(request, 10**9)[1].tokens - fitted(base, 10**9)[1].tokens
    extra = pinned_tokens(entries, dialect)
    assert extra <= added <= extra + MESSAGE_OVERHEAD * len(entries)
    # The rest fits as before: the known results cleared are the ones the same fit clears with the
    # entries' tokens taken off the budget or fewer, and at least those it clears with the whole
    # budget; nothing but results is cleared.
    _, alone = fitted(base, budget)
    _, tighter = fitted(base, max(1, budget - extra))
    cleared = {r.call_id for r in done.plan.cleared}
    assert {r.call_id for r in alone.plan.cleared} <= cleared <= {r.call_id for r in tighter.plan.cleared}
    without = [m for m in payload[key] if m not in entries]
    assert validate_request({**payload, key: without}, dialect) == []
    if share >= 2.0:
        assert payload == request  # nothing to do: sent as it came


@needs_realworld
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), name=st.sampled_from([*REAL_LOGS, "codex-responses"]), share=st.sampled_from([2.0, 0.3]))
def test_unknown_blocks_are_counted_and_sent_unchanged_with_their_message(data, name, share):
    base = _base(name)
    dialect = read_dialect(base)
    key = ARRAY[dialect]
    block = _unknown_block(dialect)
    candidates = [i for i, m in enumerate(base[key]) if _with_block(m, block, dialect) is not None]
    chosen = sorted(set(data.draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=3), label="where")))
    changed = list(base[key])
    for i in chosen:
        changed[i] = _with_block(changed[i], block, dialect)
    request = {**base, key: changed}
    assert validate_request(request, dialect) == []
    _, whole = fitted(request, 10**9)
    _, plain = fitted(base, 10**9)
    assert whole.tokens > plain.tokens  # counted
    budget = max(200, int(share * whole.tokens))
    payload, done = fitted(request, budget)
    assert validate_request(payload, dialect) == []
    block_bytes = orjson.dumps(block)
    sent = orjson.dumps(payload)
    if not done.plan.dropped:  # every message sent: every block with it, unchanged
        assert sent.count(block_bytes) == len(chosen)
    else:
        assert sent.count(block_bytes) <= len(chosen)


# --- the proxy reads them as `fit` does ------------------------------------------------------------


PROXY_BUDGET = 8_000


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    from servers import Recorded, fake_provider, proxy

    class Stack(Recorded):
        def __init__(self, tmp) -> None:
            self.record = tmp / "upstream.jsonl"
            self.provider = fake_provider(self.record, steps=4)
            self.proxy = proxy(self.provider.url, "--budget", str(PROXY_BUDGET))
            self.url = self.proxy.url

    stack = Stack(tmp_path_factory.mktemp("pinned"))
    yield stack
    log = stack.proxy.stop()
    stack.provider.stop()
    assert "Traceback" not in log, log[-3000:]


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "claude-3", "codex-3"])
def test_the_proxy_fits_what_the_agents_send_today(stack, agent):
    """Each body goes through fitted: the unknown entries kept in order, results cleared, and no
    "forwarded unchanged, not fitted" (before: Claude Code's body was passed through whole)."""
    import httpx
    from servers import eventually

    body, path, key, headers = {
        "claude": (claude_code_body(), "/v1/messages", "messages",
                   {"x-api-key": "k", "anthropic-beta": "mid-conversation-system-2026-04-07"}),
        "codex": (codex_body(), "/v1/responses", "input", {"authorization": "Bearer k"}),
        "gemini": (gemini_resume_body(), "/v1beta/models/gemini-3.1-pro-preview:generateContent", "contents",
                   {"x-goog-api-key": "k"}),
        "claude-3": (orjson.loads(captured("claude-3")), "/v1/messages", "messages", {"x-api-key": "k"}),
        "codex-3": (orjson.loads(captured("codex-3")), "/v1/responses", "input", {"authorization": "Bearer k"}),
    }[agent]
    dialect = {"claude": "anthropic", "codex": "responses", "gemini": "gemini"}[agent.split("-")[0]]
    unknown = [e for e in body[key] if not _known_entry(e, dialect)]
    mark, skipped = stack.mark(), stack.proxy.stderr.count("not fitted")
    reply = httpx.post(f"{stack.url}{path}", content=orjson.dumps(body), headers=headers, timeout=60)
    assert reply.status_code == 200, reply.text
    [record] = stack.since(mark)
    sent = record["body"]
    assert validate_request(sent, dialect) == []
    assert in_order(orjson.dumps(sent), [orjson.dumps(e) for e in unknown])
    assert len(orjson.dumps(sent)) < len(orjson.dumps(body)) / (2 if agent in ("claude", "codex", "gemini") else 1)
    assert CLEARED_RESULT in orjson.dumps(sent).decode() or len(sent[key]) < len(body[key])
    assert eventually(lambda: stack.proxy.stderr.count(path.split(":")[0].rsplit("/", 1)[-1]) > 0)
    assert stack.proxy.stderr.count("not fitted") == skipped, stack.proxy.stderr[-2000:]


def _known_entry(entry: dict, dialect: str) -> bool:
    if dialect == "responses":
        return entry.get("type") not in ("additional_tools", "configuration_update")
    return entry.get("role", "user") in ("user", "assistant", "model")


# --- bodies captured from the real agents ----------------------------------------------------------

#: Request bodies the real agents sent (byte for byte, gzipped), captured on loopback against a
#: scripted provider on 2026-12-07: Claude Code 2.1.337 and Codex CLI 0.171.0 after 2 tool rounds,
#: Gemini CLI 0.61.0's third request and its router side request.
CAPTURED = Path(__file__).parent / "captured"


def captured(name: str) -> bytes:
    return gzip.decompress((CAPTURED / f"{name}.json.gz").read_bytes())


def _fit_bytes(body: bytes, budget: int) -> tuple[bytes, str]:
    done = invoke(["fit", "--budget", str(budget), "-"], input=body)
    assert done.exit_code == 0, done.stderr
    return done.stdout_bytes.rstrip(b"\n"), done.stderr


@pytest.mark.parametrize("budget", [1_000_000, 20_000, 8_000])
def test_a_captured_claude_code_request_keeps_its_system_entry_and_is_fitted(budget):
    body = captured("claude-3")
    request = orjson.loads(body)
    entry = request["messages"][1]
    assert entry["role"] == "system" and "output_config" in entry  # (the per-turn-control beta's key)
    payload, stderr = _fit_bytes(body, budget)
    sent = orjson.loads(payload)
    assert validate_request(sent, "anthropic") == []
    assert sent["messages"][1] == entry and orjson.dumps(entry) in payload  # in place, as it came
    if budget == 1_000_000:
        assert sent == request  # nothing to do: sent as it came
    else:
        assert "oldest tool rounds left out" in stderr or "cleared" in stderr
    assert [orjson.dumps(m) for m in api.fit(request["messages"], budget, system=request["system"],
                                             tools=request["tools"], dialect="anthropic",
                                             counter="claude")] == [orjson.dumps(m) for m in sent["messages"]]
    estimate = orjson.loads(invoke(["estimate", "--json", "-"], input=body).stdout_bytes)
    assert estimate["total"]["messages"] == len(request["messages"])


@pytest.mark.parametrize("budget", [1_000_000, 20_000])
def test_a_captured_codex_request_keeps_its_unknown_items_and_is_fitted(budget):
    body = captured("codex-3")
    request = orjson.loads(body)
    unknown = [i for i in request["input"] if i.get("type") in ("additional_tools", "configuration_update")]
    assert unknown and unknown[0] == request["input"][0]
    payload, stderr = _fit_bytes(body, budget)
    sent = orjson.loads(payload)
    assert validate_request(sent, "responses") == []
    assert in_order(payload, [orjson.dumps(i) for i in unknown])
    kinds = [i.get("type") for i in sent["input"]]
    assert kinds.count("custom_tool_call") == kinds.count("custom_tool_call_output")  # pairs never split
    if budget == 1_000_000:
        assert sent == request
    else:
        assert "cleared" in stderr or "left out" in stderr
    library = api.fit(request["input"], budget, dialect="responses", counter="safe")
    assert [orjson.dumps(i) for i in library] == [orjson.dumps(i) for i in sent["input"]]


def test_captured_gemini_requests_are_valid_and_the_router_request_is_sent_as_it_came():
    router = orjson.loads(captured("gemini-router-1"))
    assert [c["role"] for c in router["contents"]] == ["user", "user"]
    assert validate_request(router, "gemini") == []
    payload, stderr = _fit_bytes(captured("gemini-router-1"), 20_000)
    assert orjson.loads(payload) == router and "merged" not in stderr
    main = orjson.loads(captured("gemini-3"))
    assert validate_request(main, "gemini") == []
    payload, _ = _fit_bytes(captured("gemini-3"), 8_000)
    assert validate_request(orjson.loads(payload), "gemini") == []


def test_a_kept_turn_merged_into_the_first_message_comes_before_the_pinned_entries():
    """Stage 2 keeps a later turn: its user message joins the first one (roles alternate), and
    the system entries left out around it follow that user turn, as the API places them."""
    body = claude_code_body(reads=6)
    later = claude_code_body(reads=6)["messages"][2:]
    for message in later:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if "id" in block:
                block["id"] += "b"
            if "tool_use_id" in block:
                block["tool_use_id"] += "b"
    body["messages"] += [{"role": "assistant", "content": "Done with the first files."},
                         {"role": "user", "content": "Now read them again."}, *later]
    entries = [m for m in body["messages"] if m["role"] == "system"]
    for budget in (4_000, 2_000):
        payload, done = fitted(body, budget)
        assert (done.plan.anchor is not None) == (budget == 2_000)  # the later turn kept, merged
        assert validate_request(payload, "anthropic") == []
        assert in_order(orjson.dumps(payload), [orjson.dumps(e) for e in entries])
        roles = [m["role"] for m in payload["messages"]]
        if done.plan.dropped:
            assert roles[0] == "user" and roles[1] == "system"
            assert all(roles[i + 1] == "assistant" for i, r in enumerate(roles[:-1]) if r == "system"
                       and roles[i + 1] != "system")
        library = api.fit(body["messages"], budget, system=body["system"], tools=body["tools"])
        assert [orjson.dumps(m) for m in library] == [orjson.dumps(m) for m in payload["messages"]]


# --- the walk's own figures, with pinned entries ---------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation=conversations(), budget=budgets, data=st.data())
def test_every_request_of_a_walk_is_sized_and_shared_as_it_is_sent(conversation, budget, data):
    """With pinned entries anywhere, each request's size (`Shape.tokens`) is what its messages
    cost, and what two requests share or still send is what comparing their messages finds:
    the replay's cache figures count the pinned messages a trimmed request keeps."""
    dialect, lines = conversation
    entry = {"role": "system" if dialect == "anthropic" else "critic", "content": "Mind the tests. " * 30}
    for _ in range(data.draw(st.integers(1, 3), label="entries")):
        lines.insert(data.draw(st.integers(2, len(lines)), label="position"), entry)
    transcript = read(lines, dialect)
    fitter, requests = walk(transcript, FitOptions(budget=budget, window=budget * 3))
    fixed = sum(message_cost(m).tokens for m in transcript.fixed)
    for sent, shape in requests:
        assert shape.tokens == fixed + sum(message_cost(m).tokens for m in sent)
        assert sum(m.pinned for m in sent) == sum(m.pinned for m in transcript.messages[:shape.end])
    for i in range(1, len(requests)):
        for j in range(max(0, i - 3), i):
            (old_sent, old_shape), (new_sent, new_shape) = requests[j], requests[i]
            assert fitter.shared_tokens(old_shape, new_shape) == brute_shared(fixed, old_sent, new_sent)
            assert fitter.still_sent_tokens(old_shape, new_shape) == brute_still_sent(fixed, old_sent, new_sent)


def test_a_transcript_line_of_an_unknown_role_is_counted_not_refused():
    """Before: `:2: unknown role 'robot'`, exit 3. Now the line is pinned and counted; a leading
    `system` line is still the system prompt, and a leading unknown one is not."""
    for data in (b'{"role":"user","content":"hi"}\n{"role":"robot","content":"beep boop"}\n',
                 b'{"role":"robot","content":"beep boop"}\n{"role":"user","content":"hi"}\n'):
        done = invoke(["estimate", "--json", "-"], input=data)
        assert done.exit_code == 0, done.stderr
        assert orjson.loads(done.stdout_bytes)["total"]["messages"] == 2
        fit = invoke(["fit", "-"], input=data)
        assert fit.stdout_bytes == b'{"messages":[' + b",".join(data.splitlines()) + b"]}\n"
