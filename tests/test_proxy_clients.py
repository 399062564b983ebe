"""A proxy shared by a team (issue 35, DESIGN §15): state belongs to its client, and a provider's
count is evidence, not gospel. Real proxy processes on loopback in front of a provider run here,
which answers every dialect and records the bytes it is sent, and whose replies report a prompt
size as each test asks (none, about the body's, or a tiny one).

The oracle of isolation: what the provider receives for each client's conversation, byte for byte,
is what it receives when that client is the proxy's only one — with clients whose conversations
start alike (the same system prompt and first message, as Codex's `AGENTS.md` first item makes
them), whose next messages are equal as Python values but not as bytes (`true`, `1`, `1.0`, key
order), in all four dialects, interleaved and concurrent, through one worker, with and without
conversations evicted."""

from __future__ import annotations

import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import orjson
import pytest
from servers import eventually, proxy

from ctxfit_cli import count

BUDGET = 20_000
CLIENTS = ("sk-alice-0001", "sk-bob-0002", "sk-carol-0003")
DIALECTS = ("anthropic", "openai", "responses", "gemini")
PATHS = {
    "anthropic": "/v1/messages",
    "openai": "/v1/chat/completions",
    "responses": "/v1/responses",
    "gemini": "/v1beta/models/gemini-test:generateContent",
}
FIRST = "Read the files AGENTS.md lists, one by one, and sum them up."
FILLER = "lorem ipsum dolor sit amet, consectetur adipiscing elit. "


class Provider:
    """Answers every dialect with a short JSON reply whose usage reports `usage`: None (no
    usage), "bytes" (a quarter of the body's bytes, about its size) or a number of tokens.
    Records (key, path, body bytes) of each request."""

    def __init__(self) -> None:
        self.usage: object = None
        self.received: list[tuple[str, str, bytes]] = []
        self.guard = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["content-length"]))
                key = self.headers.get("x-api-key") or self.headers.get("x-goog-api-key") or ""
                key = key or self.headers.get("authorization", "").removeprefix("Bearer ")
                path = self.path.split("?")[0]
                with provider.guard:
                    provider.received.append((key, path, body))
                reply = orjson.dumps(provider.reply(path, body))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *_args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reply(self, path: str, body: bytes) -> dict:
        tokens = len(body) // 4 if self.usage == "bytes" else self.usage
        if path == PATHS["anthropic"]:
            usage = {"input_tokens": tokens, "output_tokens": 1}
            reply = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
                     "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}  # fmt: skip
        elif path == PATHS["openai"]:
            usage = {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": (tokens or 0) + 1}
            message = {"role": "assistant", "content": "ok"}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            reply = {"id": "c1", "object": "chat.completion", "model": "gpt-test", "choices": [choice]}
        elif path == PATHS["responses"]:
            usage = {"input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1}
            output = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}
            reply = {"id": "resp_1", "object": "response", "status": "completed", "output": [output]}
        else:
            usage = {"promptTokenCount": tokens, "candidatesTokenCount": 1}
            reply = {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}]}
            return reply if tokens is None else {**reply, "usageMetadata": usage}
        return reply if tokens is None else {**reply, "usage": usage}

    def by_conversation(self) -> dict[tuple[str, str], list[bytes]]:
        """What each (key, path) conversation sent, in order."""
        found: dict[tuple[str, str], list[bytes]] = defaultdict(list)
        for key, path, body in self.received:
            found[(key, path)].append(body)
        return dict(found)


@pytest.fixture(scope="module")
def provider():
    provider = Provider()
    yield provider
    provider.server.shutdown()


# --- the clients' conversations ---------------------------------------------------------------


def crafted(client: int, value: dict) -> dict:
    """`value` as client `client` writes it: equal as Python values, never as bytes (`true`,
    `1`, `1.0`; key order)."""
    flag = (True, 1, 1.0)[client % 3]
    items = list({**value, "flag": flag}.items())
    return dict(reversed(items)) if client % 2 else dict(items)


