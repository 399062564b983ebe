#!/usr/bin/env python3
"""Write the bundled sample transcripts (deterministic: same bytes on every run).

    python sample_transcripts/generate.py            # writes next to this script
    python sample_transcripts/generate.py --out DIR  # writes into DIR (tests compare the bytes)

Files (all UTF-8, '\\n' line endings; JSONL files hold one compact JSON object per line):

- subagent_reader.anthropic.jsonl   Anthropic Messages: a sub-agent with ONE instruction reading
                                    ~36 long files (Russian, Chinese, Japanese, English, Python) in
                                    rounds of 1-3 parallel read_file calls; thinking blocks; one
                                    is_error result; a final summary.
- multiturn_chat.anthropic.jsonl    Anthropic Messages: 8 human turns of a coding chat, several tool
                                    rounds per turn (bash, read_file, grep, edit_file).
- claude_code_session.jsonl         A Claude Code session log (~/.claude/projects/*/<uuid>.jsonl):
                                    one content block per assistant record, tool results as user
                                    records with toolUseResult metadata, meta/system/queue records,
                                    two parallel results arriving in reverse order.
- openai_agent.openai.jsonl         OpenAI Chat Completions messages: parallel tool_calls, one call
                                    whose `arguments` is not valid JSON, Russian/English/code results.
- image_chat.anthropic.jsonl        Small Anthropic chat with real PNG images (user block and inside
                                    a tool_result) and a plain-text document block.
- codex_rollout.jsonl               A Codex CLI rollout: session_meta, turn_context, response_item
                                    records, and event_msg records that duplicate items.
- request.anthropic.json            One whole Anthropic request object (pretty-printed, not JSONL).

Only the standard library and orjson are used; randomness comes from seeded `random.Random`
instances, and the PNG images are compressed by a tiny built-in deflate encoder (not zlib's, whose
output may differ between zlib builds), so the bytes do not depend on the machine.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import struct
import sys
import uuid
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path
from random import Random

import orjson

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import textgen as tg  # noqa: E402

B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


# =============================================================================================
# Small deterministic helpers
# =============================================================================================


class Ids:
    """Deterministic look-alikes of provider ids."""

    def __init__(self, seed: str) -> None:
        self.r = Random(f"ctxfit-ids:{seed}")

    def b62(self, k: int) -> str:
        return "".join(self.r.choice(B62) for _ in range(k))

    def toolu(self) -> str:
        return "toolu_01" + self.b62(22)

    def msg(self) -> str:
        return "msg_01" + self.b62(22)

    def req(self) -> str:
        return "req_011C" + self.b62(20)

    def call(self) -> str:
        return "call_" + self.b62(24)

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.r.getrandbits(128), version=4))

    def uuid7ish(self) -> str:
        # Codex session ids are UUIDv7-like (time-ordered prefix).
        return "019a" + str(uuid.UUID(int=self.r.getrandbits(128), version=4))[4:]

    def signature(self) -> str:
        return base64.b64encode(self.randbytes(self.r.randint(280, 520))).decode()

    def encrypted(self) -> str:
        return "gAAAAABp" + base64.urlsafe_b64encode(self.randbytes(self.r.randint(700, 1400))).decode()

    def randbytes(self, n: int) -> bytes:
        return self.r.getrandbits(n * 8).to_bytes(n, "little")

    def hexstr(self, k: int) -> str:
        return "".join(self.r.choice("0123456789abcdef") for _ in range(k))


class Clock:
    """Monotonic fake wall clock producing ISO-8601 UTC timestamps with milliseconds."""

    def __init__(self, start: str, seed: str) -> None:
        self.t = datetime.fromisoformat(start).replace(tzinfo=timezone.utc)
        self.r = Random(f"ctxfit-clock:{seed}")

    def tick(self, lo: float = 0.05, hi: float = 2.0) -> str:
        self.t += timedelta(milliseconds=int(self.r.uniform(lo, hi) * 1000))
        return self.t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.t.microsecond // 1000:03d}Z"


def text(gen: str, n: int, seed: int | str, /, **kw) -> str:
    """Generated text: ru, zh, ja, en, py, sh (kind=...), json (kind=...), md (lang=..., kind=...)."""
    fn = {"ru": tg.russian, "zh": tg.chinese, "ja": tg.japanese, "en": tg.english, "py": tg.python_source,
          "sh": tg.shell_output, "json": tg.json_output, "md": tg.markdown_doc}[gen]
    return fn(n, seed, **kw)


def first_line(s: str) -> str:
    return s.strip().split("\n", 1)[0].strip('"').strip()


def dumps(obj) -> bytes:
    return orjson.dumps(obj)


def jsonl(records: list[dict]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


# =============================================================================================
# PNG images (real, valid files) with a tiny fixed-Huffman deflate encoder
# =============================================================================================

_LEN_BASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
             131, 163, 195, 227, 258]
_LEN_EXTRA = [0] * 8 + [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4 + [5] * 4 + [0]


def _rev(code: int, n: int) -> int:
    return int(f"{code:0{n}b}"[::-1], 2)


def deflate_fixed(data: bytes) -> bytes:
    """RFC 1951 stream, one fixed-Huffman block, literals + distance-1 runs. Deterministic."""
    out = bytearray()
    acc = nbits = 0

    def put(value: int, n: int) -> None:
        nonlocal acc, nbits
        acc |= value << nbits
        nbits += n
        while nbits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8

    def lit(sym: int) -> None:
        if sym < 144:
            put(_rev(0x30 + sym, 8), 8)
        elif sym < 256:
            put(_rev(0x190 + sym - 144, 9), 9)
        elif sym < 280:
            put(_rev(sym - 256, 7), 7)
        else:
            put(_rev(0xC0 + sym - 280, 8), 8)

    def match(length: int) -> None:
        i = max(k for k, base in enumerate(_LEN_BASE) if base <= length)
        if length == 258:
            i = 28
        lit(257 + i)
        if _LEN_EXTRA[i]:
            put(length - _LEN_BASE[i], _LEN_EXTRA[i])
        put(0, 5)  # distance code 0 = distance 1, no extra bits

    put(1, 1)  # BFINAL
    put(1, 2)  # BTYPE = 01, fixed Huffman
    i, n = 0, len(data)
    while i < n:
        b = data[i]
        if i and data[i - 1] == b:
            seg = data[i:i + 258]
            run = len(seg) - len(seg.lstrip(bytes([b])))
            if run >= 3:
                match(run)
                i += run
                continue
        lit(b)
        i += 1
    lit(256)
    if nbits:
        out.append(acc & 0xFF)
    return bytes(out)


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png(width: int, height: int, spans) -> bytes:
    """An RGB PNG; `spans(y)` gives a row as [(x_end, (r, g, b)), ...] covering 0..width."""
    rows = bytearray()
    for y in range(height):
        rows.append(1)  # filter type Sub: each byte minus the byte one pixel to the left
        prev, x = (0, 0, 0), 0
        for x_end, color in spans(y):
            rows += bytes((c - p) & 0xFF for c, p in zip(color, prev))
            rows += bytes(3 * (x_end - x - 1))
            prev, x = color, x_end
    raw = bytes(rows)
    body = deflate_fixed(raw)
    zdata = b"\x78\x01" + body + struct.pack(">I", zlib.adler32(raw) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", zdata) + _png_chunk(b"IEND", b"")


def gradient_png() -> bytes:
    """1024x768 sky-like vertical gradient with a darker 'horizon' band."""
    def spans(y: int):
        t = y / 767
        if 520 <= y < 560:
            return [(1024, (40, 70, 60))]
        if y >= 560:
            return [(1024, (int(60 + 40 * t), int(110 + 30 * t), 70))]
        return [(1024, (int(90 + 150 * t), int(150 + 90 * t), int(230 + 20 * t)))]
    return png(1024, 768, spans)


def screenshot_png() -> bytes:
    """1280x800 'web page screenshot': header bar, sidebar menu, a red error banner, text lines."""
    bg, white, grey, dark = (246, 247, 249), (255, 255, 255), (200, 203, 210), (150, 156, 168)
    pink, red = (253, 230, 230), (180, 40, 40)

    def spans(y: int):
        if y < 56:
            return [(1280, (32, 36, 48))]
        item = (y - 72) // 40
        side = ([(24, bg), (24 + 100 + (item * 37) % 80, dark), (240, bg)]
                if 72 <= y < 420 and (y - 72) % 40 < 12 else [(240, bg)])
        if 96 <= y < 140:
            main = ([(280, white), (300, pink), (660, red), (1240, pink), (1280, white)] if 112 <= y < 124
                    else [(280, white), (1240, pink), (1280, white)])
        elif 180 <= y < 760 and (y - 180) % 28 < 12:
            main = [(280, white), (280 + 400 + (((y - 180) // 28) * 173) % 480, grey), (1280, white)]
        else:
            main = [(1280, white)]
        return side + main
    return png(1280, 800, spans)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# =============================================================================================
# (a) subagent_reader.anthropic.jsonl
# =============================================================================================

READER_SYSTEM = """You are a research sub-agent working for a lead agent. You have read-only access to a document \
library through the `read_file` tool (paths are absolute, under /library/anthology).

Your task is given in the first user message. Read every file you are asked to read, in full, using \
parallel tool calls where that saves time. Do not guess the content of a file you have not read. If a \
file cannot be read, say so in your report and continue with the others.

