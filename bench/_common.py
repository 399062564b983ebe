"""Shared helpers of the speed benchmarks: mixed-script text, timing, peak memory, the report.

Every benchmark script measures the things it compares side by side in one run, repeats each
measurement (interleaved, so that noise on the shared machine hits all of them alike) and reports
medians and ratios of medians. Each script writes its own section of docs/benchmarks.md between
`<!-- bench:NAME -->` markers; `bench/run_all.py` regenerates the whole file.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from random import Random
from typing import Callable, Sequence

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DOC = ROOT / "docs" / "benchmarks.md"
PYTHON = sys.executable
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# --- Mixed-script text ---------------------------------------------------------------------
#
# Small vocabularies of real-looking sentences per writing system; text is drawn from them at
# random (seeded, so every run makes the same text). The mix is what agent tool results look like
# in the failures of DESIGN §1: Russian and Chinese/Japanese prose, English, and source code.

RUSSIAN = [
    "Капитан долго стоял у окна и смотрел, как над рекой поднимается туман.",
    "Анна положила письмо на стол, но так и не решилась его открыть.",
    "В маленьком городе все знали друг друга, и новости расходились быстрее ветра.",
    "Старый смотритель маяка записывал в тетрадь каждое судно, проходившее мимо.",
    "Они шли вдоль забора молча, пока не показались огни станции.",
    "Николай Петрович отложил газету и налил себе чашку горячего чая.",
    "Дождь не прекращался третий день, и дорога к мельнице совсем размокла.",
    "Вечером в доме собрались гости, и бабушка достала старый медный самовар.",
    "Функция возвращает список файлов, отсортированный по дате изменения.",
    "Если параметр не задан, используется значение по умолчанию из конфигурации.",
]
CHINESE = [
    "船长在窗前站了很久，看着河面上慢慢升起的薄雾。",
    "她把信放在桌子上，却始终没有勇气打开它。",
    "在这个小城里，每个人都互相认识，消息传得比风还快。",
    "老灯塔看守人把每一艘经过的船都记在本子上。",
    "他们沿着围墙默默地走着，直到看见车站的灯光。",
    "雨已经下了三天，通往磨坊的路完全泥泞不堪。",
    "该函数返回按修改时间排序的文件列表。",
    "如果未指定参数，则使用配置文件中的默认值。",
]
JAPANESE = [
    "船長は窓辺に長いあいだ立ち、川の上に霧が立ちのぼるのを眺めていた。",
    "彼女は手紙を机の上に置いたが、どうしても開ける気になれなかった。",
    "小さな町では誰もが知り合いで、噂は風よりも早く広まった。",
    "雨は三日間降り続き、水車小屋への道はすっかりぬかるんでいた。",
    "この関数は更新日時の順に並べたファイルの一覧を返します。",
    "引数が指定されていない場合は、設定ファイルの既定値が使われます。",
]
ENGLISH = [
    "The captain stood at the window for a long time, watching the mist rise over the river.",
    "She put the letter on the table but could not bring herself to open it.",
    "In a small town everybody knew everybody, and news travelled faster than the wind.",
    "The old lighthouse keeper wrote down every ship that passed in his notebook.",
    "Returns the list of files sorted by modification time, newest first.",
    "If the parameter is not set, the default value from the configuration file is used.",
    "All 412 tests passed in 38.2 seconds; coverage is 91% across 57 modules.",
    "Warning: the cache directory is not writable, falling back to a temporary one.",
]
CODE = [
    "def load_config(path: str) -> dict:\n    with open(path, encoding=\"utf-8\") as f:\n        return json.load(f)\n",
    "for i, item in enumerate(items):\n    if item.size > limit:\n        raise ValueError(f\"item {i} is too large: {item.size}\")\n",
    "class Cache:\n    def __init__(self, capacity=1024):\n        self.capacity = capacity\n        self.data = {}\n",
    "    result = subprocess.run([\"git\", \"log\", \"--oneline\", \"-n\", \"20\"], capture_output=True, text=True)\n",
    "-rw-r--r-- 1 user user  48213 Mar  3 12:01 chapter_07.md\n-rw-r--r-- 1 user user  51022 Mar  3 12:02 chapter_08.md\n",
    "{\"id\": 1842, \"status\": \"ok\", \"items\": [{\"name\": \"alpha\", \"value\": 3.14}, {\"name\": \"beta\", \"value\": 2.71}]}\n",
]
_POOLS = [(RUSSIAN, " ", 0.35), (CHINESE, "", 0.2), (JAPANESE, "", 0.1), (ENGLISH, " ", 0.2), (CODE, "", 0.15)]


def mixed_text(n_chars: int, seed: int | str = 0) -> str:
    """About `n_chars` characters of mixed Russian / Chinese / Japanese / English / code text,
    in paragraphs of one writing system each (as in real documents and tool output)."""
    rng = Random(f"ctxfit-bench:{seed}")
    pools = [p for p, _, _ in _POOLS]
    seps = [s for _, s, _ in _POOLS]
    weights = [w for _, _, w in _POOLS]
    out: list[str] = []
    size = 0
    while size < n_chars:
        k = rng.choices(range(len(pools)), weights)[0]
        paragraph = seps[k].join(rng.choice(pools[k]) for _ in range(rng.randint(2, 8)))
        out.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(out)[:n_chars]


# --- Timing --------------------------------------------------------------------------------


def pieces(text: str, seed: int = 1) -> list[str]:
    """`text` cut into tool-result-sized strings of 2-20 KB (seeded, so always the same cut)."""
    rng = Random(seed)
    out, i = [], 0
    while i < len(text):
        n = rng.randint(2_000, 20_000)
        out.append(text[i:i + n])
        i += n
    return out


def clock(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def run_child(argv: list[str], stdout=subprocess.DEVNULL) -> tuple[float, int, int]:
    """Run a command to completion: (wall seconds, peak RSS in bytes, exit status).

    The peak RSS is the child's own (`wait4`), not the maximum over every child ever run.
    """
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    err = child.stderr.read().decode("utf-8", "replace")
    child.stderr.close()
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited with {child.returncode}:\n{err[-2000:]}")
    return elapsed, usage.ru_maxrss * 1024, child.returncode


# --- Reporting -----------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table (also readable as plain text on a terminal)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def verdict(ok: bool) -> str:
    return "**PASS**" if ok else "**FAIL**"


def fmt_s(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.1f} µs"


def fmt_mb(n_bytes: float) -> str:
    return f"{n_bytes / 1e6:,.0f} MB"


def machine() -> str:
    return (f"{os.cpu_count()} cores (nproc {len(os.sched_getaffinity(0))}), Python "
            f"{platform.python_version()} ({platform.python_implementation()}), {platform.system()} "
            f"{platform.release()}, {platform.machine()}")


def revision() -> str:
    """The commit measured, and whether the package had uncommitted changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "ctxfit_cli", "pyproject.toml"],
                               cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown revision"
    return f"commit {head}" + (" + uncommitted changes in ctxfit_cli/" if dirty else "")