def history(dialect: str, client: int, steps: int) -> list[dict]:
    """A conversation every client starts alike, then its own: a tool round per step, each
    result ~9,000 characters (it passes the budget midway)."""
    name = CLIENTS[client].split("-")[1]
    if dialect == "gemini":
        lines = [{"role": "user", "parts": [{"text": FIRST}]}]
    elif dialect == "responses":
        lines = [{"role": "user", "content": FIRST}]
    else:
        lines = [{"role": "user", "content": FIRST}]
    for step in range(steps):
        call = f"call_{step:04d}"
        args = crafted(client, {"path": f"file{step}.txt"}) if step == 0 else {"path": f"file{step}.txt"}
        result = f"{name}'s file {step}: " + FILLER * (150 + 7 * (step % 5))
        if dialect == "anthropic":
            lines.append(
                {"role": "assistant", "content": [{"type": "tool_use", "id": call, "name": "read", "input": args}]}
            )
            lines.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": result}]})
        elif dialect == "openai":
            function = crafted(client, {"name": "read", "arguments": orjson.dumps(args).decode()}) if step == 0 else {
                "name": "read", "arguments": orjson.dumps(args).decode()}  # fmt: skip
            lines.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": call, "type": "function", "function": function}],
                }
            )
            lines.append({"role": "tool", "tool_call_id": call, "content": result})
        elif dialect == "responses":
            item = {"type": "function_call", "call_id": call, "name": "read", "arguments": orjson.dumps(args).decode()}
            lines.append(dict(reversed(item.items())) if step == 0 and client % 2 else item)
            lines.append({"type": "function_call_output", "call_id": call, "output": result})
        else:
            lines.append({"role": "model", "parts": [{"functionCall": {"name": "read", "args": args}}]})
            lines.append(
                {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"output": result}}}]}
            )
    return lines


def bodies(dialect: str, client: int, steps: int) -> list[bytes]:
    """The request bodies of one client's conversation, one step more each."""
    lines = history(dialect, client, steps)
    out = []
    for step in range(1, steps + 1):
        shown = lines[: 1 + 2 * step]
        if dialect == "anthropic":
            body = {"model": "claude-test", "max_tokens": 100, "system": "Be brief.", "messages": shown}
        elif dialect == "openai":
            body = {"model": "gpt-test", "messages": [{"role": "system", "content": "Be brief."}, *shown]}
        elif dialect == "responses":
            body = {"model": "gpt-test", "instructions": "Be brief.", "input": shown, "store": False}
        else:
            body = {"systemInstruction": {"parts": [{"text": "Be brief."}]}, "contents": shown}
        out.append(orjson.dumps(body))
    return out


def headers(dialect: str, key: str) -> dict[str, str]:
    name = {"anthropic": "x-api-key", "gemini": "x-goog-api-key"}.get(dialect, "authorization")
    return {name: key if name != "authorization" else f"Bearer {key}", "content-type": "application/json"}


def converse(url: str, dialect: str, client: int, steps: int) -> None:
    with httpx.Client(timeout=60) as http:
        for body in bodies(dialect, client, steps):
            response = http.post(url + PATHS[dialect], content=body, headers=headers(dialect, CLIENTS[client]))
            assert response.status_code == 200, response.text


def run(provider: Provider, usage: object, clients: list[int], steps: int, *options: str) -> tuple[dict, str]:
    """Every dialect's conversation of each of `clients`, all at once, through a fresh proxy:
    what the provider received per (key, path), and the proxy's log."""
    provider.usage, provider.received = usage, []
    with proxy(provider.url, "--budget", str(BUDGET), "--workers", "1", *options) as px:
        jobs = [(dialect, client) for client in clients for dialect in DIALECTS]
        with ThreadPoolExecutor(len(jobs)) as pool:
            for done in [pool.submit(converse, px.url, dialect, client, steps) for dialect, client in jobs]:
                done.result()
        log = px.stop()
    assert "Traceback" not in log, log[-3000:]
    assert not any(key in log for key in CLIENTS)  # (never the credential, in clear)
    return provider.by_conversation(), log


# --- state belongs to its client ------------------------------------------------------------------


