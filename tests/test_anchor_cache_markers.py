"""A change the provider does not count keeps the anchor (DESIGN §11): Claude Code 2.1 moves its
`cache_control` marker to the newest message at every step, which changes an earlier message's
bytes; compared by bytes, no reply's count ever carried over to its next request (on the five
captured Claude Code bodies none of the four later requests was anchored). Compared without the
markers (`core.uncounted.count_key`), every request after the first reply is, and the bytes sent
are still the request's own: the message whose marker moved goes on as the client wrote it now.
A real change (`true` for `1`) still drops the anchor.

Through a real `ctxfit proxy` against the fake provider counting every request exactly
(`fake_provider.py --usage exact`), and through the library's `Session`.

    python tests/test_anchor_cache_markers.py    # the count's error against the true size, per request
"""

from __future__ import annotations

import hashlib
import lzma
import statistics
from pathlib import Path
from pydoc_data.topics import topics

import httpx
import orjson
from fake_provider import FILES, true_size
from servers import fake_provider, proxy, recorded

from ctxfit_cli import CLEARED_RESULT, Session, api
from ctxfit_cli.core.model import Message, Role
from ctxfit_cli.core.uncounted import count_key, counted_bytes
from ctxfit_cli.history import Walk

BUDGET = 30_000
STEPS = 40
KEY = "sk-test-markers"
HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"}
REFERENCE = "".join(topics[key] for key in sorted(topics))  # the Python language reference, as prose
SYSTEM = REFERENCE[:40_000]
TASK = "Read the files one by one, against this reference:\n\n" + REFERENCE[40_000:60_000]
ENVIRONMENT = "# Environment\nYou have been invoked in the following environment:\n - Primary working directory: /w\n"
TOOLS = [{"name": "Read", "description": "Read a file.", "input_schema": {"type": "object"}}]
MARKER = {"type": "ephemeral"}
#: The five bodies Claude Code 2.1.337 sent for a 4-file reading task, one per line, byte for byte
#: (captured on loopback, /work/helpers/captures/claude-1..5.json; claude-3.json.gz is the third).
CAPTURED = Path(__file__).parent / "captured" / "claude-1-5.jsonl.xz"


def tool_output(step: int) -> str:
    """A file read at `step`: large ones first, so the budget is reached early, then small ones."""
    size = 6_000 if step < 5 else 900
    start = (step * 7_919) % (len(REFERENCE) - 60_000 - size) + 60_000
    return REFERENCE[start : start + size]


def claude_code_body(steps: int, *, marked: bool = True, flag: object = True) -> dict:
    """The request Claude Code sends after `steps` tool rounds, as 2.1 shapes it: the marker on the
    system prompt's blocks and on the last block of the newest message; the system entry inside
    the messages a marked text block in the request that adds it, a plain string afterwards.
    `flag`: a value in each call's arguments (`true`, or `1` for a client that changed it)."""
    entry: dict = {"role": "system", "content": ENVIRONMENT, "output_config": {"effort": "medium"}}
    if steps == 0:
        entry["content"] = [{"type": "text", "text": ENVIRONMENT}]
    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": TASK}]}, entry]
    for step in range(steps):
        call = f"toolu_{step:04d}"
        path = FILES[step % len(FILES)]
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Reading {path}."},
                    {"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": path, "full": flag}},
                ],
            }
        )
        result = {"tool_use_id": call, "type": "tool_result", "content": tool_output(step)}
        messages.append({"role": "user", "content": [result]})
    if marked:
        last = messages[-1]["content"]
        last[-1] = {**last[-1], "cache_control": MARKER}
    system = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.337;"}]
    system.append({"type": "text", "text": SYSTEM, **({"cache_control": MARKER} if marked else {})})
    return {
        "model": "claude-opus-5-5",
        "messages": messages,
        "system": system,
        "tools": TOOLS,
        "metadata": {"user_id": '{"session_id":"5e55-markers"}'},
        "max_tokens": 32_000,
        "stream": True,
    }


def post_all(bodies: list[bytes], budget: int, tmp: Path) -> tuple[list[dict], list[dict], dict, str]:
    """Each body through a real proxy in turn: its response headers, what the provider received
    (with its true size), the proxy's stats and log."""
    record = tmp / "provider.jsonl"
    headers = []
    with fake_provider(record, len(bodies) + 1, usage="exact") as provider:
        with proxy(provider.url, "--budget", str(budget)) as front:
            for body in bodies:
                reply = httpx.post(f"{front.url}/v1/messages?beta=true", content=body, headers=HEADERS, timeout=60)
                assert reply.status_code == 200, reply.text
                headers.append(dict(reply.headers))
            stats = httpx.get(f"{front.url}/ctxfit/stats").json()
            log = front.stop()
    return headers, recorded(record), stats, log


