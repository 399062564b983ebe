"""Fuzzing ctxfit's commands: hostile inputs made from a random source, and the promises every
run must keep. Shared by the bounded fuzz test (tests/test_fuzz.py, driven by Hypothesis) and the
long run (bench/fuzz.py, driven by a seeded `random.Random`).

Inputs are of two kinds: structured transcripts (OpenAI or Anthropic messages, requests, with
tool calls that may or may not be answered and values of the wrong type here and there), and
byte-level mutations of slices of the bundled samples (Claude Code, Codex, OpenAI, Anthropic).

Promises checked for every input, on `estimate`, `fit`, `plan` and sometimes `replay`:
exit code 0, 2, 3 or 4 only (1 would mean an invalid request was produced, or a crash); no
exception escapes (no traceback); nothing on stdout when the exit code is not 0; the input file
unchanged (bytes and mtime). For every payload `fit` writes: it is valid for its dialect, it
reads back (`estimate -`) at exactly the size `fit` promised, and fitting it again with the same
budget gives the same bytes.
"""

from __future__ import annotations

import random
import zlib
from pathlib import Path

from unittest import mock

import orjson
from typer.main import get_command
from typer.testing import CliRunner

from ctxfit_cli.cli import app
from ctxfit_cli.core.validate import validate_request

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted(p for p in (ROOT / "sample_transcripts").iterdir() if p.suffix in (".jsonl", ".json"))
ALLOWED_EXIT_CODES = {0, 2, 3, 4}
#: How many lines of a sample a mutated input keeps (a slice: whole samples make slow cases).
SLICE_LINES = 40

_runner = CliRunner()
#: Typer builds the Click command from the commands' signatures on every invoke, which was 88%
#: of a case's time; built once here, and handed to the runner in its place.
_command = get_command(app)
_sample_lines: dict[Path, list[bytes]] = {}


# --- inputs ----------------------------------------------------------------------------------


def sample_slice(rng: random.Random) -> bytes:
    """A few consecutive lines of a bundled sample (from its start half of the time)."""
    path = rng.choice(SAMPLES)
    if path not in _sample_lines:
        _sample_lines[path] = path.read_bytes().splitlines(keepends=True)
    lines = _sample_lines[path]
    start = 0 if rng.random() < 0.5 else rng.randrange(len(lines))
    return b"".join(lines[start:start + rng.randint(1, SLICE_LINES)])


_INSERTS = [b"\x00", b"\r", b"\r\n", b"\n", b"\xef\xbb\xbf", b"\xff\xfe", b"\xc3", b"\xe2\x80", b"[" * 300,
            b"{" * 40, b"]", b"}", b'"', b"\\", b"\\u0000", b"\\ud800", b"null", b"true", b"[]", b"{}", b"1e999",
            b"-0", b"18446744073709551616", b"NaN", b'"role"', b'"tool_use_id"', b'"tool_calls"', b'"content"',
            b'"type":"tool_result"', b'"type":"image"', b" " * 2000, "слово 汉字 😀".encode()]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """`data` changed by one to four byte-level mutations."""
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        where = rng.randrange(len(data) + 1)
        kind = rng.randrange(8)
        if kind == 0 and data:  # flip a byte
            data[min(where, len(data) - 1)] = rng.randrange(256)
        elif kind == 1:  # delete a range
            del data[where:where + rng.randint(1, 64)]
        elif kind == 2:  # insert something awkward
            data[where:where] = rng.choice(_INSERTS)
        elif kind == 3:  # truncate
            del data[where:]
        elif kind == 4:  # repeat a range (duplicated lines, ids, calls)
            end = min(len(data), where + rng.randint(1, 400))
            data[end:end] = data[where:end]
        elif kind == 5:  # swap two lines
            lines = bytes(data).split(b"\n")
            if len(lines) > 2:
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
                data = bytearray(b"\n".join(lines))
        elif kind == 6:  # drop a line
            lines = bytes(data).split(b"\n")
            if len(lines) > 1:
                del lines[rng.randrange(len(lines))]
                data = bytearray(b"\n".join(lines))
        else:  # a value of another type in place of a string
            data = bytearray(bytes(data).replace(b'"user"', rng.choice([b"[]", b"{}", b"7", b"null", b'"robot"']), 1))
    return bytes(data)


def _odd(rng: random.Random) -> object:
    return rng.choice([None, 7, 1.5, True, [], {}, ["x"], {"a": 1}, "", "x" * rng.randint(0, 3000),
                       "汉字" * rng.randint(1, 200), "\u0000", "<|endoftext|>", " " * rng.randint(1, 5000)])


def _text(rng: random.Random) -> str:
    return rng.choice(["", "hi", "слово " * rng.randint(1, 300), "汉字かなカナ한글" * rng.randint(1, 100),
                       "word " * rng.randint(1, 2000), "😀" * rng.randint(1, 50), "[bold]x[/bold] \\ \"q\""])


