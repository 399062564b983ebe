"""A body crosses to its fitting worker as what follows what it shares with its conversation's
last one (`serve/bases.py`): the worker fits the very bytes the agent sent, and a base it does not
hold costs one resend, never a wrong body."""

from __future__ import annotations

import asyncio

import orjson
from conftest import Chat, ascii_text
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfit_cli.serve.bases import Base, Bases
from ctxfit_cli.serve.body import common_prefix
from ctxfit_cli.serve.limits import LimitRule
from ctxfit_cli.serve.pool import Pool
from ctxfit_cli.serve.worker import Fitting, Setup

SETUP = Setup(LimitRule(budget=6_000), 64 << 20)


def bodies(agent: int, calls: int) -> list[bytes]:
    """Every request of one agent's conversation, one tool round more each time."""
    chat = Chat("anthropic", system=None).user(f"Agent {agent}: read the files.")
    out = []
    for i in range(calls):
        chat.round(ascii_text(700 + 37 * i))
        out.append(orjson.dumps({"model": "m", "system": "Be brief.", "messages": chat.lines}))
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.binary(min_size=0, max_size=300)), min_size=1, max_size=40),
       st.integers(200, 3_000))
def test_both_ends_keep_the_same_bases_and_rebuild_every_body(steps, limit):
    proxy_side, worker_side = Bases(limit), Bases(limit)
    last: dict[int, bytes] = {}
    for ticket, (route, tail) in enumerate(steps, 1):
        body = last.get(route, b"")[: len(tail)] + tail  # a body sharing some of the route's last
        held = proxy_side.get(route)
        shared = common_prefix(body, held[1]) if held else 0
        base = Base(route, held[0], shared) if held and shared else Base(route, 0, 0)
        proxy_side.put(route, ticket, body)
        assert worker_side.rebuilt(base, body[base.shared :]) == body
        worker_side.put(route, ticket, body)
        assert proxy_side._last == worker_side._last and proxy_side.held == worker_side.held
        last[route] = body


def test_a_team_through_the_pool_is_fitted_as_in_one_process_and_sent_as_deltas():
    conversations = [bodies(agent, 14) for agent in range(3)]
    alone = Fitting(SETUP)
    expected = [[alone.fit(0, "anthropic", body).body for body in c] for c in conversations]
    sent: list[int] = []  # bytes of each body sent to a worker

    async def run() -> list[list[bytes]]:
        pool = Pool(2, SETUP, lambda *_: None)
        await pool.start()
        for worker in pool.workers:
            assert worker is not None
            send = worker.send
            worker.send = lambda message, body=b"", send=send: sent.append(len(body)) or send(message, body)
        try:
            out: list[list[bytes]] = [[] for _ in conversations]
            for step in range(14):
                for i, conversation in enumerate(conversations):
                    if step == 9 and i == 1:  # the worker does not hold what the proxy names: resent whole
                        worker = pool.workers[pool.route("anthropic", conversation[step]) % pool.size]
                        route = pool.route("anthropic", conversation[step])
                        _, held = worker.bases.get(route)
                        worker.bases.put(route, 10**9, held)
                    out[i].append((await pool.fit("anthropic", conversation[step])).body)
            return out
        finally:
            await pool.close()

    assert asyncio.run(run()) == expected
    sizes = [len(body) for c in conversations for body in c]
    assert sum(sent) < sum(sizes) / 3  # most of each body was not sent again
    assert len(sent) == len(sizes) + 1  # one resend, for the base the worker did not hold