def test_a_moving_cache_marker_keeps_every_request_anchored_and_within_the_budget(tmp_path):
    bodies = [orjson.dumps(claude_code_body(step)) for step in range(STEPS + 1)]
    headers, received, stats, log = post_all(bodies, BUDGET, tmp_path)
    assert len(received) == STEPS + 1 and "Traceback" not in log and KEY not in log
    assert headers[0]["ctxfit-counted"] == "estimated"
    # Each later one anchored by its worker, or sent on by the fast path within a bound of that
    # (serve/bypass.py: the moved marker is no change to it either); never the estimate alone.
    counted = [h["ctxfit-counted"] for h in headers[1:]]
    assert set(counted) == {"anchored", "bound"}, counted
    [conversation] = stats["conversations"].values()
    assert conversation["requests_anchored"] == counted.count("anchored")
    sizes = [r["true_tokens"] for r in received]
    assert max(sizes) <= BUDGET, max(sizes)  # by the provider's own count
    assert max(sizes) >= 0.95 * BUDGET, max(sizes)  # (the budget is used: clearing starts near it)
    assert any(CLEARED_RESULT in orjson.dumps(r["body"]["messages"]).decode() for r in received)
    for body, got in zip(bodies, received):  # the markers go on where the client put them
        sent, forwarded = orjson.loads(body)["messages"], got["body"]["messages"]
        assert forwarded[-1] == sent[-1] and forwarded[-1]["content"][-1]["cache_control"] == MARKER
        assert orjson.dumps(forwarded).count(b"cache_control") == 1


def captured_bodies() -> list[bytes]:
    return lzma.decompress(CAPTURED.read_bytes()).splitlines()


def test_the_captured_claude_code_requests_are_anchored_from_the_second_on(tmp_path):
    bodies = captured_bodies()
    assert len(bodies) == 5 and orjson.loads(bodies[2])["messages"][-1]["content"][-1]["cache_control"]
    # (a budget the fast path cannot prove each step within, so that every request goes to its
    # worker, whose anchoring this checks; tests/test_proxy_bypass.py takes these bodies by the fast path)
    headers, received, stats, log = post_all(bodies, 40_000, tmp_path)
    assert [h["ctxfit-counted"] for h in headers] == ["estimated"] + ["anchored"] * 4, log
    assert [h.get("ctxfit-confirmed") for h in headers[1:]] == [str(r["true_tokens"]) for r in received[:-1]]
    assert [r["sha256"] for r in received] == [hashlib.sha256(b).hexdigest() for b in bodies]  # as they came


def test_a_real_change_of_a_value_drops_the_anchor_and_goes_as_the_client_wrote_it(tmp_path):
    """`true` -> `1` in an earlier call's arguments (the marker moved too): another prompt, so
    the next request is estimated, and sent with the client's `1`."""
    bodies = [orjson.dumps(claude_code_body(step)) for step in (1, 2)] + [orjson.dumps(claude_code_body(3, flag=1))]
    bodies.append(orjson.dumps(claude_code_body(4, flag=1)))
    headers, received, _, _ = post_all(bodies, 500_000, tmp_path)
    assert headers[0]["ctxfit-counted"] == "bound"  # (a new conversation, provably within: sent on at once)
    counted = [h["ctxfit-counted"].replace("bound", "anchored") for h in headers[1:]]  # (the fast path: bounded)
    assert counted == ["anchored", "estimated", "anchored"]
    assert [r["sha256"] for r in received] == [hashlib.sha256(b).hexdigest() for b in bodies]  # byte for byte
    assert b'"full":1}' in bodies[2] and b'"full":true' not in bodies[2]


def test_a_session_keeps_its_anchor_and_gives_back_the_callers_objects():
    """The library: each step's messages are new objects, the marker moved; every fit after the
    first reply is anchored, and each message goes back as this call's object (the one whose
    marker moved too), or, cleared, as a copy of it (no stale marker in it)."""
    body = claude_code_body(0)
    session = Session(BUDGET, system=body["system"], tools=TOOLS)
    earlier: list[dict] = []
    for step in range(STEPS + 1):
        history = claude_code_body(step)["messages"]
        sent = session.fit(history)
        assert (session.plan.confirmed > 0) == (step > 0), step
        request = {"system": body["system"], "tools": TOOLS, "messages": sent}
        session.record({"usage": {"input_tokens": true_size(request, "anthropic")}})
        assert sent[-1] is history[-1] and not any(m is e for m in sent for e in earlier)
        assert step < 1 or sent[-3] is history[-3] or CLEARED_RESULT in orjson.dumps(sent[-3]).decode()
        assert orjson.dumps(sent).count(b"cache_control") == 1  # the client's one marker, no stale one
        earlier = history
    assert session.plan.cleared


class CountedWalk(Walk):
    """A `Walk` that counts how many were made (a new walk re-reads the whole history)."""

    made = 0

    def __init__(self, *args, **kwargs) -> None:
        CountedWalk.made += 1
        super().__init__(*args, **kwargs)


