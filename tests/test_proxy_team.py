"""A team on one proxy and past one machine (issue #22, item 5): requests are fitted in worker
processes chosen by conversation, and any proxy process can serve any request. Real proxy and
fake provider processes on loopback."""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson
import pytest
from conftest import Chat
from servers import eventually, fake_provider, proxy, recorded

from ctxfit_cli import count, validate_request

BUDGET = 20_000
HEADERS = {"x-api-key": "sk-team-test", "content-type": "application/json"}


def conversation(number: int, steps: int) -> list[bytes]:
    """The request bodies of one agent's conversation, one tool round more at each step
    (each result of 5,000-9,000 characters: the conversation passes the budget midway)."""
    chat = Chat("anthropic", system=None).user(f"Agent {number}: read the files one by one.")
    bodies = []
    for step in range(steps):
        chat.round(f"file {step} of agent {number}: " + "lorem ipsum dolor sit amet " * (200 + 37 * (step % 5)))
        bodies.append(
            orjson.dumps({"model": "claude-test", "max_tokens": 100, "system": "Be brief.", "messages": chat.lines})
        )
    return bodies


def send(url: str, body: bytes) -> None:
    response = httpx.post(f"{url}/v1/messages", content=body, headers=HEADERS, timeout=60)
    assert response.status_code == 200, response.text


def sent_bodies(record: Path) -> list[bytes]:
    return [orjson.dumps(r["body"]) for r in recorded(record)]


def the_rest(px, bodies: list[bytes]) -> tuple[int, dict, str]:
    """Send the rest of a conversation through a one-worker proxy, then stop it: its worker's
    pid by then, its stats and its log."""
    for body in bodies:
        send(px.url, body)
    [worker] = workers_of(px.process.pid)
    stats = httpx.get(f"{px.url}/ctxfit/stats").json()
    return worker, stats, px.stop()


def workers_of(pid: int) -> list[int]:
    return [
        int(child) for task in Path(f"/proc/{pid}/task").iterdir() for child in (task / "children").read_text().split()
    ]



def test_two_proxies_taking_turns_send_the_same_bodies_as_one(tmp_path):
    """Behind a load balancer that sends each request anywhere: a conversation whose requests
    alternate between two proxies (one worker in one, two in the other) reaches the provider as
    the very same bodies as through one proxy. (The provider reports no usage here: an anchor
    on a reported count is held by the proxy that passed the reply on, README.)"""
    bodies = conversation(1, 18)
    # (The proxy counts claude-test with the claude profile, as `fit` does: this Latin filler at
    # about 0.7 of the seed rule, so a lower budget than the file's for the conversation to pass it.)
    budget = 12_000
    with (
        fake_provider(tmp_path / "one.jsonl", usage="hidden") as provider,
        proxy(provider.url, "--budget", str(budget)) as one,
    ):
        for body in bodies:
            send(one.url, body)
        assert "Traceback" not in one.stop()
    with (
        fake_provider(tmp_path / "two.jsonl", usage="hidden") as provider,
        proxy(provider.url, "--budget", str(budget), "--workers", "1") as first,
        proxy(provider.url, "--budget", str(budget), "--workers", "2") as second,
    ):
        for step, body in enumerate(bodies):
            send((first, second)[step % 2].url, body)
        assert [p.stop().count("POST /v1/messages 200") for p in (first, second)] == [9, 9]
    through_one, taking_turns = sent_bodies(tmp_path / "one.jsonl"), sent_bodies(tmp_path / "two.jsonl")
    assert through_one == taking_turns
    fitted = [sent for sent, body in zip(through_one, bodies) if orjson.loads(sent) != orjson.loads(body)]
    assert len(fitted) >= 5  # the conversation went past the budget: there was something to fit
    for sent in taking_turns:
        value = orjson.loads(sent)
        assert validate_request(value, "anthropic") == []
        assert count(value["messages"], system=value["system"], dialect="anthropic", counter="claude") <= budget


def test_two_proxies_taking_turns_stay_valid_and_within_budget_with_reported_usage(tmp_path):
    """With the provider's counts (DESIGN §11), a request is anchored only by the proxy that
    passed the last reply on; the other sizes it from the estimate. Every body stays valid and
    within the budget either way."""
    bodies = conversation(2, 18)
    with (
        fake_provider(tmp_path / "two.jsonl", usage="exact") as provider,
        proxy(provider.url, "--budget", str(BUDGET)) as first,
        proxy(provider.url, "--budget", str(BUDGET)) as second,
    ):
        for step, body in enumerate(bodies):
            send((first, second)[step % 2].url, body)
        logs = [p.stop() for p in (first, second)]
    assert all("Traceback" not in log for log in logs)
    records = recorded(tmp_path / "two.jsonl")
    assert len(records) == 18
    for record in records:
        assert validate_request(record["body"], "anthropic") == []
        assert record["true_tokens"] <= BUDGET * 1.05  # the estimate's error, where nothing was anchored