@pytest.mark.parametrize(
    "usage, options",
    [
        (None, ("--conversations", "2")),  # no counts: a plan depends only on the history, so evicting changes nothing
        ("bytes", ()),  # the provider's counts anchor each conversation's next request
    ],
    ids=["evicted", "anchored"],
)
def test_no_client_changes_what_another_clients_request_becomes(provider, usage, options):
    steps = 12
    alone = {}
    for client in range(len(CLIENTS)):
        alone.update(run(provider, usage, [client], steps, *options)[0])
    together, _ = run(provider, usage, list(range(len(CLIENTS))), steps, *options)
    assert set(together) == set(alone) and len(alone) == len(CLIENTS) * len(DIALECTS)
    for (key, path), received in together.items():
        dialect = next(d for d, p in PATHS.items() if p == path)
        client = CLIENTS.index(key)
        sent = bodies(dialect, client, steps)
        assert len(received) == steps
        assert received == alone[(key, path)], f"{dialect}: {key}'s requests depend on the other clients"
        assert received[0] == sent[0]  # (unchanged: the agent's own bytes)
        assert any(r != s for r, s in zip(received, sent)), f"{dialect}: never fitted, the test proves nothing"
        others = [c.split("-")[1] for c in CLIENTS if c != key]
        assert not any(f"{name}'s file".encode() in body for body in received for name in others)
        first_call = orjson.dumps(history(dialect, client, 1)[1])
        assert all(first_call in body for body in received)  # its own bytes, `true` or `1` or `1.0`, in its order


def test_a_clients_own_edit_of_an_earlier_message_is_sent_as_it_wrote_it(provider):
    """F2: `1` for `true` in a message seen before is a change (Python's equality says not)."""
    provider.usage, provider.received = None, []
    lines = history("anthropic", 0, 14)  # client 0 wrote `"flag": true` in its first call
    edited = orjson.loads(orjson.dumps(lines))
    edited[1]["content"][0]["input"]["flag"] = 1
    with proxy(provider.url, "--budget", str(BUDGET), "--workers", "1") as px:
        for shown in (lines[:27], edited[:29]):
            body = orjson.dumps({"model": "claude-test", "max_tokens": 100, "system": "Be brief.", "messages": shown})
            assert (
                httpx.post(
                    px.url + PATHS["anthropic"], content=body, headers=headers("anthropic", CLIENTS[0])
                ).status_code
                == 200
            )
        px.stop()
    before, after = (body for _, _, body in provider.received)
    assert b'"flag":true}' in before and b'"flag":1}' in after and b'"flag":true' not in after
    assert b"[This tool result was cleared" in after  # (written back by the proxy, not passed on)


# --- reported usage is evidence ---------------------------------------------------------------


def test_a_provider_that_under_reports_is_not_believed(provider):
    """A provider that says every prompt is 10 tokens (a server truncating to its context, a
    gateway misreporting): the conversation is fitted by the estimate, never sent past the budget,
    and the log and stats say once why the count is not used."""
    provider.usage, provider.received = 10, []
    steps = 30
    with proxy(provider.url, "--budget", str(BUDGET), "--workers", "1") as px:
        converse(px.url, "anthropic", 0, steps)
        [stats] = httpx.get(f"{px.url}/ctxfit/stats").json()["conversations"].values()
        log = px.stop()
    sent = [orjson.loads(body) for _, _, body in provider.received]
    assert len(sent) == steps
    # (counted as the proxy and `ctxfit fit` count its model, claude-test: with the claude profile)
    sizes = [count(s["messages"], system=s["system"], dialect="anthropic", counter="claude") for s in sent]
    assert max(sizes) <= BUDGET and sum(s["messages"] != o["messages"] for s, o in zip(
        sent, map(orjson.loads, bodies("anthropic", 0, steps)))) > steps // 3  # fmt: skip
    refusals = [line for line in log.splitlines() if "the provider reports 10 tokens for a request of ≥" in line]
    assert len(refusals) == 1 and "its count is not used" in refusals[0], log[-3000:]
    assert stats["reported_usage_refused"] == steps and stats["requests_anchored"] == 0
    assert stats["reported_usage_refused_why"].startswith("the provider reports 10 tokens")


def test_an_honest_count_still_anchors(provider):
    provider.usage, provider.received = "bytes", []
    with proxy(provider.url, "--budget", str(BUDGET), "--workers", "1") as px:
        converse(px.url, "anthropic", 1, 6)
        [stats] = httpx.get(f"{px.url}/ctxfit/stats").json()["conversations"].values()
        assert eventually(lambda: "POST /v1/messages" in px.stderr)
    assert stats["requests_anchored"] == 5 and stats["reported_usage_refused"] == 0


# --- what a conversation is, what a count is bound to (in one worker's state, no processes) -----------