When you are done, reply with a single report for the lead agent:
- one section per file: language, title, main characters, what happens (3-5 sentences);
- an overall comparison of the texts;
- a list of files that could not be read.
Write the report in English. Be concise and factual."""

_CHARACTERS = {
    "ru": ["Николай Петрович", "Анна", "Марья Ивановна", "Вера", "Елена Сергеевна", "Катя", "Андрей", "Павел", "дядя Миша"],
    "zh": ["张先生", "李老师", "王大夫", "小明", "陈师傅", "赵村长", "老渔夫", "外婆"],
    "ja": ["田中さん", "佐藤さん", "船長", "若い医者", "隣の娘", "祖母", "駅員"],
    "en": ["Mr. Harding", "Thomas", "Anna", "Mrs. Whitaker", "Margaret", "Eleanor", "the captain"],
}
_LANG_NAMES = {"ru": "Russian", "zh": "Chinese", "ja": "Japanese", "en": "English", "py": "Python"}


def build_subagent_reader() -> list[dict]:
    ids = Ids("subagent_reader")
    r = Random("ctxfit-sample:subagent_reader")
    root = "/library/anthology"
    files: list[tuple[str, str, int]] = []  # (path, kind, chars); chars 0 = missing
    for lang, count, lo, hi in (("ru", 9, 8000, 16000), ("zh", 7, 5000, 9000), ("ja", 7, 5000, 9000),
                                ("en", 7, 6000, 20000)):
        for i in range(1, count + 1):
            missing = lang == "ja" and i == 5
            files.append((f"{root}/{lang}/chapter_{i:02d}.md", lang, 0 if missing else r.randint(lo, hi)))
    for name in ("reader.py", "index.py", "tokens.py", "storage.py", "cli.py", "report.py"):
        files.append((f"{root}/src/{name}", "py", r.randint(6000, 18000)))

    listing = "\n".join(f"- {p}" for p, _, _ in files)
    messages: list[dict] = [
        {"role": "system", "content": READER_SYSTEM},
        {"role": "user", "content": (
            "Please read the following files from the anthology and summarise each one: language, title, "
            "main characters and what happens, 3-5 sentences per file. The chapters are from the "
            "multilingual test corpus we use for the tokenizer benchmarks, and the src/ files are the "
            "tools that read it. After the per-file summaries, give a short overall comparison and list "
            "anything you could not read.\n\n" + listing + "\n\nRead all of them; do not skip any.")},
    ]

    group_sizes = []
    left = len(files)
    while left:
        k = min(left, r.choice([1, 1, 1, 1, 1, 1, 1, 2, 2, 3]))
        group_sizes.append(k)
        left -= k
    thinking_rounds = {0, 5, 13, len(group_sizes) - 1}
    remarks = [
        "Reading the next file.", "Continuing with the next chapters.", "Next batch.",
        "I'll read these in parallel.", "Moving on.", "Reading the next ones together.",
    ]
    contents: dict[str, str] = {}
    pos = 0
    for g, size in enumerate(group_sizes):
        batch = files[pos:pos + size]
        pos += size
        blocks: list[dict] = []
        if g in thinking_rounds:
            langs = sorted({_LANG_NAMES[k] for _, k, _ in batch})
            blocks.append({"type": "thinking", "thinking": (
                f"The instruction lists {len(files)} files. I have read {pos - size} so far. "
                f"This batch is {', '.join(p.rsplit('/', 2)[-2] + '/' + p.rsplit('/', 1)[-1] for p, _, _ in batch)} "
                f"({' and '.join(langs)}). The chapters are long, but I must read every file in full before "
                "writing the report, so I will keep going and take notes on titles and characters as I go. "
                + ("Chapter 05 of the Japanese section was missing; I will note it in the report. " if pos - size > 28 else "")
                + "Reading several files per turn with parallel calls keeps the number of round trips down."),
                "signature": ids.signature()})
        if g == 0:
            blocks.append({"type": "text", "text": f"I'll start with the Russian chapters and go through all {len(files)} files in order."})
        elif r.random() < 0.6:
            blocks.append({"type": "text", "text": r.choice(remarks) if size == 1 else f"Reading {size} files in parallel."})
        calls = []
        for path, kind, chars in batch:
            tid = ids.toolu()
            calls.append((tid, path, kind, chars))
            blocks.append({"type": "tool_use", "id": tid, "name": "read_file", "input": {"path": path}})
        messages.append({"role": "assistant", "content": blocks})
        results = []
        for tid, path, kind, chars in calls:
            if chars == 0:
                results.append({"type": "tool_result", "tool_use_id": tid,
                                "content": f"Error: file not found: {path}", "is_error": True})
                continue
            kw = {} if kind == "py" else {"number": int(path[-5:-3])}
            body = text(kind, chars, f"reader-{path}", **kw)
            contents[path] = body
            results.append({"type": "tool_result", "tool_use_id": tid, "content": body})
        messages.append({"role": "user", "content": results})

    # Final report.
    lines = ["# Report: anthology files", ""]
    for path, kind, chars in files:
        short = path[len(root) + 1:]
        if chars == 0:
            lines.append(f"## {short}\nCould not be read (file not found).\n")
            continue
        body = contents[path]
        title = first_line(body)
        if kind == "py":
            lines.append(f"## {short}\nPython module ({body.count(chr(10))} lines). Docstring: \"{title}\". "
                         f"Defines {body.count('def ')} functions and {body.count('class ')} classes; uses a "
                         "module-level cache guarded by a lock, retries with backoff, and JSON files on disk.\n")
        else:
            names = sorted(_CHARACTERS[kind], key=lambda nm: (-body.count(nm), nm))[:3]
            lines.append(f"## {short}\n{_LANG_NAMES[kind]} prose, {len(body):,} characters. Title: \"{title}\". "
                         f"Main characters: {', '.join(names)}. A quiet village story told in short scenes: letters, "
                         "a journey to the station, conversations at the table and on the porch; "
                         f"{body.count(chr(10) * 2)} paragraphs, ending without resolving what was in the letter.\n")
    lines += ["## Overall comparison",
              "The Russian, Chinese, Japanese and English chapters are parallel texts of the same kind of "
              "story (same scenes, different languages); the Chinese and Japanese chapters are the densest "
              "per character. The Python modules are the reader, index and reporting tools for the corpus.",
              "", "## Not read", f"- {root}/ja/chapter_05.md (file not found)"]
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "\n".join(lines)}]})
    return messages


# =============================================================================================
# (b) multiturn_chat.anthropic.jsonl
# =============================================================================================

CHAT_SYSTEM = """You are a coding assistant working in the user's repository at /srv/app. You can run shell \
commands (`bash`), read files (`read_file`), search (`grep`) and edit files (`edit_file`, exact string \
replacement). Prefer reading code over guessing. Keep answers short and concrete; show commands you ran \
when they matter. Never push or deploy."""


#: Files of the chat's repository: path -> (generator, chars, keyword arguments). Generated lazily.
CHAT_REPO = {
    "/srv/app/README.md": ("md", 9000, {"project": "app"}),
    "/srv/app/CHANGELOG.md": ("md", 9000, {"kind": "changelog"}),
    "/srv/app/docs/ru/release_notes.md": ("md", 6000, {"lang": "ru", "project": "app"}),
    "/srv/app/src/app/config.py": ("py", 14000, {}),
    "/srv/app/src/app/session.py": ("py", 22000, {}),
    "/srv/app/src/app/storage.py": ("py", 19000, {}),
    "/srv/app/src/app/client.py": ("py", 17000, {}),
    "/srv/app/tests/test_session_api.py": ("py", 14000, {}),
    "/srv/app/tests/test_tokens_ru.py": ("py", 9000, {}),
    "/srv/app/tests/fixtures/ru/chapter_01.txt": ("ru", 14000, {"number": 1}),
    "/srv/app/tests/fixtures/ru/chapter_02.txt": ("ru", 13000, {"number": 2}),
}
FILE, EDIT = ("file",), None