def command_line() -> str:
    rel = Path(sys.argv[0]).resolve().relative_to(ROOT) if Path(sys.argv[0]).resolve().is_relative_to(ROOT) else sys.argv[0]
    return " ".join(["python", str(rel), *sys.argv[1:]])


INTRO = """# Speed benchmarks

Generated by `python bench/run_all.py`; each section is rewritten by its own script
(`python bench/NAME.py`), between its `bench:NAME` markers: do not edit those by hand (notes by
hand go outside them).

**Method.** The machine is shared and noisy, so nothing here is a timed test: every figure is the
**median** of several repetitions (≥ 5 for small things, ≥ 3 for the big-file ones), the things
compared are measured side by side in one run with their repetitions interleaved, and speed-ups
and slow-downs are **ratios of medians**. Big generated files live under /tmp and are deleted at
the end (unless `--keep`). Peak memory is the child process's own peak RSS (`wait4`).
"""


def header(date: str | None = None) -> str:
    date = date or _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    return f"{INTRO}\n**Last full run:** {date} · {revision()} · {machine()}.\n"


def write_section(name: str, body: str) -> None:
    """Replace (or append) this benchmark's section of docs/benchmarks.md."""
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n{body.rstrip()}\n{end}"
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else header()
    if start in text and end in text:
        before, rest = text.split(start, 1)
        _, after = rest.split(end, 1)
        text = before + block + after
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text, encoding="utf-8")


def section(title: str, what: str, command: str, results: str, targets: str) -> str:
    stamp = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    return (f"## {title}\n\n{what}\n\n**Command** (run {stamp}, {revision()}, {machine()}):\n\n"
            f"```\n{command}\n```\n\n{results}\n\n{targets}\n")


# --- Agent histories -----------------------------------------------------------------------


SYSTEM_LINE = (b'{"role":"system","content":"You are a careful research assistant. Read the files you are '
               b'asked to read with the read_file tool and report what they say, in the language of the request."}')


class HistoryMaker:
    """Anthropic JSON Lines histories of an agent: one instruction, then model calls.

    Every call is an assistant message with one `tool_use` answered by a user `tool_result` of
    `result_chars` characters of mixed text (drawn from a pool, so making big histories is fast).
    With `turn_every`, every that many calls the assistant answers in text and the person writes
    a new instruction (a multi-turn chat); that answer is a model call too.
    """

    def __init__(self, result_chars: tuple[int, int] = (700, 4_000), pool: int = 61, seed: int = 11):
        rng = Random(seed)
        import orjson

        self._dumps = orjson.dumps
        self.results = [orjson.dumps(mixed_text(rng.randint(*result_chars), seed=f"r{seed}:{i}")) for i in range(pool)]
        self.says = [orjson.dumps(mixed_text(rng.randint(30, 300), seed=f"s{seed}:{i}")) for i in range(17)]
        self.asks = [orjson.dumps(mixed_text(rng.randint(60, 600), seed=f"a{seed}:{i}")) for i in range(7)]

    def lines(self, calls: int, turn_every: int | None = None, system: bool = True) -> list[bytes]:
        """The history as lines (without newlines): a system prompt line (optional), the
        instruction, and exactly `calls` assistant messages; the last two lines are always a tool
        call and its result."""
        out = [SYSTEM_LINE] if system else []
        out.append(b'{"role":"user","content":' + self.asks[0] + b"}")
        made = 0
        while made < calls:
            if turn_every and made and made % turn_every == 0 and calls - made >= 2:
                out.append(b'{"role":"assistant","content":' + self.says[made % 17] + b"}")
                out.append(b'{"role":"user","content":' + self.asks[made % 7] + b"}")
                made += 1
                continue
            call_id = b"toolu_%010d" % made
            out.append(b'{"role":"assistant","content":[{"type":"text","text":' + self.says[made % 17]
                       + b'},{"type":"tool_use","id":"' + call_id
                       + b'","name":"read_file","input":{"path":"docs/part_%d.md"}}]}' % made)
            out.append(b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"' + call_id
                       + b'","content":' + self.results[(made * 7) % len(self.results)] + b"}]}")
            made += 1
        return out

    @staticmethod
    def read(data: bytes, name: str = "bench"):
        """Parse JSONL bytes into a materialized transcript (fresh messages, nothing memoized)."""
        import io

        from ctxfit_cli.formats import read_transcripts

        [transcript] = read_transcripts(name, io.BytesIO(data), "anthropic")
        return transcript.materialize()