def worker_state():
    from ctxfit_cli.serve.limits import LimitRule
    from ctxfit_cli.serve.worker import Fitting, Setup

    return Fitting(Setup(LimitRule(budget=BUDGET), 64 << 20, 16))


def test_a_conversation_is_its_clients_and_the_one_its_agent_names():
    from ctxfit_cli.serve.conversations import conversation_key
    from ctxfit_cli.serve.owner import owner
    from ctxfit_cli.serve.responses import conversation_key as responses_key

    codex = {"model": "gpt-test", "input": [{"role": "user", "content": "# AGENTS.md\nRun the tests."}]}
    alice, bob = owner({"authorization": "Bearer sk-a"}, {}), owner({"authorization": "Bearer sk-b"}, {})
    assert responses_key("responses", codex, alice) != responses_key("responses", codex, bob)
    one, two = ({**codex, "prompt_cache_key": name} for name in ("019a-one", "019a-two"))
    assert responses_key("responses", one, alice) != responses_key("responses", two, alice)
    assert responses_key("responses", one, alice) == responses_key("responses", {**one, "stream": True}, alice)
    claude = {"system": "s", "messages": [{"role": "user", "content": "hi"}]}
    session = lambda sid: {**claude, "metadata": {"user_id": '{"device_id":"d","session_id":"%s"}' % sid}}
    assert conversation_key("anthropic", session("a"), alice) != conversation_key("anthropic", session("b"), alice)
    assert owner({"x-goog-api-key": "k"}, {}) != owner({}, {"key": "k"}) != owner({}, {})
    assert owner({"session-id": "019a"}, {}) != owner({}, {})  # (Codex names its conversation in a header too)
    # OpenCode 1.18 names its session in x-session-id, the same at every request of it
    assert owner({"x-session-id": "ses_a"}, {}) != owner({"x-session-id": "ses_b"}, {}) != owner({}, {})


def test_a_count_anchors_only_requests_with_the_same_fixed_part():
    """F1: a request of the same conversation that also sends a schema (which the provider counts
    and ctxfit does not read) is not sized from a count of a request without it."""
    from ctxfit_cli.core.reported import Reported

    state = worker_state()
    step = lambda n, **more: orjson.dumps({"model": "claude-test", "max_tokens": 100, "system": "Be brief.",
                                           "messages": history("anthropic", 0, n)[: 1 + 2 * n], **more})  # fmt: skip
    first = state.fit(1, "anthropic", step(2), client="c")
    state.anchor(first.key, 1, Reported(first.plan.tokens_after + 500))
    plain = state.fit(2, "anthropic", step(3), client="c")
    assert plain.key == first.key and plain.plan.confirmed == first.plan.tokens_after + 500
    state.anchor(plain.key, 2, Reported(plain.plan.tokens_after + 500))
    schema = {"format": {"type": "json_schema", "schema": {"type": "object"}}}
    shaped = state.fit(3, "anthropic", step(4, output_config=schema), client="c")
    assert shaped.key == first.key and shaped.plan.confirmed == 0  # estimated: no count of this fixed part yet
    other = state.fit(4, "anthropic", step(4), client="d")
    assert other.key != first.key and other.plan.confirmed == 0


def test_a_session_matches_history_by_bytes_not_python_equality():
    """F2 in the library: a message equal to one seen before only as Python values (`1` for
    `true`, its keys reordered) is a change; one equal byte for byte is given back as the
    caller's object of this call."""
    from ctxfit_cli import Session

    lines = history("anthropic", 0, 14)[:27]
    session = Session(BUDGET, system="Be brief.")
    session.fit(lines)
    flag_one = lambda message: message["content"][0]["input"].update(flag=1)
    reordered = lambda message: message.update(content=[dict(reversed(message["content"][0].items()))])
    for edit in (flag_one, reordered):
        changed = orjson.loads(orjson.dumps(lines))
        edit(changed[1])
        sent = session.fit(changed)
        assert orjson.dumps(sent[1]) == orjson.dumps(changed[1]) != orjson.dumps(lines[1])
        session.fit(lines)
    copied = orjson.loads(orjson.dumps(lines))
    sent = session.fit(copied)
    assert sent[1] is copied[1] and sent[0] is copied[0]  # (the same bytes: this call's objects come back)