def _chat_turns() -> list[dict]:
    """The scripted conversation. Each round is a list of (tool, input, spec); spec is FILE (the
    file named by input["path"]), ("grep", [paths], regex), ("lit", text), (generator, chars, kw)
    or EDIT (input["insert"] is inserted above a snippet of the file read earlier)."""
    return [
        dict(human="Hi! I just cloned this repo. Can you give me a quick overview of the layout and tell me how to run the tests?",
             rounds=[
                 [("bash", {"command": "ls -la /srv/app"}, ("sh", 3500, {"kind": "ls"}))],
                 [("read_file", {"path": "/srv/app/README.md"}, FILE), ("read_file", {"path": "/srv/app/src/app/config.py"}, FILE)],
                 [("bash", {"command": "cd /srv/app && python -m pytest -q"}, ("sh", 11000, {"kind": "pytest"}))],
             ],
             answer="The repo is a small service: `src/app/` holds the package (config, client, session, storage), `tests/` the pytest suite, `docs/` the user guide.\n\nRun the tests with:\n\n```\ncd /srv/app && python -m pytest -q\n```\n\nRight now a few tests fail (see the FAILURES section above) - mostly in the session API tests. Want me to dig into those?"),
        dict(human="Yes please, the test_session_api failures are the ones blocking CI. What's going on?",
             rounds=[
                 [("grep", {"pattern": "def ", "path": "/srv/app/tests/test_session_api.py"}, ("grep", ["/srv/app/tests/test_session_api.py"], r"def "))],
                 [("read_file", {"path": "/srv/app/src/app/session.py"}, FILE), ("read_file", {"path": "/srv/app/tests/test_session_api.py"}, FILE)],
                 [("bash", {"command": "cd /srv/app && python -m pytest -q tests/test_session_api.py -x"}, ("sh", 6000, {"kind": "pytest"}))],
                 [("edit_file", {"path": "/srv/app/src/app/session.py", "insert": "size = max(size, 1)  # a page size of 0 (the config default) must not mean 'never yield'"}, EDIT)],
                 [("bash", {"command": "cd /srv/app && python -m pytest -q tests/test_session_api.py"}, ("sh", 4000, {"kind": "pytest"}))],
             ],
             answer="Found it: the batching code in `session.py` never yielded when `size` was 0 (the default coming from the config), so the session API returned empty pages. I clamp it with `size = max(size, 1)` before the loop.\n\nThe session API tests pass locally now; the remaining failures are unrelated."),
        dict(human="Our tokenizer tests use Russian fixture texts in tests/fixtures/ru/ and test_tokens_ru is flaky. Can you look at the fixtures and the test?",
             rounds=[
                 [("bash", {"command": "ls -la /srv/app/tests/fixtures/ru"}, ("lit", "total 64\ndrwxr-xr-x 2 dev dev  4096 Mar  2 10:41 .\ndrwxr-xr-x 5 dev dev  4096 Mar  2 10:41 ..\n-rw-r--r-- 1 dev dev 26114 Mar  2 10:41 chapter_01.txt\n-rw-r--r-- 1 dev dev 24287 Mar  2 10:41 chapter_02.txt\n-rw-r--r-- 1 dev dev   212 Mar  2 10:41 README\n"))],
                 [("read_file", {"path": "/srv/app/tests/fixtures/ru/chapter_01.txt"}, FILE),
                  ("read_file", {"path": "/srv/app/tests/fixtures/ru/chapter_02.txt"}, FILE)],
                 [("read_file", {"path": "/srv/app/tests/test_tokens_ru.py"}, FILE)],
                 [("bash", {"command": "cd /srv/app && for i in 1 2 3; do python -m pytest -q tests/test_tokens_ru.py -p no:randomly; done"}, ("sh", 5000, {"kind": "pytest"}))],
             ],
             answer="The fixtures are ordinary literary Russian (chapters 1 and 2 of the same story). The flakiness comes from the test, not the data: it compares a token count estimated with `chars / 4` against a hard-coded range, and the range was tuned on chapter 1 only. Cyrillic runs at roughly 2 characters per token, so chapter 2 lands outside the range depending on which fixture is picked first.\n\nI'd estimate per writing system (ASCII ~4 chars/token, Cyrillic ~2, CJK ~1) and assert against a tolerance instead of a fixed range."),
        dict(human="Makes sense. Can you check what the /api/v1/records endpoint on the staging box returns right now? The URL is in the config.",
             rounds=[
                 [("grep", {"pattern": "STAGING_URL", "path": "/srv/app/src"}, ("lit", "/srv/app/src/app/config.py:31:STAGING_URL = os.environ.get(\"STAGING_URL\", \"https://staging.internal.example\")\n/srv/app/src/app/client.py:12:from app.config import STAGING_URL\n"))],
                 [("bash", {"command": "curl -s https://staging.internal.example/api/v1/records?page=1 | python -m json.tool"}, ("json", 14000, {"kind": "rows"}))],
                 [("bash", {"command": "curl -s https://staging.internal.example/api/v1/metrics?window=5m | python -m json.tool"}, ("json", 8000, {"kind": "metrics"}))],
             ],
             answer="Staging answers normally: page 1 of `/api/v1/records` returns the expected shape (`items[]` with `id`, `name`, `owner`, `status`, `size_bytes`, `tags`, `updated_at`, `checksum`). Several records are in `failed` status, and the 5-minute metrics show a latency spike on a couple of hosts - worth a look, but nothing is down."),
        dict(human="Show me the recent history of the storage module - who touched it and why?",
             rounds=[
                 [("bash", {"command": "cd /srv/app && git log -n 40 -- src/app/storage.py"}, ("sh", 11000, {"kind": "git_log"}))],
                 [("read_file", {"path": "/srv/app/src/app/storage.py"}, FILE)],
             ],
             answer="Most recent changes to `storage.py` are small fixes (pagination off-by-one, UTF-8 names, atomic writes via temp file + rename) spread across several authors; the biggest one was the refactor that split the parser into smaller functions. Nothing in the history explains the current failures."),
        dict(human="Please add a retry with exponential backoff around the HTTP fetch in client.py. Max 5 attempts.",
             rounds=[
                 [("read_file", {"path": "/srv/app/src/app/client.py"}, FILE)],
                 [("edit_file", {"path": "/srv/app/src/app/client.py", "insert": "session = RetryingSession(session, attempts=MAX_RETRIES, backoff=2.0)  # exponential backoff on timeouts"}, EDIT)],
                 [("bash", {"command": "cd /srv/app && python -m pytest -q tests/test_client.py"}, ("sh", 5000, {"kind": "pytest"})),
                  ("bash", {"command": "cd /srv/app && ruff check src/app/client.py"}, ("lit", "All checks passed!\n"))],
             ],
             answer="Done. The client's session is now wrapped in `RetryingSession(session, attempts=MAX_RETRIES, backoff=2.0)`: up to 5 attempts with exponential backoff (2, 4, 8, 16 s) on timeouts and connection errors, then the last error is re-raised. Client tests pass."),
        dict(human="Which dependencies are we on? Anything badly outdated?",
             rounds=[
                 [("bash", {"command": "cd /srv/app && pip list"}, ("sh", 4000, {"kind": "pip_list"})),
                  ("read_file", {"path": "/srv/app/requirements.txt"}, ("lit", "".join(f"{p}>={v}\n" for p, v in (
                      ("fastapi", "0.115"), ("httpx", "0.27"), ("pydantic", "2.7"), ("sqlalchemy", "2.0"), ("orjson", "3.10"),
                      ("uvicorn", "0.30"), ("typer", "0.12"), ("rich", "13.7"), ("python-dateutil", "2.9")))))],
                 [("bash", {"command": "cd /srv/app && pip list --outdated --format=json"}, ("json", 6000, {"kind": "rows"}))],
             ],
             answer="Direct dependencies are listed in `requirements.txt` with minimum versions; the installed versions satisfy them. A few are several minor versions behind (pydantic, sqlalchemy, httpx); nothing is end-of-life. I would bump pydantic and httpx first, since the tests exercise them heavily."),
        dict(human="Thanks! Last thing: summarise the changelog for the release notes. Write it in Russian please, it's for the support team.",
             rounds=[
                 [("read_file", {"path": "/srv/app/CHANGELOG.md"}, FILE)],
                 [("bash", {"command": "cd /srv/app && git log -n 30"}, ("sh", 5000, {"kind": "git_log"}))],
                 [("read_file", {"path": "/srv/app/docs/ru/release_notes.md"}, FILE)],
             ],
             answer="Черновик для службы поддержки:\n\n**Что нового в версии 2.9**\n\n- Исправлена пагинация в API сессий: при пустом размере страницы сервис больше не возвращает пустые ответы.\n- HTTP-клиент теперь повторяет запрос до пяти раз с экспоненциальной задержкой при таймаутах и обрывах соединения.\n- Тесты токенизатора на русских текстах больше не «мигают»: оценка учитывает систему письма.\n- Запись файлов стала атомарной (временный файл и переименование).\n\nЕсли клиент жалуется на медленные ответы, попросите время запроса и идентификатор сессии — по ним видно, были ли повторные попытки."),
    ]


def grep_lines(files: dict[str, str], pattern: str) -> str:
    """`grep -n` over generated files: "path:line:text" lines, or "No matches found"."""
    rx = re.compile(pattern)
    out = [f"{path}:{i}:{line}" for path, body in files.items() for i, line in enumerate(body.split("\n"), 1) if rx.search(line)]
    return "\n".join(out) if out else "No matches found"


class Repo(dict):
    """A repository's files by path, each generated from `specs` the first time it is read
    (and then edited in place by the session that reads it)."""

    def __init__(self, specs: dict, seed: str) -> None:
        super().__init__()
        self.specs, self.seed = specs, seed

    def __missing__(self, path: str) -> str:
        gen, chars, kw = self.specs[path]
        self[path] = text(gen, chars, f"{self.seed}-{path}", **kw)
        return self[path]


def build_multiturn_chat() -> list[dict]:
    ids = Ids("multiturn_chat")
    r = Random("ctxfit-sample:multiturn_chat")
    messages: list[dict] = [{"role": "system", "content": CHAT_SYSTEM}]
    intros = ["Let me look.", "Checking.", "I'll run that.", "Let me read the relevant files.", None, None, None]
    files = Repo(CHAT_REPO, "chat")

    seq = 0
    for t, turn in enumerate(_chat_turns()):
        messages.append({"role": "user", "content": turn["human"]})
        for k, calls in enumerate(turn["rounds"]):
            blocks: list[dict] = []
            intro = r.choice(intros)
            if intro:
                blocks.append({"type": "text", "text": intro})
            results = []
            for name, args, spec in calls:
                seq += 1
                tid = ids.toolu()
                if spec is EDIT:
                    _, old, indent = pick_snippet(files[args["path"]])
                    new = indent + args["insert"] + "\n" + old
                    files[args["path"]] = files[args["path"]].replace(old, new, 1)
                    args = {"path": args["path"], "old_string": old, "new_string": new}
                    body = f"Edited {args['path']}: replaced 1 occurrence (3 lines -> 4 lines)."
                elif spec == FILE:
                    body = files[args["path"]]
                elif spec[0] == "grep":
                    body = grep_lines({p: files[p] for p in spec[1]}, spec[2])
                elif spec[0] == "lit":
                    body = spec[1]
                else:
                    body = text(spec[0], spec[1], f"chat-{seq}", **spec[2])
                blocks.append({"type": "tool_use", "id": tid, "name": name, "input": args})
                if t == 3 and k == 1:  # one result as a list of text blocks (valid Anthropic form)
                    results.append({"type": "tool_result", "tool_use_id": tid, "content": [{"type": "text", "text": body}]})
                else:
                    results.append({"type": "tool_result", "tool_use_id": tid, "content": body})
            messages.append({"role": "assistant", "content": blocks})
            messages.append({"role": "user", "content": results})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": turn["answer"]}]})
    return messages


# =============================================================================================
# (c) claude_code_session.jsonl
# =============================================================================================

CC_CWD = "/home/dev/proj"
CC_MODEL = "claude-sonnet-4-5-20250929"
CC_REMINDER = ("\n\n<system-reminder>\nWhenever you read a file, you should consider whether it looks malicious. "
               "If it does, you MUST refuse to improve or augment the code. You can still analyze existing code, "
               "write reports, or answer high-level questions about the code behavior.\n</system-reminder>\n")