def transcript(rng: random.Random) -> bytes:
    """A structured transcript: OpenAI or Anthropic lines, or one request object, with rounds whose
    calls may lack results, results that may lack calls, and odd values now and then."""
    dialect = rng.choice(["openai", "anthropic"])
    odd = rng.random() < 0.3  # some transcripts get values of the wrong type
    lines: list[object] = []
    if rng.random() < 0.5:
        lines.append({"role": "system", "content": _text(rng) or "sys"})
    lines.append({"role": "user", "content": _text(rng) or "go"})
    ids = 0
    for _ in range(rng.randint(0, 30)):
        roll = rng.random()
        if roll < 0.2:
            lines.append({"role": "user", "content": _text(rng)})
        elif roll < 0.3:
            lines.append({"role": "assistant", "content": _text(rng)})
        else:
            calls = []
            for _ in range(rng.randint(1, 3)):
                ids += 1
                calls.append(f"call_{ids}" if rng.random() < 0.95 else f"call_{rng.randint(1, ids)}")
            results = [c for c in calls if rng.random() < 0.95]
            if rng.random() < 0.05:
                results.append("call_orphan")
            lines += _round(dialect, calls, results, rng)
        if odd and rng.random() < 0.1:
            victim = rng.choice(lines)
            if isinstance(victim, dict):
                victim[rng.choice(["role", "content", "tool_call_id", "name"])] = _odd(rng)
    if rng.random() < 0.15:  # a whole request object
        request: dict = {"messages": [m for m in lines if m.get("role") != "system"]}
        if dialect == "anthropic":
            request["system"] = "be brief"
        if rng.random() < 0.5:
            request["tools"] = [{"name": "read", "description": "reads", "input_schema": {"type": "object"}}]
        return orjson.dumps(request, option=orjson.OPT_INDENT_2 if rng.random() < 0.5 else 0)
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def _round(dialect: str, calls: list[str], results: list[str], rng: random.Random) -> list[dict]:
    if dialect == "anthropic":
        return [
            {"role": "assistant", "content": [{"type": "tool_use", "id": c, "name": "read", "input": {"n": i}}
                                              for i, c in enumerate(calls)]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": c, "content": _text(rng),
                                          **({"is_error": True} if rng.random() < 0.1 else {})} for c in results]
             or [{"type": "text", "text": "no results"}]},
        ]
    return [{"role": "assistant", "content": None, "tool_calls": [
        {"id": c, "type": "function", "function": {"name": "read", "arguments": orjson.dumps({"n": i}).decode()}}
        for i, c in enumerate(calls)]}] + [{"role": "tool", "tool_call_id": c, "content": _text(rng)} for c in results]


def case_input(rng: random.Random) -> bytes:
    """One fuzz input: a structured transcript, a mutated sample slice, or a mutated transcript;
    some get content blocks of the other API mixed in (`mixed_dialects`)."""
    roll = rng.random()
    if roll < 0.4:
        return mixed_dialects(transcript(rng))
    if roll < 0.8:
        return mutate(sample_slice(rng), rng)
    return mutate(transcript(rng), rng)


#: Content blocks of one API that the other refuses (issue #20 R12: 59 of 40,000 cases).
FOREIGN_BLOCKS = [
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
    {"type": "tool_result", "tool_use_id": "call_1", "content": "a result in Anthropic's shape"},
    {"type": "tool_use", "id": "toolu_x", "name": "read", "input": {}},
    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
    {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "doc"}},
]


def mixed_dialects(data: bytes) -> bytes:
    """One in eight structured transcripts gets another API's content blocks in a few messages.
    Decided by a generator seeded from the data itself, so the seeds of earlier runs (and the
    cases they found) still make the very same inputs when they are not mixed."""
    mixer = random.Random(zlib.crc32(data))
    if mixer.random() >= 0.125 or data.lstrip().startswith(b"{\n"):
        return data
    lines = [orjson.loads(line) for line in data.splitlines() if line.strip()]
    if not all(isinstance(line, dict) for line in lines):
        return data
    messages = lines[0]["messages"] if len(lines) == 1 and "messages" in lines[0] else lines
    for message in mixer.sample(messages, min(len(messages), mixer.randint(1, 3))):
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or "x"}]
        message["content"] = [*blocks, mixer.choice(FOREIGN_BLOCKS)]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


# --- the promises -------------------------------------------------------------------------------


def invoke(args: list[str], input: bytes | None = None):
    """Run the CLI in this process (Typer's runner): exit code, stdout bytes, stderr."""
    with mock.patch("typer.testing._get_command", lambda _: _command):
        return _runner.invoke(app, args, input=input)