def test_a_moving_marker_needs_no_new_walk_and_a_marker_on_a_cleared_result_goes_as_the_client_moves_it(
    monkeypatch,
):
    """The walk goes on over a message whose marker moved (a new one re-read the 1.4 MB history of
    a 400-step conversation at every request: 56 ms a request against 3). What is sent for it is
    the client's message of now: cleared, a result keeps the marker the client put on it, and
    loses it when the client takes it off."""
    monkeypatch.setattr(api, "Walk", CountedWalk)
    CountedWalk.made = 0
    system = claude_code_body(0)["system"]
    session = Session(BUDGET, system=system, tools=TOOLS)

    def fit(history: list[dict]) -> list:
        sent = session.fit(history)
        request = {"system": system, "tools": TOOLS, "messages": sent}
        session.record({"usage": {"input_tokens": true_size(request, "anthropic")}})
        return sent

    for step in range(STEPS + 1):
        fit(claude_code_body(step)["messages"])
    assert CountedWalk.made == 1 and session.plan.cleared
    history = claude_code_body(STEPS + 1)["messages"]
    old = 3  # the oldest result, cleared
    history[old] = {**history[old], "content": [{**history[old]["content"][0], "cache_control": MARKER}]}
    sent = fit(history)
    assert CLEARED_RESULT in orjson.dumps(sent[old]).decode() and sent[old]["content"][0]["cache_control"] == MARKER
    assert session.plan.confirmed and orjson.dumps(sent).count(b"cache_control") == 2
    sent = fit(claude_code_body(STEPS + 2)["messages"])
    assert CLEARED_RESULT in orjson.dumps(sent[old]).decode() and b"cache_control" not in orjson.dumps(sent[old])
    assert session.plan.confirmed and CountedWalk.made == 1
    sent = fit(claude_code_body(STEPS + 3, flag=1)["messages"])  # a change the provider counts: a new walk
    assert not session.plan.confirmed and CountedWalk.made == 2 and b'"full":1}' in orjson.dumps(sent)


def test_only_what_the_provider_does_not_count_is_left_out_of_the_key():
    def key(value: dict) -> bytes:
        return count_key(Message(Role.USER, (), orjson.dumps(value)))

    text = {"role": "user", "content": "read it"}
    block = {"role": "user", "content": [{"type": "text", "text": "read it", "cache_control": MARKER}]}
    assert key(text) == key(block) == key({**block, "cache_control": MARKER}) == orjson.dumps(text)
    result = {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "x"}]}
    marked = {**result, "content": [{"type": "text", "text": "x", "cache_control": MARKER}], "cache_control": MARKER}
    assert key({"role": "user", "content": [marked]}) == key({"role": "user", "content": [{**result, "content": "x"}]})
    call = {"type": "tool_use", "id": "t", "name": "Edit", "input": {"cache_control": MARKER, "full": True}}
    for other in ({**call, "input": {"full": True}}, {**call, "input": {"cache_control": MARKER, "full": 1}}):
        assert key({"role": "assistant", "content": [call]}) != key({"role": "assistant", "content": [other]})
    two = {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    assert key(two) == orjson.dumps(two) != key({"role": "user", "content": "ab"})
    assert key({"content": "a", "role": "user"}) != key({"role": "user", "content": "a"})  # key order counts
    raw = b'{"role":"user","content":"a"},{"type":"reasoning"}'  # (a Responses reply: several items)
    assert counted_bytes(raw) is raw


def errors(bodies: list[bytes], budget: int) -> list[tuple[int, int, bool]]:
    """(the proxy's count, the true size, anchored) of each body fitted in turn by a proxy
    worker's own code in process, each anchored on the true size of the request before it."""
    from ctxfit_cli.core.reported import Reported
    from ctxfit_cli.serve.limits import LimitRule
    from ctxfit_cli.serve.worker import Fitting, Setup

    fitting = Fitting(Setup(LimitRule(budget=budget), 1 << 30))
    rows = []
    for ticket, body in enumerate(bodies):
        fitted = fitting.fit(ticket, "anthropic", body)
        assert fitted.plan is not None, fitted.skipped
        true = true_size(orjson.loads(fitted.body), "anthropic")
        rows.append((fitted.plan.tokens_after, true, fitted.plan.confirmed > 0))
        fitting.anchor(fitted.key or "", ticket, Reported(true))
    return rows


def print_errors(name: str, rows: list[tuple[int, int, bool]]) -> None:
    misses = [abs(count - true) / true for count, true, _ in rows[1:]]
    anchored = sum(a for _, _, a in rows[1:])
    print(
        f"{name}: {anchored} of {len(rows) - 1} later requests anchored; |count - true| / true "
        f"median {statistics.median(misses):.2%}, max {max(misses):.2%}; signed "
        + " ".join(f"{(count - true) / true:+.1%}" for count, true, _ in rows[1:12])
        + (" ..." if len(rows) > 12 else "")
    )


if __name__ == "__main__":
    print_errors("captured Claude Code (5 requests)", errors(captured_bodies(), 500_000))
    synthetic = [orjson.dumps(claude_code_body(step)) for step in range(STEPS + 1)]
    print_errors(f"Claude-Code-shaped loop ({STEPS + 1} requests, budget {BUDGET:,})", errors(synthetic, BUDGET))
