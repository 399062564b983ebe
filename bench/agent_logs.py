"""Generated agent logs for the policy comparison: sub-agent, chat and mixed, in every dialect.

    python bench/agent_logs.py                 # writes what is missing into bench/corpus/replay/
    python bench/agent_logs.py --sizes 1000000 --kinds chat --dialects openai

Each log is one conversation of about SIZE tokens (seed rule) in total, written once and reused
(bench/corpus/ is not tracked). The three kinds differ in how fast the conversation grows, which
is what a clearing policy has to cope with:

- **sub-agent**: one instruction, then tool rounds only (no second user message), results of
  1k-30k tokens (files, chapters, search dumps): it grows ~9k tokens per model call;
- **chat**: a person and an assistant, a new human turn after 0-3 tool rounds, results of
  0.2k-3k tokens: ~1.3k tokens per call;
- **mixed**: a coding session, human turns of 5-40 rounds, results of 0.1k-15k tokens, sometimes
  2-3 parallel calls: ~3.5k tokens per call.

Dialects: `anthropic` and `openai` (message lists, one per line), `claude-code` (a session log:
one record per content block, results as user records) and `codex` (a rollout of response items).
Text is mixed Russian / Chinese / Japanese / English / code from `_common.mixed_text`, drawn from
a seeded pool so a 5M-token log is written in seconds; the same arguments give the same bytes.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from random import Random
from typing import Iterator

import orjson

import _common as c
from ctxfit_cli.counters.seed import SEED

OUT = c.HERE / "corpus" / "replay"
KINDS = ("sub-agent", "chat", "mixed")
DIALECTS = ("anthropic", "openai", "claude-code", "codex")
SIZES = (1_000_000, 5_000_000)
SYSTEM = "You are a careful agent. Use the tools to read and change files; answer in the language asked."


@dataclass(frozen=True)
class Shape:
    """How one kind of conversation is drawn."""

    rounds_per_turn: tuple[int, int] | None  # None: a sub-agent (one turn)
    result_tokens: tuple[int, int]
    parallel: float  # chance that a round has 2-3 calls


SHAPES = {
    "sub-agent": Shape(None, (1_000, 30_000), 0.0),
    "chat": Shape((0, 3), (200, 3_000), 0.0),
    "mixed": Shape((5, 40), (100, 15_000), 0.15),
}


class Pool:
    """Texts of many sizes and their token counts, drawn by a seeded generator."""

    def __init__(self, seed: str) -> None:
        self.rng = Random(seed)
        self._cache: dict[tuple[int, int], tuple[str, int]] = {}

    def text(self, tokens: tuple[int, int]) -> tuple[str, int]:
        # Log-uniform sizes: many small results, a few large ones, as in real sessions.
        low, high = tokens
        target = int(low * (high / low) ** self.rng.random())
        key = (target.bit_length(), self.rng.randrange(6))  # ~6 distinct texts per size octave
        if key not in self._cache:
            text = c.mixed_text(target * 2, seed=f"{key}")  # mixed text runs ~2 characters a token
            self._cache[key] = (text, SEED.tokens(SEED.measure(text)))
        return self._cache[key]


Event = tuple  # ("user", text) | ("say", text) | ("round", text, [(id, path, result), ...])


def events(kind: str, size: int, seed: str) -> Iterator[Event]:
    """The conversation as neutral events until about `size` tokens were written."""
    shape, pool, rng = SHAPES[kind], Pool(seed), Random(seed)
    written, calls = 0, 0

    def small(low: int, high: int) -> str:
        text, tokens = pool.text((low, high))
        nonlocal written
        written += tokens
        return text

    yield ("user", small(60, 400))
    while written < size:
        rounds = 10**9 if shape.rounds_per_turn is None else rng.randint(*shape.rounds_per_turn)
        for _ in range(rounds):
            if written >= size:
                break
            parallel = rng.randint(2, 3) if rng.random() < shape.parallel else 1
            results = []
            for _ in range(parallel):
                calls += 1
                results.append((f"call_{calls:06d}", f"src/part_{calls}.md", small(*shape.result_tokens)))
            yield ("round", small(10, 120), results)
        if shape.rounds_per_turn is not None and written < size:
            yield ("say", small(100, 1_500))
            yield ("user", small(30, 500))
    yield ("say", small(100, 800))


# --- writers, one per dialect -----------------------------------------------------------------------


def anthropic(evs: Iterator[Event]) -> Iterator[dict]:
    yield {"role": "system", "content": SYSTEM}
    for ev in evs:
        if ev[0] == "user":
            yield {"role": "user", "content": ev[1]}
        elif ev[0] == "say":
            yield {"role": "assistant", "content": ev[1]}
        else:
            _, say, results = ev
            yield {"role": "assistant", "content": [{"type": "text", "text": say}, *(
                {"type": "tool_use", "id": i, "name": "read_file", "input": {"path": p}} for i, p, _ in results)]}
            yield {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": i, "content": r} for i, _, r in results]}


def openai(evs: Iterator[Event]) -> Iterator[dict]:
    yield {"role": "system", "content": SYSTEM}
    for ev in evs:
        if ev[0] == "user":
            yield {"role": "user", "content": ev[1]}
        elif ev[0] == "say":
            yield {"role": "assistant", "content": ev[1]}
        else:
            _, say, results = ev
            yield {"role": "assistant", "content": say, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "read_file",
                                                           "arguments": orjson.dumps({"path": p}).decode()}}
                for i, p, _ in results]}
            for i, _, r in results:
                yield {"role": "tool", "tool_call_id": i, "content": r}


def claude_code(evs: Iterator[Event]) -> Iterator[dict]:
    """A Claude Code session log: one record per content block of a reply (same message.id)."""
    counter, parent = 0, None

    def record(kind: str, message: dict, **extra) -> dict:
        nonlocal counter, parent
        counter += 1
        uuid = f"00000000-0000-4000-8000-{counter:012d}"
        rec = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/work/project",
               "sessionId": "00000000-0000-4000-8000-000000000000", "version": "2.0.61", "type": kind,
               "message": message, "uuid": uuid, "timestamp": f"2026-03-14T09:{counter // 60 % 60:02d}:{counter % 60:02d}.000Z",
               **extra}
        parent = uuid
        return rec

    def reply(blocks: list[dict]) -> Iterator[dict]:
        mid = f"msg_{counter:08d}"
        for block in blocks:
            yield record("assistant", {"model": "claude-sonnet-4-5", "id": mid, "type": "message", "role": "assistant",
                                       "content": [block], "stop_reason": None, "stop_sequence": None},
                         requestId=f"req_{counter:08d}")

    for ev in evs:
        if ev[0] == "user":
            yield record("user", {"role": "user", "content": ev[1]})
        elif ev[0] == "say":
            yield from reply([{"type": "text", "text": ev[1]}])
        else:
            _, say, results = ev
            yield from reply([{"type": "text", "text": say}, *(
                {"type": "tool_use", "id": i, "name": "Read", "input": {"file_path": p}} for i, p, _ in results)])
            for i, _, r in results:
                yield record("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": r}]},
                             toolUseResult={"type": "text"})


def codex(evs: Iterator[Event]) -> Iterator[dict]:
    """A Codex rollout: session_meta with the instructions, then response items."""
    def item(payload: dict) -> dict:
        return {"timestamp": "2026-03-16T10:04:11.000Z", "type": "response_item", "payload": payload}

    yield {"timestamp": "2026-03-16T10:04:11.000Z", "type": "session_meta",
           "payload": {"id": "0199a000-0000-7000-8000-000000000000", "cwd": "/work/project",
                       "originator": "codex_cli_rs", "cli_version": "0.46.0", "instructions": SYSTEM}}
    for ev in evs:
        if ev[0] in ("user", "say"):
            role, part = ("user", "input_text") if ev[0] == "user" else ("assistant", "output_text")
            yield item({"type": "message", "role": role, "content": [{"type": part, "text": ev[1]}]})
        else:
            _, say, results = ev
            yield item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": say}]})
            for i, p, _ in results:
                yield item({"type": "function_call", "name": "shell", "call_id": i,
                            "arguments": orjson.dumps({"command": ["cat", p]}).decode()})
            for i, _, r in results:
                yield item({"type": "function_call_output", "call_id": i,
                            "output": orjson.dumps({"output": r, "metadata": {"exit_code": 0}}).decode()})


WRITERS = {"anthropic": anthropic, "openai": openai, "claude-code": claude_code, "codex": codex}
SUFFIX = {"anthropic": ".anthropic.jsonl", "openai": ".openai.jsonl", "claude-code": ".claude.jsonl",
          "codex": ".codex.jsonl"}


def path_for(kind: str, size: int, dialect: str, out: Path = OUT) -> Path:
    return out / f"{kind}_{size // 1_000_000}M{SUFFIX[dialect]}"


def write(kind: str, size: int, dialect: str, out: Path = OUT) -> Path:
    """Write one log unless it is there already; the same conversation in every dialect."""
    path = path_for(kind, size, dialect, out)
    if not path.exists():
        out.mkdir(parents=True, exist_ok=True)
        lines = WRITERS[dialect](events(kind, size, seed=f"ctxfit-replay:{kind}"))
        partial = path.with_suffix(".tmp")
        with open(partial, "wb") as stream:
            for line in lines:
                stream.write(orjson.dumps(line) + b"\n")
        partial.replace(path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--dialects", default=",".join(DIALECTS))
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    for kind in args.kinds.split(","):
        for size in map(int, args.sizes.split(",")):
            for dialect in args.dialects.split(","):
                path = write(kind, size, dialect, args.out)
                print(f"{path} {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