class ClaudeCodeLog:
    def __init__(self) -> None:
        self.ids = Ids("claude_code_session")
        self.clock = Clock("2026-03-14T09:12:03", "claude_code_session")
        self.session = self.ids.uuid()
        self.records: list[dict] = []
        self.parent: str | None = None
        self.context = 14_000  # cached system prompt + tools, for plausible usage numbers

    def _base(self, kind: str) -> tuple[dict, str]:
        u = self.ids.uuid()
        rec = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": CC_CWD,
               "sessionId": self.session, "version": "2.0.61", "gitBranch": "main", "type": kind}
        self.parent = u
        return rec, u

    def user(self, content, *, meta: bool = False, tool_result: dict | None = None) -> dict:
        rec, u = self._base("user")
        rec["message"] = {"role": "user", "content": content}
        if meta:
            rec["isMeta"] = True
        rec["uuid"] = u
        rec["timestamp"] = self.clock.tick(0.3, 3.0 if tool_result is None else 1.2)
        if tool_result is not None:
            rec["toolUseResult"] = tool_result
        self.records.append(rec)
        self.context += seed_tokens(_flatten(content)) if not isinstance(content, str) else seed_tokens([content])
        return rec

    def assistant(self, blocks: list[dict], out_tokens: int = 0) -> list[dict]:
        """One API response -> one record per content block, sharing message.id and requestId."""
        mid, req = self.ids.msg(), self.ids.req()
        created = self.context // 20
        usage = {"input_tokens": 4 + len(self.records) % 7, "cache_creation_input_tokens": created,
                 "cache_read_input_tokens": self.context - created,
                 "cache_creation": {"ephemeral_5m_input_tokens": created, "ephemeral_1h_input_tokens": 0},
                 "output_tokens": out_tokens or 30 + 11 * len(blocks), "service_tier": "standard"}
        recs = []
        for block in blocks:
            rec, u = self._base("assistant")
            rec["message"] = {"model": CC_MODEL, "id": mid, "type": "message", "role": "assistant",
                              "content": [block], "stop_reason": None, "stop_sequence": None, "usage": usage}
            rec["requestId"] = req
            rec["uuid"] = u
            rec["timestamp"] = self.clock.tick(0.5, 4.0)
            self.records.append(rec)
            recs.append(rec)
        self.context += seed_tokens(_flatten(blocks))
        return recs

    def system(self, content: str, tool_use_id: str) -> None:
        rec, u = self._base("system")
        rec.update({"content": content, "isMeta": False, "timestamp": self.clock.tick(0.1, 0.4), "uuid": u,
                    "toolUseID": tool_use_id, "level": "info"})
        self.records.append(rec)


def pick_snippet(body: str) -> tuple[int, str, str]:
    """A unique 3-line block of `body` starting at a 4-space-indented assignment: (line index, block, indent)."""
    lines = body.split("\n")
    for at, line in enumerate(lines):
        if line.startswith("    ") and not line.startswith("     ") and " = " in line and not line.lstrip().startswith("#"):
            old = "\n".join(lines[at:at + 3])
            if body.count(old) == 1:
                return at, old, "    "
    raise AssertionError("no unique snippet")


#: The Claude Code session's project files: path -> (generator, chars, keyword arguments).
CC_REPO = {
    f"{CC_CWD}/README.md": ("md", 9000, {"project": "proj"}),
    f"{CC_CWD}/tests/test_segment.py": ("py", 11000, {}),
    f"{CC_CWD}/tests/fixtures/ja/chapter_03.txt": ("ja", 7000, {"number": 3}),
    f"{CC_CWD}/tests/fixtures/zh/chapter_01.txt": ("zh", 6500, {"number": 1}),
    f"{CC_CWD}/src/proj/__init__.py": ("py", 5000, {}),
    f"{CC_CWD}/src/proj/segment.py": ("py", 18000, {}),
    f"{CC_CWD}/src/proj/tokens.py": ("py", 14000, {}),
    f"{CC_CWD}/src/proj/index.py": ("py", 16000, {}),
    f"{CC_CWD}/src/proj/report.py": ("py", 12000, {}),
    f"{CC_CWD}/src/proj/storage.py": ("py", 17000, {}),
    f"{CC_CWD}/src/proj/cli.py": ("py", 13000, {}),
}


def _cat_n(body: str) -> str:
    return "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(body.split("\n"), 1))