def test_a_team_is_fitted_in_worker_processes_each_conversation_in_one(tmp_path):
    """Many conversations at once: every body valid and within the budget, each conversation's
    cleared results only growing (its session stays in one worker), stats counted per
    conversation whichever worker fitted it."""
    team = [conversation(number, 14) for number in range(6)]
    with (
        fake_provider(tmp_path / "team.jsonl") as provider,
        proxy(provider.url, "--budget", str(BUDGET), "--workers", "2") as px,
    ):
        assert len(workers_of(px.process.pid)) == 2

        def agent(bodies: list[bytes]) -> None:
            for body in bodies:
                send(px.url, body)

        with ThreadPoolExecutor(len(team)) as pool:
            list(pool.map(agent, team))
        stats = httpx.get(f"{px.url}/ctxfit/stats").json()
        log = px.stop()
    assert "Traceback" not in log and "not fitted" not in log
    assert stats["workers"] == {"processes": 2, "replaced": 0, "fitting": 0}
    totals = stats["totals"]  # (each by its worker, or by the fast path: provably within the budget)
    assert totals["requests"] == totals["fitted_in_worker"] + totals["fast_path"] == 6 * 14
    assert sorted(c["requests"] for c in stats["conversations"].values()) == [14] * 6
    by_agent: dict[str, list[set]] = {}
    for record in recorded(tmp_path / "team.jsonl"):
        body = record["body"]
        assert validate_request(body, "anthropic") == []
        assert count(body["messages"], system=body["system"], dialect="anthropic") <= BUDGET
        cleared = {
            b["tool_use_id"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result" and "cleared" in str(b.get("content"))
        }
        by_agent.setdefault(body["messages"][0]["content"], []).append(cleared)
    assert len(by_agent) == 6
    for cleared in by_agent.values():  # the ratchet holds across requests
        assert cleared[-1] and all(a <= b for a, b in zip(cleared, cleared[1:]))


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds the workers in /proc")
def test_a_worker_that_dies_is_replaced_and_what_it_held_goes_on_unchanged(tmp_path):
    bodies = conversation(3, 12)
    with (
        fake_provider(tmp_path / "upstream.jsonl") as provider,
        proxy(provider.url, "--budget", str(BUDGET), "--workers", "1") as px,
    ):
        for body in bodies[:6]:
            send(px.url, body)
        [worker] = workers_of(px.process.pid)
        os.kill(worker, signal.SIGSTOP)  # the next request waits in its hands ...
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(send, px.url, bodies[6])
            assert eventually(lambda: httpx.get(f"{px.url}/ctxfit/stats").json()["workers"]["fitting"] == 1)
            os.kill(worker, signal.SIGKILL)  # ... when it dies
            waiting.result()
        replacement, stats, log = the_rest(px, bodies[7:])
    assert replacement != worker and stats["workers"]["replaced"] == 1
    assert f"fitting worker 0 (pid {worker}) ended with exit code -9" in log
    assert "forwarded unchanged, not fitted: the fitting worker ended (exit code -9)" in log
    assert "Traceback" not in log
    records = recorded(tmp_path / "upstream.jsonl")
    assert records[6]["body"] == orjson.loads(bodies[6])  # failed open: as the agent sent it
    assert len(records) == 12 and stats["totals"]["failed_open"] == 1
    for record in records[7:]:  # the conversation was rebuilt in the new worker
        assert validate_request(record["body"], "anthropic") == []
        assert count(record["body"]["messages"], system="Be brief.", dialect="anthropic") <= BUDGET


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds the workers in /proc")
def test_a_worker_stuck_past_the_fit_deadline_is_replaced_and_its_requests_go_on_unchanged(tmp_path):
    """A worker that stops answering (here: stopped) holds no request longer than --fit-timeout:
    the one it took up and the one queued behind it are forwarded as they came, the worker is
    killed and replaced, and the conversation is fitted again by the new one."""
    bodies = conversation(4, 12)
    with (
        fake_provider(tmp_path / "upstream.jsonl") as provider,
        proxy(provider.url, "--budget", str(BUDGET), "--workers", "1", "--fit-timeout", "1") as px,
    ):
        for body in bodies[:6]:
            send(px.url, body)
        [worker] = workers_of(px.process.pid)
        os.kill(worker, signal.SIGSTOP)
        with ThreadPoolExecutor(2) as pool:
            stuck = pool.submit(send, px.url, bodies[6])
            assert eventually(lambda: httpx.get(f"{px.url}/ctxfit/stats").json()["workers"]["fitting"] == 1)
            queued = pool.submit(send, px.url, bodies[7])
            stuck.result(), queued.result()  # (each raises if its request failed)
        replacement, stats, log = the_rest(px, bodies[8:])
    assert replacement != worker and stats["workers"]["replaced"] == 1
    assert f"fitting worker 0 (pid {worker}) took over 1 s to fit a request (--fit-timeout)" in log
    assert "Traceback" not in log
    records = recorded(tmp_path / "upstream.jsonl")
    assert len(records) == 12 and stats["totals"]["failed_open"] == 2
    assert {orjson.dumps(r["body"]) for r in records[6:8]} == {orjson.dumps(orjson.loads(b)) for b in bodies[6:8]}
    for record in records[8:]:  # fitted again, by the new worker
        assert validate_request(record["body"], "anthropic") == []
        assert count(record["body"]["messages"], system="Be brief.", dialect="anthropic") <= BUDGET
