"""Latency `ctxfit proxy` adds to a request, and requests per second through it.

    python bench/proxy.py [--steps 60] [--sizes 10000,100000,400000] [--budget 400000] [--no-doc]

A fake provider (tests/fake_provider.py) and `ctxfit proxy` run as real processes on loopback.
For each conversation size, an Anthropic sub-agent history of about that many tokens (tool
results of 3,000-40,000 characters of mixed text) is grown by one tool round per step; each
step's request is sent twice, interleaved — straight to the provider and through the proxy —
with one keep-alive HTTP client, and the added latency is the difference. The first request of
a conversation (the proxy has never seen it: a full walk) is reported apart; the percentiles
are over the following steps (an ongoing conversation). Target: p99 < 20 ms for a step of an
ongoing 400,000-token conversation. Beside the wall-clock figures, the proxy's own CPU time per
request (its threads' on-CPU time, from /proc) shows its work apart from the machine's noise.

Requests per second: `--clients` threads, each an ongoing 10,000-token conversation, for
`--seconds`, through the proxy and straight to the provider.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
import threading
import time
from random import Random

import _common as c
import httpx
import orjson

sys.path.insert(0, str(c.ROOT / "tests"))
from servers import fake_provider, proxy  # noqa: E402

from ctxfit_cli import count  # noqa: E402

TARGET_P99 = 20e-3


class Conversation:
    """An Anthropic sub-agent history, grown one tool round at a time."""

    def __init__(self, tokens: int, seed: int, step_chars: int = 40_000) -> None:
        self.rng = Random(seed)
        self.step_chars = 40_000
        self.seed = seed
        self.messages = [{"role": "user", "content": f"Agent {seed}: read every chapter and summarise it."}]
        self.calls = 0
        self.tokens = count(self.messages)
        while self.tokens < tokens:
            self.grow()
        self.step_chars = step_chars  # from now on: the steps of the ongoing conversation

    def grow(self) -> None:
        call_id = f"toolu_{self.seed}_{self.calls:05d}"
        chars = self.rng.randint(min(3_000, self.step_chars // 2), self.step_chars)
        text = c.mixed_text(chars, seed=f"proxy{self.calls % 89}")
        new = [{"role": "assistant", "content": [
                   {"type": "text", "text": "Next chapter."},
                   {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": f"ch{self.calls}.md"}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text}]}]
        self.messages += new
        self.tokens += count(new)
        self.calls += 1

    def body(self) -> bytes:
        return orjson.dumps({"model": "bench", "max_tokens": 256, "system": "You are a careful reader.",
                             "messages": self.messages})


def size_text(n_bytes: int) -> str:
    return f"{n_bytes / 1e6:,.1f} MB" if n_bytes >= 1e6 else f"{n_bytes / 1e3:,.0f} KB"


def post(client: httpx.Client, url: str, body: bytes) -> float:
    start = time.perf_counter()
    response = client.post(f"{url}/v1/messages", content=body,
                           headers={"x-api-key": "bench", "content-type": "application/json"})
    response.read()
    elapsed = time.perf_counter() - start
    if response.status_code != 200:
        raise SystemExit(f"{url}: HTTP {response.status_code}: {response.text[:300]}")
    return elapsed


def cpu_ns(pid: int) -> int:
    """Time the process's threads have run on a CPU, in ns (/proc/PID/task/*/schedstat): what the
    proxy's own work costs, whatever else the shared machine is doing."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            pass  # a thread that ended meanwhile
    return total


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def latency(direct_url: str, proxy_url: str, proxy_pid: int, tokens: int, steps: int, seed: int) -> dict:
    # Steps small enough that the conversation grows by about a tenth over the run (~3 chars a token).
    conversation = Conversation(tokens, seed, step_chars=max(100, min(40_000, 3 * tokens // (10 * steps))))
    start_tokens = conversation.tokens
    added, direct_times, cpu = [], [], []
    with httpx.Client(timeout=120) as client:
        body = conversation.body()
        post(client, direct_url, body)  # connections opened, the provider warmed up
        first = post(client, proxy_url, body) - post(client, direct_url, body)
        for _ in range(steps):
            conversation.grow()
            body = conversation.body()
            straight = post(client, direct_url, body)
            before = cpu_ns(proxy_pid)
            through = post(client, proxy_url, body)
            cpu.append((cpu_ns(proxy_pid) - before) / 1e9)
            added.append(through - straight)
            direct_times.append(straight)
    stage = httpx.get(f"{proxy_url}/ctxfit/stats").json()["conversations"]
    stage = next(v["stage"] for v in stage.values() if v["requests"] == steps + 1 and v["tokens_before"] >= start_tokens)
    return {"start": start_tokens, "tokens": conversation.tokens, "stage": stage, "bytes": len(body), "first": first, "p50": percentile(added, 0.5),
            "p99": percentile(added, 0.99), "direct": c.median(direct_times),
            "cpu50": percentile(cpu, 0.5), "cpu99": percentile(cpu, 0.99)}


def throughput(url: str, clients: int, seconds: float) -> float:
    done = [0] * clients
    stop = time.perf_counter() + seconds

    def run(i: int) -> None:
        conversation = Conversation(10_000, 1000 + i)
        with httpx.Client(timeout=60) as client:
            while time.perf_counter() < stop:
                post(client, url, conversation.body())
                done[i] += 1
                if conversation.calls < 40:
                    conversation.grow()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done) / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--sizes", default="10000,100000,400000")
    ap.add_argument("--budget", type=int, default=400_000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()

    record = None
    with fake_provider(record, steps=10**9) as provider, proxy(provider.url, "--budget", str(args.budget)) as px:
        rows, ok = [], True
        for i, size in enumerate(int(s) for s in args.sizes.split(",")):
            r = latency(provider.url, px.url, px.process.pid, size, args.steps, seed=i)
            good = r["p99"] < TARGET_P99 if size >= 400_000 else True
            good_cpu = r["cpu99"] < TARGET_P99 if size >= 400_000 else True
            ok = ok and good
            rows.append([f"{size:,}", f"{r['start']:,} -> {r['tokens']:,}", r["stage"], size_text(r["bytes"]), c.fmt_s(r["direct"]),
                         c.fmt_s(r["first"]), c.fmt_s(r["p50"]), c.fmt_s(r["p99"]),
                         c.fmt_s(r["cpu50"]), c.fmt_s(r["cpu99"]),
                         f"wall {c.verdict(good)}, CPU {c.verdict(good_cpu)}" if size >= 400_000 else "-"])
            print(f"{size:,} tokens: added p50 {c.fmt_s(r['p50'])}, p99 {c.fmt_s(r['p99'])}; proxy CPU p50 "
                  f"{c.fmt_s(r['cpu50'])}, p99 {c.fmt_s(r['cpu99'])}; first request "
                  f"{c.fmt_s(r['first'])} (direct {c.fmt_s(r['direct'])})", flush=True)
        through = throughput(px.url, args.clients, args.seconds)
        direct = throughput(provider.url, args.clients, args.seconds)
        print(f"requests/s with {args.clients} clients (10k-token conversations): {through:,.0f} through the "
              f"proxy, {direct:,.0f} straight to the provider")
        stats = httpx.get(f"{px.url}/ctxfit/stats").json()["totals"]
    table = c.table(["conversation", "tokens (first -> last step)", "stage at the end", "request body", "direct request (median)",
                     "added, first request", "added p50", "added p99", "proxy CPU p50", "proxy CPU p99",
                     "target p99 < 20 ms"], rows)
    rps = (f"Requests per second, {args.clients} clients each in an ongoing 10,000-token conversation, "
           f"{args.seconds:g} s: **{through:,.0f}** through the proxy, {direct:,.0f} straight to the fake "
           f"provider. Proxy totals: {stats['requests']:,} requests, {stats['fitted']:,} fitted, "
           f"{stats['fitted_in_worker']:,} fitted in a worker thread, {stats['failed_open']} failed open.")
    print(table)
    if not args.no_doc:
        c.write_section("proxy", c.section(
            "Proxy latency (bench/proxy.py)",
            f"`ctxfit proxy --budget {args.budget:,}` in front of a fake provider, both real processes on "
            f"loopback; {args.steps} steps per conversation, each request sent straight and through the "
            "proxy, interleaved; added = through - straight.",
            c.command_line(), table + "\n\n" + rps,
            "Target: p99 added latency < 20 ms for a step of an ongoing 400,000-token conversation. "
            "Wall-clock figures include whatever else the shared machine ran (load average "
            f"{os.getloadavg()[0]:.1f} at the end of this run); the proxy's CPU time per request "
            "(its threads' on-CPU time from /proc, requests sent one at a time) is its own work."))


if __name__ == "__main__":
    main()