def build_claude_code() -> list[dict]:
    log = ClaudeCodeLog()
    ids, clock = log.ids, log.clock
    files = Repo(CC_REPO, "cc")

    def read(path: str) -> tuple[dict, dict]:
        content = files[path]
        tid = ids.toolu()
        call = {"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": path}}
        n = content.count("\n") + 1
        result = ([{"tool_use_id": tid, "type": "tool_result", "content": _cat_n(content) + CC_REMINDER}],
                  {"type": "text", "file": {"filePath": path, "content": content, "numLines": n, "startLine": 1, "totalLines": n}})
        return call, result

    def bash(command: str, description: str, kind: str, chars: int, seed: str, error: bool = False):
        out = text("sh", chars, f"cc-{seed}", kind=kind).rstrip("\n")
        tid = ids.toolu()
        call = {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": command, "description": description}}
        if error:
            content = [{"type": "tool_result", "content": f"Exit code 1\n{out}", "is_error": True, "tool_use_id": tid}]
            return call, (content, f"Error: Exit code 1\n{out}")
        return call, ([{"tool_use_id": tid, "type": "tool_result", "content": out, "is_error": False}],
                      {"stdout": out, "stderr": "", "interrupted": False, "isImage": False})

    def grep(pattern: str, path: str, paths: list[str]):
        out = grep_lines({p: files[p] for p in paths}, pattern)
        tid = ids.toolu()
        call = {"type": "tool_use", "id": tid, "name": "Grep",
                "input": {"pattern": pattern, "path": path, "output_mode": "content", "-n": True}}
        return call, ([{"tool_use_id": tid, "type": "tool_result", "content": out}],
                      {"mode": "content", "numFiles": 0, "filenames": [], "content": out, "numLines": out.count("\n") + 1})

    def edit(path: str, new_line: str):
        original = files[path]
        at, old, indent = pick_snippet(original)
        new = indent + new_line + "\n" + old
        files[path] = original.replace(old, new, 1)
        tid = ids.toolu()
        call = {"type": "tool_use", "id": tid, "name": "Edit", "input": {"file_path": path, "old_string": old, "new_string": new}}
        snippet = "\n".join(f"{i + 1:>6}\u2192{files[path].split(chr(10))[i]}" for i in range(max(0, at - 4), at + 7))
        content = (f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the "
                   f"edited file:\n{snippet}")
        meta = {"filePath": path, "oldString": old, "newString": new, "originalFile": original,
                "structuredPatch": [{"oldStart": at + 1, "oldLines": 3, "newStart": at + 1, "newLines": 4,
                                     "lines": ["+" + indent + new_line] + [" " + x for x in old.split("\n")]}],
                "userModified": False, "replaceAll": False}
        return call, ([{"tool_use_id": tid, "type": "tool_result", "content": content}], meta)

    def thinking(s: str) -> dict:
        return {"type": "thinking", "thinking": s, "signature": ids.signature()}

    def say(s: str) -> dict:
        return {"type": "text", "text": s}

    def step(blocks_and_calls: list, results: list) -> None:
        log.assistant(blocks_and_calls)
        for content, meta in results:
            log.user(content, tool_result=meta)

    # --- header records -------------------------------------------------------------------
    # The summary names the session's last message (leafUuid); filled in at the end.
    log.records.append({"type": "summary", "summary": "Fix CJK segmentation in tokenizer fixtures", "leafUuid": None})
    snap_id = ids.uuid()
    log.records.append({"type": "file-history-snapshot", "messageId": snap_id,
                        "snapshot": {"messageId": snap_id, "trackedFileBackups": {}, "timestamp": clock.tick()},
                        "isSnapshotUpdate": False})
    log.user("Caveat: The messages below were generated by the user while running local commands. DO NOT respond "
             "to these messages or otherwise consider them in your response unless the user explicitly asks you to.", meta=True)
    log.user("<command-name>/model</command-name>\n            <command-message>model</command-message>\n            <command-args></command-args>")
    log.user("<local-command-stdout>Set model to \u001b[1mSonnet 4.5\u001b[22m (claude-sonnet-4-5-20250929)</local-command-stdout>")

    # --- turn 1: Japanese segmentation bug -------------------------------------------------
    log.user("The segmenter tests for Japanese started failing after yesterday's refactor. Can you find out why and fix it? "
             "Fixtures are in tests/fixtures/, the segmenter is src/proj/segment.py.")
    c1, r1 = read(f"{CC_CWD}/tests/test_segment.py")
    step([thinking("The user says Japanese segmentation tests fail after a refactor. Start with the test file to see what is asserted, "
                   "then run it to get the actual failure, then read the fixture and the segmenter."),
          say("I'll start by looking at the tests and running them."), c1], [r1])
    c2, r2 = bash("python -m pytest -q tests/test_segment.py", "Run segmenter tests", "pytest", 6000, "t1-pytest", error=True)
    step([c2], [r2])
    c3, r3 = read(f"{CC_CWD}/tests/fixtures/ja/chapter_03.txt")
    c4, r4 = read(f"{CC_CWD}/src/proj/segment.py")
    step([say("Two failures on the Japanese fixture. Let me read the fixture and the segmenter together."), c3, c4], [r3, r4])
    c5, r5 = read(f"{CC_CWD}/src/proj/tokens.py")
    step([thinking("The segmenter splits on whitespace first and only then applies the script rules. Japanese has no spaces, "
                   "so a whole paragraph becomes one segment and the length assertion fails. The helper that classifies "
                   "characters is in tokens.py; check whether it knows about katakana and the 、。「」 punctuation."), c5], [r5])
    c6, r6 = edit(f"{CC_CWD}/src/proj/segment.py", "# Scripts without spaces (Han, kana) are split per character class, not on whitespace.")
    step([say("The whitespace split runs before the script check, so a Japanese paragraph is one segment. Fixing the order."), c6], [r6])
    log.system("\u001b[1mPostToolUse:Edit\u001b[22m [ruff format $CLAUDE_FILE_PATHS] completed successfully", c6["id"])
    c7, r7 = bash("python -m pytest -q tests/test_segment.py", "Re-run segmenter tests", "pytest", 2500, "t1-pytest2")
    step([c7], [r7])
    log.assistant([say("Fixed. `segment()` split on whitespace before checking the script, so Japanese paragraphs (no spaces) came out "
                       "as a single segment. Text in Han/kana is now split per character class first; the segmenter tests pass.")])

    # --- turn 2: Chinese fixture + grep; two parallel results arrive in reverse order ---------
    log.user("Nice. Does the Chinese fixture pass too? And grep for other places that assume words are separated by spaces.")
    src = [p for p in CC_REPO if p.startswith(f"{CC_CWD}/src/")]
    c8, r8 = grep(r"split\(", f"{CC_CWD}/src", src)
    c9, r9 = read(f"{CC_CWD}/tests/fixtures/zh/chapter_01.txt")
    step([thinking("Two independent lookups: search for whitespace splitting in src/ and read the Chinese fixture. Run them in parallel."),
          c8, c9], [r9, r8])  # results in the opposite order of the calls
    c10, r10 = read(f"{CC_CWD}/src/proj/index.py")
    c11, r11 = read(f"{CC_CWD}/src/proj/report.py")
    step([say("The grep shows two more modules splitting on spaces. Reading both."), c10, c11], [r10, r11])
    log.records.append({"type": "queue-operation", "operation": "enqueue", "timestamp": clock.tick(),
                        "content": "also update the README section on CJK support when you're done", "sessionId": log.session})
    c12, r12 = edit(f"{CC_CWD}/src/proj/index.py", "# Do not assume spaces between words: CJK text has none.")
    step([c12], [r12])
    c13, r13 = bash("python -m pytest -q", "Run full test suite", "pytest", 9000, "t2-full")
    step([c13], [r13])
    log.assistant([say("The Chinese fixture passes now too. `index.py` had the same whitespace assumption (fixed the same way); "
                       "`report.py` only splits log lines, which is fine. Full suite is green apart from two unrelated skips.")])
    log.records.append({"type": "queue-operation", "operation": "dequeue", "timestamp": clock.tick(), "sessionId": log.session})

    # --- turn 3: README (the queued message) ------------------------------------------------
    log.user("also update the README section on CJK support when you're done")
    c14, r14 = read(f"{CC_CWD}/README.md")
    step([c14], [r14])
    c15, r15 = bash("git diff --stat && git status", "Show working tree changes", "git_status", 1200, "t3-status")
    step([say("Let me check what has changed before editing the README."), c15], [r15])
    tid = ids.toolu()
    readme = files[f"{CC_CWD}/README.md"]
    paras = readme.split("\n\n")
    at = next(i for i, p in enumerate(paras) if p.startswith("## "))
    old = paras[at] + "\n\n" + paras[at + 1]  # the first section's heading and first paragraph
    assert readme.count(old) == 1
    new = old + "\n\nCJK text (Chinese, Japanese) has no spaces between words: the segmenter splits it per character class,\nnot on whitespace."
    step([{"type": "tool_use", "id": tid, "name": "Edit", "input": {"file_path": f"{CC_CWD}/README.md", "old_string": old, "new_string": new}}],
         [([{"tool_use_id": tid, "type": "tool_result", "content": f"The file {CC_CWD}/README.md has been updated."}],
           {"filePath": f"{CC_CWD}/README.md", "oldString": old, "newString": new, "originalFile": files[f"{CC_CWD}/README.md"],
            "structuredPatch": [], "userModified": False, "replaceAll": False})])
    log.assistant([say("README updated: the CJK section now explains that Chinese and Japanese text is segmented per character class.")])

    # --- turn 4: history, storage module, logs -------------------------------------------------
    log.user("Before I commit: look at the git history of segment.py and storage.py and tell me if the refactor touched anything else we should re-test.")
    c16, r16 = bash("git log -n 30 -- src/proj/segment.py src/proj/storage.py", "Show recent history", "git_log", 8000, "t4-log")
    c17, r17 = read(f"{CC_CWD}/src/proj/storage.py")
    step([thinking("Check the history for the refactor commit and read storage.py to see whether it depends on segment boundaries."),
          c16, c17], [r16, r17])
    c18, r18 = grep("segment", f"{CC_CWD}/src", src)
    c19, r19 = read(f"{CC_CWD}/src/proj/cli.py")
    step([c18, c19], [r18, r19])
    c20, r20 = bash("python -m pytest -q tests/test_storage.py tests/test_cli.py", "Run storage and CLI tests", "pytest", 5000, "t4-pytest")
    step([c20], [r20])
    log.assistant([say("The refactor commit also touched `storage.py` (chunk boundaries are computed from segments) and the CLI's "
                       "`--split` option. Both call `segment()`, so they inherit the fix; their tests pass. I'd re-test the import "
                       "of large CJK files manually once, since no test covers files over 1 MB.")])

    # --- turn 5: dependencies & wrap-up --------------------------------------------------------
    log.user("ok. last: check that the dev dependencies are installed and summarise today's changes for the commit message")
    c21, r21 = bash("pip list", "List installed packages", "pip_list", 2200, "t5-pip")
    c22, r22 = read(f"{CC_CWD}/src/proj/__init__.py")
    step([c21, c22], [r21, r22])
    log.assistant([thinking("Everything needed is installed. Write a short commit message covering segment.py, index.py and the README."),
                   say("All dev dependencies are installed. Suggested commit message:\n\n```\nSegment CJK text per character class before whitespace\n\n"
                       "segment() split on whitespace first, so Chinese and Japanese paragraphs came out as one\nsegment. Split Han/kana "
                       "runs per character class first; same fix in index.py.\nDocument CJK segmentation in the README.\n```")])
    log.records[0]["leafUuid"] = log.parent
    return log.records


def _flatten(blocks) -> list[str]:
    out = []
    for b in blocks if isinstance(blocks, list) else [blocks]:
        if isinstance(b, str):
            out.append(b)
            continue
        t = b.get("type")
        if t == "text":
            out.append(b["text"])
        elif t == "thinking":
            out.append(b["thinking"])
        elif t == "tool_use":
            out += [b["name"], orjson.dumps(b["input"]).decode()]
        elif t == "tool_result":
            c = b.get("content", "")
            out += [c] if isinstance(c, str) else _flatten(c)
        elif t == "document" and b["source"].get("type") == "text":
            out.append(b["source"]["data"])
    return out


# =============================================================================================
# (d) openai_agent.openai.jsonl
# =============================================================================================

OA_SYSTEM = """You are TransLab, an assistant for a literary translation team. You work in a repository with \
the source chapters (corpus/), the machine-translation pipeline (pipeline/) and its job API. Tools: \
list_dir, read_file, run_command. Answer in the language the user writes in. Quote file paths exactly."""


def build_openai_agent() -> list[dict]:
    ids = Ids("openai_agent")
    msgs: list[dict] = [{"role": "system", "content": OA_SYSTEM}]
    seq = [0]

    def call(name: str, args: dict | str) -> dict:
        return {"id": ids.call(), "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else orjson.dumps(args).decode()}}

    def round_(calls: list[tuple[str, dict | str, str]], content: str | None = None) -> None:
        tcs = [call(n, a) for n, a, _ in calls]
        msgs.append({"role": "assistant", "content": content, "tool_calls": tcs})
        for tc, (_, _, body) in zip(tcs, calls):
            msgs.append({"role": "tool", "tool_call_id": tc["id"], "content": body})

    def gen(kind: str, n: int, /, **kw) -> str:
        seq[0] += 1
        return text(kind, n, f"oa-{seq[0]}", **kw)

    # Turn 1 (Russian, plain string).
    msgs.append({"role": "user", "content": "Привет! В папке corpus/ru лежат главы романа, который мы переводим. "
                                            "Прочитай первые три главы и кратко расскажи, о чём они."})
    listing = "\n".join(f"chapter_{i:02d}.md" for i in range(1, 13)) + "\nNOTES.md\nglossary.tsv"
    round_([("list_dir", {"path": "corpus/ru"}, listing)])
    round_([("read_file", {"path": f"corpus/ru/chapter_{i:02d}.md"}, gen("ru", 14000 + 1500 * i, number=i)) for i in (1, 2, 3)])
    msgs.append({"role": "assistant", "content": "Я прочитал главы 1–3. Это неторопливая деревенская история: письма, "
                 "поездка на станцию, разговоры за столом и на крыльце. Главные герои — капитан, Анна и Николай Петрович; "
                 "в третьей главе появляется незнакомец, и напряжение растёт, но загадка письма пока не раскрыта."})

    # Turn 2 (English, content parts).
    msgs.append({"role": "user", "content": [{"type": "text", "text": "Great. Now check pipeline/translate.py and tell me why it chokes on long chapters. Run its tests too."}]})
    pipeline = {"pipeline/translate.py": gen("py", 20000), "pipeline/chunking.py": gen("py", 15000)}
    round_([("read_file", {"path": path}, body) for path, body in pipeline.items()], content="Reading the pipeline code first.")
    round_([("run_command", {"command": "python -m pytest -q tests/pipeline", "timeout": 300}, gen("sh", 9000, kind="pytest"))])
    round_([("run_command", {"command": "grep -rn -E 'MAX_|limit' pipeline/"}, grep_lines(pipeline, r"MAX_|limit"))])
    msgs.append({"role": "assistant", "content": "The chunker in `pipeline/chunking.py` sizes chunks with `len(text) // 4`, an English "
                 "rule of thumb. Russian runs at roughly 2 characters per token, so a chunk it believes is 3,000 tokens is really "
                 "about 6,000 and overflows the model's `max_tokens` budget; long chapters fail on the first oversized chunk. "
                 "Counting Cyrillic at ~2 characters per token (and CJK at 1) fixes it."})

    # Turn 3: a tool call whose arguments are not valid JSON, then a retry.
    msgs.append({"role": "user", "content": "Run the pipeline on chapter 4 with --dry-run and show me the plan."})
    bad = '{"command": "python -m pipeline.translate corpus/ru/chapter_04.md --dry-run", "timeout": 600'
    # The message is what json.loads(bad) raises; written out so that it cannot vary between Python versions.
    error = ("Error: could not parse tool arguments as JSON: Expecting ',' delimiter: line 1 column 93 (char 92). "
             "The arguments must be a JSON object.")
    round_([("run_command", bad, error)])
    chapter4 = gen("ru", 18000, number=4)
    round_([("run_command", {"command": "python -m pipeline.translate corpus/ru/chapter_04.md --dry-run", "timeout": 600},
             dry_run_plan("corpus/ru/chapter_04.md", chapter4))], content="My previous call was malformed; retrying.")
    msgs.append({"role": "assistant", "content": "Dry run for chapter 4: the chunker cut it into 12,000-character chunks and "
                 "estimates the first at 3,000 tokens, but Russian runs at ~2 characters per token, so it is really ~5,400 "
                 "tokens and is marked `over_limit` against the 4,096-token request limit — the same chunking issue."})

    # Turn 4 (Russian): two chapters in parallel, plus the glossary.
    msgs.append({"role": "user", "content": "Сравни главы 4 и 5: где меняется тон? И проверь глоссарий на имена героев."})
    round_([("read_file", {"path": "corpus/ru/chapter_04.md"}, chapter4),
            ("read_file", {"path": "corpus/ru/chapter_05.md"}, gen("ru", 16000, number=5)),
            ("read_file", {"path": "corpus/ru/glossary.tsv"},
             "term\ttranslation\tnote\nкапитан\tthe captain\tникогда не по имени\nАнна\tAnna\t\nНиколай Петрович\tNikolai Petrovich\t"
             "не сокращать\nМарья Ивановна\tMarya Ivanovna\t\nстанция Озёрная\tOzyornaya station\t\nдядя Миша\tUncle Misha\t\n")])
    msgs.append({"role": "assistant", "content": "В главе 4 тон спокойный, почти бытовой; в главе 5 больше диалогов и коротких фраз, "
                 "ночные сцены и ожидание у калитки создают тревогу. Глоссарий покрывает всех главных героев; не хватает "
                 "«дяди Миши» в форме родительного падежа и «председателя»."})

    # Turn 5 (English parts): job API status and logs.
    msgs.append({"role": "user", "content": [{"type": "text", "text": "Thanks. What's the status of the translation jobs on the API, and why did the last one fail?"}]})
    round_([("run_command", {"command": "curl -s http://localhost:8080/api/jobs?limit=50"}, jobs_json(Random("ctxfit-sample:oa-jobs"))),
            ("run_command", {"command": "tail -n 200 logs/pipeline.log"}, pipeline_log(Random("ctxfit-sample:oa-log"), 11000))])
    round_([("read_file", {"path": "pipeline/api.py"}, gen("py", 12000))])
    msgs.append({"role": "assistant", "content": "Most jobs are done; the last one failed on chapter 6 with the same oversized-chunk "
                 "error (see the log tail). Once chunking counts Cyrillic characters correctly, re-run it with "
                 "`python -m pipeline.translate corpus/ru/chapter_06.md`."})
    return msgs


def dry_run_plan(path: str, chapter: str, size: int = 12000) -> str:
    """The translation pipeline's --dry-run output: chunks of a chapter with a chars/4 estimate."""
    chunks = [chapter[i:i + size] for i in range(0, len(chapter), size)]
    plan = {"input": path, "chars": len(chapter), "model": "gpt-4o-mini", "request_limit_tokens": 4096,
            "chunks": [{"index": i, "chars": len(c), "estimated_tokens": len(c) // 4,
                        "script_aware_tokens": seed_tokens([c]),
                        "status": "over_limit" if seed_tokens([c]) > 4096 else "ok", "preview": c[:300]}
                       for i, c in enumerate(chunks)]}
    return json.dumps(plan, ensure_ascii=False, indent=2)


def jobs_json(r: Random) -> str:
    """The pipeline job API's answer: a list of translation jobs."""
    jobs = []
    for i in range(40):
        ch = 6 - (i % 6)
        status = "failed" if i == 0 else r.choice(["done", "done", "done", "cancelled"])
        jobs.append({"id": f"job_{r.getrandbits(40):010x}", "input": f"corpus/ru/chapter_{ch:02d}.md", "target_lang": "en",
                     "status": status, "chunks_done": r.randint(3, 14), "created_at": f"2026-03-{10 - i // 6:02d}T{r.randint(8, 20):02d}:{r.randint(0, 59):02d}:00Z",
                     "error": "request too large: chunk 1 has 6120 tokens, limit 4096" if status == "failed" else None})
    return json.dumps({"jobs": jobs, "count": len(jobs), "next": None}, indent=2)


def pipeline_log(r: Random, n: int) -> str:
    """Tail of the translation pipeline's log file."""
    lines, t = [], 8 * 3600
    while sum(len(x) + 1 for x in lines) < n:
        t += r.randint(1, 40)
        ts = f"2026-03-10 {t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d},{r.randint(0, 999):03d}"
        ch, k = r.randint(1, 6), r.randint(1, 14)
        x = r.random()
        if x < 0.6:
            lines.append(f"{ts} INFO  pipeline.translate: chunk {k}/14 of corpus/ru/chapter_{ch:02d}.md sent ({r.randint(2800, 3000)} est. tokens)")
        elif x < 0.85:
            lines.append(f"{ts} INFO  pipeline.translate: chunk {k}/14 of corpus/ru/chapter_{ch:02d}.md done in {r.uniform(2, 30):.1f}s")
        elif x < 0.95:
            lines.append(f"{ts} WARN  pipeline.client: retrying after HTTP 429 (attempt {r.randint(1, 4)}/5)")
        else:
            lines.append(f"{ts} ERROR pipeline.translate: chunk {k}/14 of corpus/ru/chapter_{ch:02d}.md rejected: "
                         f"request too large: {r.randint(5600, 6400)} tokens > 4096")
    lines.append(f"{ts} ERROR pipeline.jobs: job failed: corpus/ru/chapter_06.md (request too large: chunk 1 has 6120 tokens, limit 4096)")
    return "\n".join(lines) + "\n"


# =============================================================================================
# (e) image_chat.anthropic.jsonl
# =============================================================================================


def build_image_chat() -> list[dict]:
    ids = Ids("image_chat")
    tid = ids.toolu()
    notes = ("Design review - landing page (Tue)\n\n- Hero: keep the sky gradient, but the horizon band feels heavy; "
             "try 20% lighter.\n- Sidebar: 240 px is fine on desktop; collapse below 900 px.\n- Typography: body 16/24, "
             "headings 600 weight.\n- Colours: primary #3A6EA5, error banner #FDE6E6 with dark red text.\n- Empty states: "
             "add an illustration for 'no records yet'.\n- Accessibility: check focus outlines on the nav links.\n\n"
             "Action items: Anna - gradient tweak; Sam - responsive sidebar; Wei - empty state copy.\n")
    return [
        {"role": "system", "content": "You are a helpful assistant that can see images and take screenshots of the local dev server."},
        {"role": "user", "content": [
            {"type": "text", "text": "Here's the background image for the landing page. Does the horizon band look too dark to you?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(gradient_png())}}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "The gradient itself is smooth; the horizon band is quite dark against the light sky. Let me see it on the page."},
            {"type": "tool_use", "id": tid, "name": "screenshot", "input": {"url": "http://localhost:3000/", "width": 1280, "height": 800}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": [
            {"type": "text", "text": "Screenshot of http://localhost:3000/ (1280x800)"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(screenshot_png())}}]}]},
        {"role": "assistant", "content": [{"type": "text", "text": "On the page the background is hidden behind the sidebar and the red error "
                                           "banner at the top: the page shows an error state, so the image is not rendered at all. Fix the error first."}]},
        {"role": "user", "content": [
            {"type": "text", "text": "Right, the banner is from the failing API call. Here are my notes from the design review - anything I missed?"},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": notes}, "title": "design-review-notes.txt"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Your notes cover layout and colour. Missing: contrast of the header text "
                                           "on the dark bar, and what the page shows while the API call is pending."}]},
    ]


