"""`ctxfit sessions` against ccusage on the same Claude config folder: first run, every later run,
peak memory (issue #36).

    python bench/sessions_vs_ccusage.py [--runs 9] [--generated-logs 40] [--log-mb 5] [--editable] [--no-doc]

Two folders, each laid out as Claude Code keeps its logs (`<config>/projects/<dir>/<session>.jsonl`):

- the shared real Claude Code logs (`../shared/realworld/claude-code`, one project folder each);
- a year of sessions, generated: `--generated-logs` Claude Code logs of `--log-mb` MB each (one
  log made by `bench/big_file.py`'s generator, with its model and every call's usage recorded,
  then written again under new session, message and request ids for each copy, so that neither
  tool takes one for a copy of another).

On each, interleaved round by round (so that other work on this shared machine hits every
command alike), each a process of its own:

- `ccusage session --offline --json`: ccusage 20.0.24 as npm installs it (`ccusage`, its Node
  launcher that runs the native linux-x64 binary), with `HOME` and `CLAUDE_CONFIG_DIR` pointed at
  the folder; and the native binary alone, without the launcher, for the record;
- `ctxfit sessions --json -q PROJECTS` cold: its cache folder emptied before the run (every log
  read, as the first run after an install or a change of ctxfit);
- `ctxfit sessions --json -q PROJECTS` warm: the cache holds every log, as on every later run;
- `ctxfit sessions --json -q --no-cache PROJECTS`: every log read and nothing kept (today's path).

Each round runs the commands in another order (rotated by one), so that no command always
follows the same one (a command run right after ccusage's Node launcher, say, was the slower
for it). Wall time, CPU (user + system of the process and its workers, from `wait4`) and peak
RSS (the largest process) are medians of the rounds; the load average is printed before and after.

ctxfit is measured as a user runs it: installed (`pip install --no-deps` of this checkout into
a throwaway venv whose `.pth` file names this interpreter's site-packages, so that it runs the
very same dependencies), not as this checkout's editable install, whose finder (a `.pth` file
that imports pathlib, re, fnmatch and urllib.parse) costs every start ~15-25 ms that a normal
install does not have (`python -X importtime`: `__editable___ctxfit_0_1_0_finder`).
`--editable`: measure the checkout as the tests run it (`PYTHONPATH`, this interpreter) instead.
`CCUSAGE_DIR`: a folder where `npm install ccusage@20.0.24` was run; else it is installed into a
temporary one (the npm registry must be reachable). Bytecode is written to a private
`PYTHONPYCACHEPREFIX` (as on any install after its first run).

Targets (issue #36): first run ≤ 2× ccusage, later runs ≤ 0.8× ccusage, peak ≤ 200 MB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import _common as c
from ccusage_compare import CCUSAGE, install_ccusage

REAL = c.ROOT.parent / "shared" / "realworld" / "claude-code"
FIRST_RATIO, LATER_RATIO, PEAK_MB = 2.0, 0.8, 200


def real_folder(config: Path) -> int:
    """The shared real Claude Code logs as a Claude config folder; their bytes."""
    total = 0
    for log in sorted(REAL.glob("*.jsonl")):
        project = config / "projects" / f"-realworld-{log.stem}"
        project.mkdir(parents=True)
        total += Path(shutil.copy(log, project / log.name)).stat().st_size
    return total


def generated_folder(config: Path, logs: int, log_mb: float, scratch: Path) -> int:
    """`logs` generated Claude Code logs of `log_mb` MB, each its own session; their bytes."""
    import big_file

    one = scratch / "one.jsonl"
    big_file.generate_format("claude-code", str(one), int(log_mb * 1e6))
    data = one.read_bytes()
    total = 0
    for k in range(logs):
        session = f"{k + 1:08x}-0000-4000-8000-"
        copy = (data.replace(b"00000000-0000-4000-8000-", session.encode())
                .replace(b'"msg_', f'"msg_{k:04d}_'.encode()).replace(b'"req_', f'"req_{k:04d}_'.encode()))
        project = config / "projects" / f"-work-project-{k % 7}"
        project.mkdir(parents=True, exist_ok=True)
        (project / f"{session}000000000000.jsonl").write_bytes(copy)
        total += len(copy)
    one.unlink()
    return total


def run(argv: list[str], env: dict) -> tuple[float, float, int, bytes]:
    """(wall s, CPU s, peak RSS bytes, stdout) of one run; exit 0, or 5 (some log unreadable)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        stdout = out.read()
    if os.waitstatus_to_exitcode(status) not in (0, 5):  # (the floor's scripts print nothing)
        raise RuntimeError(f"{' '.join(argv)} exited {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, stdout


def installed(scratch: Path) -> str:
    """The Python of a throwaway venv where this checkout is installed as a user installs it (not
    editable), its dependencies those of this interpreter (a `.pth` file names its site-packages)."""
    import site

    venv = scratch / "venv"
    subprocess.run([c.PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([c.PYTHON, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(c.ROOT)],
                   check=True, capture_output=True, timeout=600)
    packages = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              check=True, capture_output=True, text=True).stdout.strip()
    Path(packages, "shared-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return str(python)


def measure(config: Path, ccusage: Path, runs: int, scratch: Path, python: str | None) -> tuple[dict, dict]:
    """Medians of (wall, CPU, peak) per command, and the sessions each lists. `python`: the
    installed ctxfit's interpreter (None: this checkout, on `PYTHONPATH`)."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    base["PYTHONPYCACHEPREFIX"] = str(scratch / "bytecode")
    theirs = {**base, "HOME": str(config.parent), "CLAUDE_CONFIG_DIR": str(config), "NO_COLOR": "1"}
    native = ccusage / "node_modules" / "@ccusage" / "ccusage-linux-x64" / "bin" / "ccusage"
    cache = scratch / "cache"
    ours = {**base, "XDG_CACHE_HOME": str(cache), **({} if python else {"PYTHONPATH": str(c.ROOT)})}
    ctxfit = [python or c.PYTHON, "-m", "ctxfit_cli", "sessions", "--json", "-q", str(config / "projects")]
    commands: dict[str, tuple[list[str], dict]] = {
        "ccusage session --offline --json": ([str(ccusage / "node_modules" / ".bin" / "ccusage"), "session",
                                              "--offline", "--json"], theirs),
        "ctxfit sessions, first run (cache empty)": (ctxfit, ours),
        "ctxfit sessions, later run (cache warm)": (ctxfit, ours),
        "ctxfit sessions --no-cache": ([*ctxfit[:-1], "--no-cache", ctxfit[-1]], ours),
    }
    # The floor any Python `sessions` has on these files (bench/_floor.py): the interpreter, every
    # line parsed, every message's text measured once (what the view's fitting columns need).
    floor = [python or c.PYTHON, str(Path(__file__).with_name("_floor.py"))]
    for mode, what in (("start", "Python starting"), ("parse", "+ parsing every line"),
                       ("measure", "+ measuring every text once")):
        commands[f"floor: {what}"] = ([*floor, mode, str(config / "projects")], ours)
    if native.exists():
        commands["ccusage's native binary alone (no Node launcher)"] = (
            [str(native), "session", "--offline", "--json"], theirs)
    for argv, env in commands.values():  # warm the page cache, write the bytecode, fill the cache
        run(argv, env)
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in commands}
    listed: dict[str, int] = {}
    names = list(commands)
    for k in range(runs):
        for name in names[k % len(names) :] + names[: k % len(names)]:
            argv, env = commands[name]
            if "first run" in name:
                shutil.rmtree(cache / "ctxfit" / "summaries", ignore_errors=True)
            wall, cpu, peak, stdout = run(argv, env)
            samples[name].append((wall, cpu, peak))
            listed[name] = _sessions(stdout)
    medians = {name: tuple(c.median([s[k] for s in values]) for k in range(3)) for name, values in samples.items()}
    return medians, listed


def _sessions(stdout: bytes) -> int | str:
    import json

    if not stdout:
        return "—"
    document = json.loads(stdout)
    return len(document.get("sessions") or document.get("session") or [])


def report(title: str, size: int, medians: dict, listed: dict) -> tuple[str, bool]:
    them = medians["ccusage session --offline --json"]
    rows = [[name, c.fmt_s(wall), c.fmt_s(cpu), c.fmt_mb(peak), f"{wall / them[0]:.2f}×", listed[name]]
            for name, (wall, cpu, peak) in medians.items()]
    first = medians["ctxfit sessions, first run (cache empty)"]
    later = medians["ctxfit sessions, later run (cache warm)"]
    peak = max(v[2] for n, v in medians.items() if n.startswith("ctxfit"))
    ok = first[0] <= FIRST_RATIO * them[0] and later[0] <= LATER_RATIO * them[0] and peak <= PEAK_MB * 1e6
    floor = medians.get("floor: + measuring every text once")
    below = f"; the floor of measuring every text once is {floor[0] / them[0]:.2f}× ccusage" if floor else ""
    verdict = (f"first run {first[0] / them[0]:.2f}× ccusage (target ≤ {FIRST_RATIO}×{below}), later runs "
               f"{later[0] / them[0]:.2f}× (target ≤ {LATER_RATIO}×), ctxfit's peak {c.fmt_mb(peak)} "
               f"(target ≤ {PEAK_MB} MB) → {c.verdict(ok)}")
    text = (f"### {title} ({c.fmt_mb(size)})\n\n"
            + c.table(["command", "median wall", "median CPU", "peak RSS", "wall ÷ ccusage", "sessions"], rows)
            + f"\n\n{verdict}")
    return text, ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--generated-logs", type=int, default=40)
    ap.add_argument("--log-mb", type=float, default=5.0)
    ap.add_argument("--editable", action="store_true",
                    help="measure this checkout on PYTHONPATH (its editable finder loaded), not installed")
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="ctxfit-vs-ccusage-"))
    try:
        if os.environ.get("CCUSAGE_DIR"):
            ccusage = Path(os.environ["CCUSAGE_DIR"])
        else:
            (scratch / "npm").mkdir()
            ccusage = install_ccusage(scratch / "npm")
        python = None if args.editable else installed(scratch)
        load_before = os.getloadavg()
        parts = []
        folders = [("real", "The shared real Claude Code logs", real_folder),
                   ("generated", f"{args.generated_logs} generated Claude Code logs of {args.log_mb:g} MB",
                    lambda config: generated_folder(config, args.generated_logs, args.log_mb, scratch))]
        for key, title, make in folders:
            config = scratch / key / "claude"
            size = make(config)
            medians, listed = measure(config, ccusage, args.runs, scratch / key, python)
            parts.append(report(title, size, medians, listed))
        load_after = os.getloadavg()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results = "\n\n".join(text for text, _ in parts)
    load = (f"Load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}; after: "
            f"{', '.join(f'{x:.2f}' for x in load_after)} ({os.cpu_count()} cores, shared with other work).")
    targets = (f"Targets (issue #36), on both folders: {c.verdict(all(ok for _, ok in parts))}. {load}")
    body = c.section(
        f"`ctxfit sessions` against ccusage ({CCUSAGE})",
        "Medians of interleaved runs of each command as its own process, on the same Claude config folder "
        "(bench/sessions_vs_ccusage.py), in another order each round. ctxfit "
        + ("as this checkout on PYTHONPATH (its editable install's finder loaded at every start)"
           if args.editable else "installed as a user installs it (pip install --no-deps of this checkout "
           "into a throwaway venv, no editable finder; the same dependencies)")
        + ". 'sessions' is how many each lists.",
        c.command_line(), results, targets)
    if not args.no_doc:
        c.write_section("sessions_vs_ccusage", body)
    print(body)


if __name__ == "__main__":
    main()