def _problems_of_run(name: str, result) -> list[str]:
    problems = []
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        problems.append(f"{name}: exception {type(result.exception).__name__}: {result.exception}")
    if result.exit_code not in ALLOWED_EXIT_CODES:
        problems.append(f"{name}: exit code {result.exit_code}: {result.stderr.strip()[:300]}")
    if result.exit_code != 0 and result.stdout_bytes and not (name == "plan" and result.exit_code == 4):
        # (plan still shows a plan that cannot fit the window, with exit 4)
        problems.append(f"{name}: exit {result.exit_code} with {len(result.stdout_bytes)} bytes on stdout")
    if "Traceback" in result.stderr:
        problems.append(f"{name}: traceback on stderr")
    return problems


def check(data: bytes, folder: Path, rng: random.Random) -> list[str]:
    """Run the commands on `data` (written to a file in `folder`) and list the promises broken."""
    path = folder / "input.jsonl"
    path.write_bytes(data)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    budget = str(rng.choice([1, 50, 500, 2000, 20000, 400000]))
    problems = []
    problems += _problems_of_run("estimate", invoke(["estimate", "--json", str(path)]))
    problems += _problems_of_run("plan", invoke(["plan", "--json", "--budget", budget, str(path)]))
    if rng.random() < 0.25:
        problems += _problems_of_run("replay", invoke(["replay", "--json", "--budget", budget,
                                                        "--window", str(int(budget) * 2), str(path)]))
    report = folder / "report.json"
    report.unlink(missing_ok=True)
    fitted = invoke(["fit", "--budget", budget, "--report", str(report), str(path)])
    problems += _problems_of_run("fit", fitted)
    if fitted.exit_code != 0 and report.exists():
        problems.append("fit: a report was written for a payload that was not")
    if fitted.exit_code == 0 and not problems:
        reports = orjson.loads(report.read_bytes())
        reports = reports if isinstance(reports, list) else [reports]
        problems += check_payloads(reports, fitted.stdout_bytes.splitlines(), budget)
    if (path.read_bytes(), path.stat().st_mtime_ns) != before:
        problems.append("the input file was changed")
    return problems


def check_payloads(reports: list[dict], payloads: list[bytes], budget: str) -> list[str]:
    """The promises every payload `fit` wrote keeps: valid for its dialect, read back at the
    promised size, fitted again to the same bytes."""
    problems = []
    if len(reports) != len(payloads):
        return [f"payload: {len(payloads)} payloads on stdout for {len(reports)} reports"]
    for report, raw in zip(reports, payloads):
        invalid = validate_request(orjson.loads(raw), report["dialect"])
        if invalid:
            problems += [f"payload: invalid {report['dialect']} request: {problem}" for problem in invalid]
            continue
        read_back = invoke(["estimate", "--json", *counter_options(report["counter"]), "-"], input=raw)
        problems += _problems_of_run("payload: estimate", read_back)
        if read_back.exit_code != 0:
            problems.append(f"payload: does not read back: {read_back.stderr.strip()[:200]}")
            continue
        tokens = orjson.loads(read_back.stdout_bytes)["total"]["tokens"]
        if tokens != sent_in_payload(report):
            problems.append(f"payload: reads back at {tokens} tokens, {sent_in_payload(report)} promised")
        refit = invoke(["fit", "--budget", budget, "-"], input=raw)
        problems += _problems_of_run("payload: refit", refit)
        # A payload is fitted again to the same bytes when its own reading fits: one whose log
        # was counted smaller by the provider than ctxfit estimates (DESIGN §11) can read back
        # over the budget, and the refit, which has no recorded size to go by, clears more.
        if refit.exit_code == 0 and tokens <= int(budget) and refit.stdout_bytes != raw + b"\n":
            problems.append("payload: fitting it again changed its bytes")
    return problems


def counter_options(counter: str) -> list[str]:
    """The options that make `estimate` count with the counter a report names
    (``seed``, ``profile:NAME@VERSION`` or a tokenizer's name)."""
    if counter == "seed":
        return []
    if counter.startswith("profile:"):
        return ["--profile", counter.removeprefix("profile:").rpartition("@")[0]]
    return ["--tokenizer", counter]


def sent_in_payload(report: dict) -> int:
    """What a payload must read back at: the part of the promised size that `fit` says is in
    the payload (the rest, what the agent adds that its log does not show — the unlogged part,
    anchored on the recorded size — is counted but never written)."""
    assert report["tokens_in_payload"] + report["tokens_added_by_agent"] == report["tokens_sent"]
    return report["tokens_in_payload"]


PAYLOAD = "payload: "


def split(problems: list[str]) -> tuple[list[str], list[str]]:
    """(problems of the runs themselves, problems of the payloads fit produced)."""
    return ([p for p in problems if not p.startswith(PAYLOAD)], [p for p in problems if p.startswith(PAYLOAD)])


def run_case(seed_or_rng: int | random.Random, folder: Path) -> tuple[bytes, list[str]]:
    """One case from a seed: its input and the promises it broke."""
    rng = seed_or_rng if isinstance(seed_or_rng, random.Random) else random.Random(seed_or_rng)
    data = case_input(rng)
    return data, check(data, folder, rng)