# =============================================================================================
# (f) codex_rollout.jsonl
# =============================================================================================

CODEX_CWD = "/home/dev/ledger"
AGENTS_MD = """# Repository guidelines

- Python 3.11, run `make test` (pytest) and `make lint` (ruff) before finishing.
- Keep functions small; type-annotate public functions.
- Never commit secrets; config comes from environment variables.
- Docs live in docs/; the Russian user guide is docs/ru/ and must stay in sync with docs/en/."""


def build_codex() -> list[dict]:
    ids = Ids("codex_rollout")
    clock = Clock("2026-03-16T10:04:11", "codex_rollout")
    r = Random("ctxfit-sample:codex_rollout")
    recs: list[dict] = []
    totals = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0, "total_tokens": 0}
    ctx = [9000]
    sid = ids.uuid7ish()
    start = clock.tick()

    def rec(kind: str, payload: dict) -> None:
        recs.append({"timestamp": clock.tick(0.05, 1.5), "type": kind, "payload": payload})

    def item(payload: dict) -> None:
        rec("response_item", payload)
        ctx[0] += seed_tokens(_codex_texts(payload))

    def token_count() -> None:
        last = {"input_tokens": ctx[0], "cached_input_tokens": int(ctx[0] * 0.9) // 128 * 128,
                "output_tokens": r.randint(40, 900), "reasoning_output_tokens": r.randint(0, 600)}
        last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
        for k in totals:
            totals[k] += last[k]
        rec("event_msg", {"type": "token_count", "info": {"total_token_usage": dict(totals), "last_token_usage": last,
                                                           "model_context_window": 272000},
                          "rate_limits": {"primary": {"used_percent": round(1 + len(recs) / 40, 1), "window_minutes": 300, "resets_in_seconds": 14211},
                                          "secondary": {"used_percent": 3.0, "window_minutes": 10080, "resets_in_seconds": 501112}}})

    def user(msg: str) -> None:
        rec("turn_context", {"cwd": CODEX_CWD, "approval_policy": "on-request",
                             "sandbox_policy": {"mode": "workspace-write", "network_access": False, "exclude_tmpdir_env_var": False, "exclude_slash_tmp": False},
                             "model": "gpt-5-codex", "effort": "medium", "summary": "auto"})
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": msg}]})
        rec("event_msg", {"type": "user_message", "message": msg, "images": []})

    def reason(summary: str) -> None:
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}], "content": None,
              "encrypted_content": ids.encrypted()})
        rec("event_msg", {"type": "agent_reasoning", "text": summary})

    def shell(command: str, output: str, exit_code: int = 0, timeout_ms: int | None = None) -> None:
        cid = ids.call()
        args = {"command": ["bash", "-lc", command], "workdir": CODEX_CWD}
        if timeout_ms:
            args["timeout_ms"] = timeout_ms
        item({"type": "function_call", "name": "shell", "arguments": orjson.dumps(args).decode(), "call_id": cid})
        out = {"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": round(r.uniform(0.01, 3.5), 1)}}
        item({"type": "function_call_output", "call_id": cid, "output": orjson.dumps(out).decode()})
        token_count()

    patches: list[tuple[str, list[str]]] = []

    def patch(path: str, before: list[str], minus: str, plus: list[str], after: list[str]) -> None:
        hunk = [" " + x for x in before] + ["-" + minus] + ["+" + x for x in plus] + [" " + x for x in after]
        patches.append((path, hunk))
        cid = ids.call()
        body = f"*** Begin Patch\n*** Update File: {path}\n@@\n" + "\n".join(hunk) + "\n*** End Patch"
        item({"type": "function_call", "name": "shell", "arguments": orjson.dumps({"command": ["apply_patch", body], "workdir": CODEX_CWD}).decode(), "call_id": cid})
        out = {"output": f"Success. Updated the following files:\nM {path}\n", "metadata": {"exit_code": 0, "duration_seconds": 0.0}}
        item({"type": "function_call_output", "call_id": cid, "output": orjson.dumps(out).decode()})
        token_count()

    def plan(steps: list[tuple[str, str]]) -> None:
        cid = ids.call()
        item({"type": "function_call", "name": "update_plan",
              "arguments": orjson.dumps({"plan": [{"step": s, "status": st} for s, st in steps]}).decode(), "call_id": cid})
        item({"type": "function_call_output", "call_id": cid, "output": "Plan updated"})

    def answer(msg: str) -> None:
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": msg}]})
        rec("event_msg", {"type": "agent_message", "message": msg})
        token_count()

    seq = [0]

    def gen(kind: str, n: int, /, **kw) -> str:
        seq[0] += 1
        return text(kind, n, f"codex-{seq[0]}", **kw)

    def sed(path: str, n: int) -> str:
        body = gen("py", n)
        lines = body.split("\n")
        return "\n".join(lines[:250]) + "\n"

    recs.append({"timestamp": start, "type": "session_meta", "payload": {
        "id": sid, "timestamp": start, "cwd": CODEX_CWD, "originator": "codex_cli_rs", "cli_version": "0.46.0",
        "instructions": None, "source": "cli", "model_provider": "openai",
        "git": {"commit_hash": ids.hexstr(40), "branch": "main", "repository_url": "git@github.com:example/ledger.git"}}})
    item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"<user_instructions>\n\n{AGENTS_MD}\n\n</user_instructions>"}]})
    item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": (
        f"<environment_context>\n  <cwd>{CODEX_CWD}</cwd>\n  <approval_policy>on-request</approval_policy>\n"
        "  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n  <shell>bash</shell>\n</environment_context>")}]})

    # Turn 1: failing tests.
    user("The nightly build is red: `make test` fails in the ledger import tests. Find the cause and fix it.")
    rec("event_msg", {"type": "token_count", "info": None, "rate_limits": None})
    reason("**Exploring the repository**\n\nI'll list the files and run the failing tests to see the actual error.")
    shell("ls -la", gen("sh", 2000, kind="ls"))
    shell("make test", gen("sh", 12000, kind="pytest"), exit_code=2, timeout_ms=600000)
    plan([("Reproduce the failing import tests", "completed"), ("Find the root cause in ledger/importer.py", "in_progress"),
          ("Fix and re-run the suite", "pending")])
    reason("**Reading the importer**\n\nThe failures are in test_import*. Reading the importer and its tests.")
    shell("sed -n '1,250p' ledger/importer.py", sed("ledger/importer.py", 12000))
    shell("sed -n '250,500p' ledger/importer.py", sed("ledger/importer.py", 12000))
    shell("sed -n '1,250p' tests/test_importer.py", sed("tests/test_importer.py", 9000))
    shell("rg -n \"def \" ledger", gen("sh", 8000, kind="grep"))
    shell("sed -n '1,250p' ledger/parsing.py", sed("ledger/parsing.py", 11000))
    reason("**Identifying the bug**\n\nThe CSV parser strips a UTF-8 BOM only for the first field, so files exported from the bank with a BOM "
           "produce a header named '\\ufeffdate' and every row is rejected.")
    patch("ledger/parsing.py", ["    reader = csv.reader(fh, dialect=dialect)"], "    header = next(reader)",
          ["    header = [h.lstrip(\"\\ufeff\") for h in next(reader)]"],
          ["    if header[:1] != [\"date\"]:", "        raise ValueError(f\"unexpected header: {header!r}\")"])
    shell("make test", gen("sh", 6000, kind="pytest"), timeout_ms=600000)
    answer("Fixed: bank exports start with a UTF-8 BOM, and `parse_csv` compared the first header to `date` without stripping it, "
           "so every row was rejected. The header is now BOM-stripped in `ledger/parsing.py`; `make test` passes.")

    # Turn 2: docs in Russian must stay in sync.
    user("AGENTS.md says the Russian guide must stay in sync. Does docs/ru mention the BOM handling? Update it if not, and the English one too.")
    reason("**Checking both guides**\n\nRead docs/en/import.md and docs/ru/import.md and compare the sections on CSV import.")
    shell("ls -la docs/en docs/ru", gen("sh", 1800, kind="ls"))
    shell("cat docs/en/import.md", gen("md", 10000, project="ledger"))
    shell("cat docs/ru/import.md", gen("md", 12000, lang="ru", project="ledger"))
    shell("rg -n -i 'bom|byte order' docs", "", exit_code=1)
    patch("docs/en/import.md", [""], "## CSV files",
          ["## CSV files", "", "Files may start with a UTF-8 byte order mark (BOM); it is ignored."], [""])
    patch("docs/ru/import.md", [""], "## Файлы CSV",
          ["## Файлы CSV", "", "Файл может начинаться с метки порядка байтов UTF-8 (BOM) — она игнорируется."], [""])
    answer("Neither guide mentioned it. Added one sentence to the CSV section of both `docs/en/import.md` and `docs/ru/import.md` "
           "(BOM is accepted and ignored).")

    # Turn 3: history and performance.
    user("The import of the 2025 archive takes minutes. Look at the history of importer.py and profile it.")
    reason("**Looking at history and profiling**\n\nCheck recent commits touching the importer, then run the profiler on the sample archive.")
    shell("git log -n 40 -- ledger/importer.py", gen("sh", 12000, kind="git_log"))
    shell("python -m cProfile -s cumtime -m ledger.importer samples/archive_2025.csv | head -n 60", profile_output(r))
    shell("sed -n '1,250p' ledger/storage.py", sed("ledger/storage.py", 12000))
    shell("sed -n '1,250p' ledger/cache.py", sed("ledger/cache.py", 10000))
    shell("rg -n 'save_row|_connect' ledger tests", gen("sh", 4000, kind="grep"))
    shell("sed -n '1,250p' ledger/db.py", sed("ledger/db.py", 12000))
    shell("sed -n '1,250p' tests/test_storage.py", sed("tests/test_storage.py", 12000))
    reason("**Finding the hot spot**\n\nEach row opens a new SQLite connection in `storage.save_row`; batching the inserts in one "
           "transaction should remove most of the time.")
    patch("ledger/storage.py", ["    def save_row(self, row: Row) -> None:"], "        conn = sqlite3.connect(self.path)",
          ["        conn = self._conn"], ["        conn.execute(INSERT_ROW, row.as_tuple())"])
    shell("python -m ledger.importer samples/archive_2025.csv --timing", gen("json", 4000, kind="metrics"))
    shell("make test", gen("sh", 6000, kind="pytest"), timeout_ms=600000)
    answer("The slowdown came from commit \"Cache record results per session\" which made `save_row` open a new SQLite connection "
           "per row. It now reuses one connection and commits once per batch; the 2025 archive imports in about 4 s instead of "
           "several minutes. Tests pass.")

    # Turn 4: review everything.
    user("Great. Run lint and the full suite once more, show me git status and a summary I can paste into the PR.")
    shell("make lint", "ruff check .\nAll checks passed!\nruff format --check .\n57 files already formatted\n")
    shell("make test", gen("sh", 12000, kind="pytest"), timeout_ms=600000)
    shell("git status", gen("sh", 1500, kind="git_status"))
    shell("git diff", diff_output(r, patches))
    shell("pip list", gen("sh", 2500, kind="pip_list"))
    shell("cat ledger/config.example.json", gen("json", 6000, kind="rows"))
    shell("sed -n '1,250p' ledger/cli.py", sed("ledger/cli.py", 12000))
    shell("sed -n '1,250p' ledger/report.py", sed("ledger/report.py", 12000))
    answer("Lint and tests are clean. PR summary:\n\n- Strip the UTF-8 BOM from CSV headers (bank exports failed to import).\n"
           "- Document BOM handling in the English and Russian import guides.\n- Reuse one SQLite connection per import and "
           "commit per batch (2025 archive: minutes -> ~4 s).")
    return recs


def diff_output(r: Random, patches: list[tuple[str, list[str]]]) -> str:
    """`git diff` of the patches applied in the session."""
    out = []
    for path, hunk in patches:
        at = r.randint(20, 300)
        old = sum(1 for h in hunk if h[0] in " -")
        new = sum(1 for h in hunk if h[0] in " +")
        out += [f"diff --git a/{path} b/{path}", f"index {r.getrandbits(28):07x}..{r.getrandbits(28):07x} 100644",
                f"--- a/{path}", f"+++ b/{path}", f"@@ -{at},{old} +{at},{new} @@"] + hunk
    return "\n".join(out) + "\n"


def profile_output(r: Random) -> str:
    """`python -m cProfile -s cumtime` style output."""
    calls = r.randint(2_000_000, 9_000_000)
    lines = [f"         {calls} function calls ({calls - r.randint(1000, 90000)} primitive calls) in 187.412 seconds", "",
             "   Ordered by: cumulative time", "",
             "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)"]
    cum = 187.412
    funcs = [f"{m}.py:{r.randint(10, 400)}({f})" for m, f in (
        ("importer", "main"), ("importer", "import_file"), ("storage", "save_row"), ("storage", "_connect"))]
    funcs.append("{built-in method _sqlite3.connect}")
    funcs += [f"{m}.py:{r.randint(10, 400)}({f})" for m, f in (
        ("parsing", "parse_csv"), ("parsing", "parse_row"), ("cache", "get"), ("csv", "__next__"),
        ("decimal", "__new__"), ("storage", "_commit"), ("re", "match"), ("cache", "put"))]
    for i, fn in enumerate(funcs + [f"{r.choice(tg.PY_NOUNS)}.py:{r.randint(10, 300)}({r.choice(tg.PY_VERBS)}_{r.choice(tg.PY_NOUNS)})" for _ in range(45)]):
        n = 1 if i < 2 else r.randint(1, 250_000)
        tot = round(cum * r.uniform(0.01, 0.3), 3)
        lines.append(f"{n:>9} {tot:>8.3f} {tot / n:>8.3f} {cum:>8.3f} {cum / n:>8.3f} {fn}")
        cum = round(cum * r.uniform(0.55, 0.98), 3)
    return "\n".join(lines) + "\n"


def _codex_texts(payload: dict) -> list[str]:
    t = payload.get("type")
    if t == "message":
        return [c.get("text", "") for c in payload["content"]]
    if t == "reasoning":
        return [s["text"] for s in payload.get("summary", [])]
    if t == "function_call":
        return [payload["name"], payload["arguments"]]
    if t == "function_call_output":
        return [payload["output"]]
    return []


# =============================================================================================
# (g) request.anthropic.json
# =============================================================================================


def build_request() -> dict:
    ids = Ids("request")
    t1, t2, t3 = ids.toolu(), ids.toolu(), ids.toolu()
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": "You are a helpful assistant that answers questions about the files in the user's project. Use the tools to read files before answering.",
        "tools": [
            {"name": "read_file", "description": "Read a UTF-8 text file from the project and return its contents.",
             "input_schema": {"type": "object", "properties": {"path": {"type": "string", "description": "Path relative to the project root."}},
                              "required": ["path"]}},
            {"name": "list_dir", "description": "List the entries of a directory in the project.",
             "input_schema": {"type": "object", "properties": {"path": {"type": "string", "description": "Directory path relative to the project root."}},
                              "required": ["path"]}},
        ],
        "messages": [
            {"role": "user", "content": "What does the config loader do when the config file is missing?"},
            {"role": "assistant", "content": [{"type": "text", "text": "Let me find the loader."},
                                              {"type": "tool_use", "id": t1, "name": "list_dir", "input": {"path": "src/app"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": t1,
                                          "content": "__init__.py\ncli.py\nconfig.py\nstorage.py\nutils.py"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": t2, "name": "read_file", "input": {"path": "src/app/config.py"}},
                                              {"type": "tool_use", "id": t3, "name": "read_file", "input": {"path": "src/app/utils.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": t2, "content": text("py", 1800, "request-config")},
                                         {"type": "tool_result", "tool_use_id": t3, "content": text("py", 1200, "request-utils")}]},
            {"role": "assistant", "content": [{"type": "text", "text": "When the file is missing, the loader logs a warning (\"does not exist, using defaults\") and returns an empty dict, so the defaults apply."}]},
            {"role": "user", "content": "Thanks. And in Russian, briefly?"},
        ],
    }


# =============================================================================================
# Estimates and checks
# =============================================================================================

_CJK = re.compile("[\u1100-\u11ff\u2e80-\u2fff\u3000-\u9fff\uac00-\ud7ff\uf900-\ufaff\uff00-\uffff"
                  "\U0001b000-\U0001bfff\U00020000-\U0003ffff]")


def script_counts(s: str) -> tuple[int, int, int]:
    """(ascii, cjk, other) characters — the DESIGN §3 classes."""
    if s.isascii():
        return len(s), 0, 0
    a = len(s.encode("ascii", "ignore"))
    c = len(s) - len(_CJK.sub("", s))
    return a, c, len(s) - a - c


def seed_tokens(strings) -> int:
    """Seed estimate of text: ceil(ascii/4) + cjk + ceil(other/2), over all the strings summed."""
    a = c = o = 0
    for s in strings:
        x, y, z = script_counts(s)
        a, c, o = a + x, c + y, o + z
    return -(-a // 4) + c + -(-o // 2)


def anthropic_texts(messages: list[dict], system=None, tools=None) -> list[str]:
    out = []
    if system is not None:
        out += [system] if isinstance(system, str) else _flatten(system)
    if tools:
        out.append(orjson.dumps(tools).decode())
    for m in messages:
        c = m["content"]
        out += [c] if isinstance(c, str) else _flatten(c)
    return out


def openai_texts(messages: list[dict]) -> list[str]:
    out = []
    for m in messages:
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out += [p["text"] for p in c if p.get("type") == "text"]
        for tc in m.get("tool_calls") or []:
            out += [tc["function"]["name"], tc["function"]["arguments"]]
    return out


def check_anthropic(messages: list[dict], strict_results: bool = True) -> None:
    """Roles alternate; each assistant tool_use is answered, in order, by the next user message."""
    roles = [m["role"] for m in messages]
    assert roles[0] == "user", roles[0]
    assert all(a != b for a, b in zip(roles, roles[1:])), "roles must alternate"
    seen: set[str] = set()
    pending: list[str] = []
    for m in messages:
        blocks = m["content"] if isinstance(m["content"], list) else []
        results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
        assert results == pending, f"results {results} do not answer calls {pending}"
        if results and strict_results:
            assert all(b.get("type") == "tool_result" for b in blocks)
        calls = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        assert not (set(calls) & seen), "duplicate tool_use id"
        seen.update(calls)
        pending = calls
    assert not pending, "last tool calls unanswered"


def check_openai(messages: list[dict]) -> None:
    pending: list[str] = []
    seen: set[str] = set()
    for m in messages:
        if m["role"] == "tool":
            assert pending and m["tool_call_id"] == pending.pop(0), "tool result out of order or without a call"
            continue
        assert not pending, "tool calls unanswered"
        ids_ = [tc["id"] for tc in m.get("tool_calls") or []]
        assert not (set(ids_) & seen)
        seen.update(ids_)
        pending = ids_
    assert not pending


def check_claude_code(records: list[dict]) -> list[dict]:
    """Each tool_use has exactly one later tool_result and vice versa; parent chain is intact."""
    uuids: set[str] = set()
    calls: dict[str, int] = {}
    answered: set[str] = set()
    messages = []
    for i, rec in enumerate(records):
        if "uuid" in rec:
            assert rec["parentUuid"] is None or rec["parentUuid"] in uuids, "broken parentUuid chain"
            uuids.add(rec["uuid"])
        if rec.get("type") not in ("user", "assistant"):
            continue
        messages.append(rec["message"])
        content = rec["message"]["content"]
        if rec["type"] == "assistant":
            assert len(content) == 1, "Claude Code writes one block per assistant record"
        for b in content if isinstance(content, list) else []:
            if b.get("type") == "tool_use":
                assert b["id"] not in calls
                calls[b["id"]] = i
            elif b.get("type") == "tool_result":
                assert b["tool_use_id"] in calls and b["tool_use_id"] not in answered
                answered.add(b["tool_use_id"])
    assert answered == set(calls), "unanswered tool calls"
    return messages


def check_codex(records: list[dict]) -> list[dict]:
    calls: set[str] = set()
    answered: set[str] = set()
    items = []
    for rec in records:
        if rec["type"] != "response_item":
            continue
        p = rec["payload"]
        items.append(p)
        if p["type"] == "function_call":
            assert p["call_id"] not in calls
            calls.add(p["call_id"])
            orjson.loads(p["arguments"])
        elif p["type"] == "function_call_output":
            assert p["call_id"] in calls and p["call_id"] not in answered
            answered.add(p["call_id"])
    assert answered == calls
    return items


def check_png(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", data[16:24])
    idat_len = struct.unpack(">I", data[33:37])[0]
    raw = zlib.decompress(data[41:41 + idat_len])
    assert len(raw) == h * (1 + 3 * w)
    return w, h


def check_file(path: Path) -> tuple[int, int]:
    """Parse and check one sample; returns (lines, seed-estimated tokens)."""
    data = path.read_bytes()
    assert data.endswith(b"\n") and b"\r" not in data
    if path.suffix == ".json":
        req = orjson.loads(data)
        check_anthropic(req["messages"])
        return data.count(b"\n"), seed_tokens(anthropic_texts(req["messages"], req.get("system"), req.get("tools")))
    records = [orjson.loads(line) for line in data.split(b"\n")[:-1]]
    name = path.name
    if name.endswith(".anthropic.jsonl"):
        system = records[0]["content"] if records[0]["role"] == "system" else None
        messages = records[1:] if system is not None else records
        check_anthropic(messages, strict_results=True)
        for m in messages:
            for b in m["content"] if isinstance(m["content"], list) else []:
                for blk in [b] + (b["content"] if b.get("type") == "tool_result" and isinstance(b["content"], list) else []):
                    if blk.get("type") == "image":
                        check_png(base64.b64decode(blk["source"]["data"]))
        tokens = seed_tokens(anthropic_texts(messages, system))
    elif name.endswith(".openai.jsonl"):
        check_openai(records)
        tokens = seed_tokens(openai_texts(records))
    elif name == "claude_code_session.jsonl":
        tokens = seed_tokens(anthropic_texts(check_claude_code(records)))
    elif name == "codex_rollout.jsonl":
        tokens = seed_tokens(s for p in check_codex(records) for s in _codex_texts(p))
    else:
        raise AssertionError(f"unknown sample {name}")
    return len(records), tokens


# =============================================================================================
# Main
# =============================================================================================

SAMPLES = {
    "subagent_reader.anthropic.jsonl": lambda: jsonl(build_subagent_reader()),
    "multiturn_chat.anthropic.jsonl": lambda: jsonl(build_multiturn_chat()),
    "claude_code_session.jsonl": lambda: jsonl(build_claude_code()),
    "openai_agent.openai.jsonl": lambda: jsonl(build_openai_agent()),
    "image_chat.anthropic.jsonl": lambda: jsonl(build_image_chat()),
    "codex_rollout.jsonl": lambda: jsonl(build_codex()),
    "request.anthropic.json": lambda: orjson.dumps(build_request(), option=orjson.OPT_INDENT_2) + b"\n",
}
#: Samples that must hold at least 50,000 seed-estimated tokens.
LARGE = ("subagent_reader.anthropic.jsonl", "multiturn_chat.anthropic.jsonl", "claude_code_session.jsonl",
         "openai_agent.openai.jsonl", "codex_rollout.jsonl")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE, help="output directory (default: next to this script)")
    ap.add_argument("--quiet", action="store_true", help="do not print the summary table")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, build in SAMPLES.items():
        path = args.out / name
        path.write_bytes(build())
        lines, tokens = check_file(path)
        if name in LARGE:
            assert tokens >= 50_000, f"{name}: only {tokens} estimated tokens"
        rows.append((name, path.stat().st_size, lines, tokens))
    if not args.quiet:
        print(f"{'file':<36} {'bytes':>10} {'lines':>6} {'seed tokens':>12}")
        for name, size, lines, tokens in rows:
            print(f"{name:<36} {size:>10,} {lines:>6} {tokens:>12,}")
        print(f"all samples parse; every tool call has exactly one result. written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
