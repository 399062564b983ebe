"""The summary cache (issue #36): a file unchanged since the last run is not read again, and the
numbers are never other than a fresh read's, whatever state the cache is in."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from ctxfit_cli.fleet import summary_cache, work
from ctxfit_cli.fleet import sessions as view
from ctxfit_cli.fleet.combine import combine
from ctxfit_cli.fleet.discovery import expand
from ctxfit_cli.fleet.job import Job
from ctxfit_cli.fleet.local import run_files
from ctxfit_cli.replay.model_prices import load_prices

from conftest import REALWORLD, ROOT, needs_realworld

SESSIONS_JOB = Job("sessions", describe=True, cache=True)


def ctxfit(*args: str, cache: Path) -> tuple[int, bytes]:
    """`ctxfit ARGS` in its own process with `cache` as its cache folder: (exit code, stdout)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run([sys.executable, "-m", "ctxfit_cli", *args], capture_output=True, cwd=ROOT, env=env,
                          stdin=subprocess.DEVNULL, timeout=600)
    return done.returncode, done.stdout


def slow_rows(files: list[str], budget: int = 400_000) -> list[dict]:
    """The rows as the code before the cache made them: every file read, in this process."""
    job = SESSIONS_JOB._replace(cache=False, budget=budget)
    combined = combine(list(run_files(files, job, jobs=1)))
    table = load_prices(None)
    return view.sort_rows([view.session_row(k, budget=budget, prices=table) for k in combined.kept], "last")


def all_logs(tmp_path: Path) -> Path:
    """Every real log, copied into one folder (the readers cache what they return, errors too)."""
    folder = tmp_path / "logs"
    shutil.copytree(REALWORLD, folder, ignore=shutil.ignore_patterns("*.md"))
    for path in folder.rglob("*"):
        path.chmod(0o700 if path.is_dir() else 0o600)
    return folder


@needs_realworld
def test_sessions_on_every_real_log_is_the_same_cold_warm_without_cache_and_read_slowly(tmp_path):
    folder, cache = all_logs(tmp_path), tmp_path / "cache"
    cold = ctxfit("sessions", "--json", "-q", str(folder), cache=cache)
    assert any((cache / "ctxfit" / "summaries").iterdir())
    warm = ctxfit("sessions", "--json", "-q", str(folder), cache=cache)
    bypassed = ctxfit("sessions", "--json", "-q", "--no-cache", str(folder), cache=tmp_path / "unused")
    one_process = ctxfit("sessions", "--json", "-q", "--jobs", "1", str(folder), cache=cache)
    assert cold == warm == bypassed == one_process
    assert not (tmp_path / "unused").exists()  # --no-cache keeps nothing either
    document = orjson.loads(cold[1])
    expected = slow_rows(expand([str(folder)]))
    assert len(document["sessions"]) >= 10
    assert document["sessions"] == orjson.loads(orjson.dumps(expected))


@needs_realworld
def test_estimate_of_a_log_is_the_same_from_the_cache(tmp_path):
    log = tmp_path / "log.jsonl"
    shutil.copy(REALWORLD / "claude-code" / "spotter_4d5611e5_agent-a2898e3.jsonl", log)
    cache = tmp_path / "cache"
    first, second = (ctxfit("estimate", "--json", str(log), cache=cache) for _ in range(2))
    assert first == second == ctxfit("estimate", "--json", "--no-cache", str(log), cache=cache)
    assert first[0] == 0 and len(list((cache / "ctxfit" / "summaries").iterdir())) == 1


# --- what tells that a file changed -----------------------------------------------------------------


def two_turns(tmp_path: Path) -> Path:
    log = tmp_path / "chat.jsonl"
    log.write_bytes(b'{"role":"user","content":"Hello there"}\n{"role":"assistant","content":"Hi!"}\n')
    return log


def tokens(path: Path) -> int:
    [item] = work.run_file(str(path), Job("estimate", describe=False, cache=True)).units[0].items
    return item["report"].tokens


def test_a_file_that_grew_or_changed_is_read_again(tmp_path):
    log = two_turns(tmp_path)
    before = tokens(log)
    with log.open("ab") as stream:
        stream.write(b'{"role":"user","content":"' + b"more words " * 40 + b'"}\n')
    grown = tokens(log)
    assert grown > before
    # Changed in place, size and modification time kept: the digest of its last bytes tells.
    status = log.stat()
    data = log.read_bytes()
    log.write_bytes(data.replace(b"more words", b"MORE WORDS"))
    os.utime(log, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert tokens(log) == work.run_file(str(log), Job("estimate", describe=False)).units[0].items[0]["report"].tokens
    # Replaced by a shorter file.
    log.write_bytes(data[: data.index(b"\n") + 1])
    assert tokens(log) < before


def test_a_file_moved_elsewhere_or_named_otherwise_is_its_own_entry(tmp_path):
    log = two_turns(tmp_path)
    tokens(log)
    moved = tmp_path / "moved.jsonl"
    log.rename(moved)
    result = work.run_file(str(moved), Job("estimate", describe=False, cache=True))
    assert result.units[0].items[0]["report"].path == str(moved)  # not the old path's result


def test_the_options_that_change_a_result_are_part_of_its_key(tmp_path):
    log = str(two_turns(tmp_path))
    names = {summary_cache.entry_name("sessions", log, work._options(job)) for job in
             (SESSIONS_JOB, SESSIONS_JOB._replace(budget=1000), SESSIONS_JOB._replace(window=50_000),
              SESSIONS_JOB._replace(profile="seed"), SESSIONS_JOB._replace(fixed_tokens=10))}
    assert len(names) == 5
    # Whether a big file is spread over the cores, or the cache is asked at all, is not.
    assert work._options(SESSIONS_JOB) == work._options(SESSIONS_JOB._replace(split_big_files=False, cache=False))


# --- entries that are not whole and ours ------------------------------------------------------------


def entry_of(tmp_path: Path, log: Path, job: Job = SESSIONS_JOB) -> Path:
    return summary_cache.folder() / "summaries" / summary_cache.entry_name(job.command, str(log), work._options(job))


@pytest.mark.parametrize("spoil", ["truncated", "flipped", "empty", "foreign", "other identity", "not ours"])
def test_an_entry_not_whole_and_ours_is_ignored_and_written_again(tmp_path, spoil):
    log = two_turns(tmp_path)
    expected = work.run_file(str(log), SESSIONS_JOB._replace(cache=False))
    work.run_file(str(log), SESSIONS_JOB)
    entry = entry_of(tmp_path, log)
    good = entry.read_bytes()
    if spoil == "truncated":
        entry.write_bytes(good[: len(good) // 2])
    elif spoil == "flipped":
        entry.write_bytes(good[:-5] + bytes(b ^ 0xFF for b in good[-5:]))
    elif spoil == "empty":
        entry.write_bytes(b"")
    elif spoil == "foreign":
        entry.write_bytes(b"\x80\x04K\x01.")  # a pickle, but no entry of ours
    elif spoil == "other identity":  # whole, but written for the file as it was before
        now = summary_cache.identity(str(log))
        assert now is not None
        summary_cache.store(entry.name, now._replace(size=now.size + 1), work.stored(expected))
    else:  # whole and well formed, but its value is not a result (another version's layout)
        summary_cache.write(entry, (tuple(summary_cache.identity(str(log)) or ()), ("another", "layout")))
    again = work.run_file(str(log), SESSIONS_JOB)
    assert _plain(again) == _plain(expected)
    assert summary_cache.read(entry) is not None and entry.read_bytes() != b""


def _plain(result: work.FileResult) -> tuple:
    return tuple(work.stored(result))


def test_another_version_s_entries_are_never_read(tmp_path, monkeypatch):
    log = two_turns(tmp_path)
    work.run_file(str(log), SESSIONS_JOB)
    monkeypatch.setattr(summary_cache, "code_identity", lambda: "0.0.0/3.0/1")
    assert work.cached_result(str(log), SESSIONS_JOB) is None
    work.run_file(str(log), SESSIONS_JOB)
    assert len(list((summary_cache.folder() / "summaries").iterdir())) == 2


def test_a_result_that_may_pass_is_not_kept(tmp_path, monkeypatch):
    def vanished(*args):
        raise FileNotFoundError("it was there a moment ago")

    log = two_turns(tmp_path)
    monkeypatch.setattr(work, "_read", vanished)
    assert work.run_file(str(log), SESSIONS_JOB).error is not None
    assert not (summary_cache.folder() / "summaries").exists()
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert work.run_file(str(log), SESSIONS_JOB).units  # read now, and kept
    assert work.cached_result(str(log), SESSIONS_JOB) is not None


def test_the_cache_folder_is_private_to_the_user(tmp_path):
    work.run_file(str(two_turns(tmp_path)), SESSIONS_JOB)
    base = summary_cache.folder()
    for folder in (base, base / "summaries"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for entry in (base / "summaries").iterdir():
        assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_a_folder_that_cannot_be_written_is_a_run_without_cache(tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    log = two_turns(tmp_path)
    assert work.run_file(str(log), SESSIONS_JOB).units


# --- two runs at once; the bound -----------------------------------------------------------------------

_WRITER = """
import sys
from ctxfit_cli.fleet import summary_cache
now = summary_cache.Identity(1, 2, 3, 4, b"h", b"t")
for k in range(200):
    summary_cache.store("shared", now, {"writer": sys.argv[1], "value": list(range(2000))})
"""


def test_runs_writing_one_entry_at_once_leave_it_whole(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, name], env=env, cwd=ROOT) for name in "ab"]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    value = summary_cache.read(tmp_path / "cache" / "ctxfit" / "summaries" / "shared")
    assert value is not None and value[1]["writer"] in "ab" and value[1]["value"] == list(range(2000))
    assert not list((tmp_path / "cache" / "ctxfit" / "summaries").glob(".*.tmp"))


@needs_realworld
def test_two_sessions_runs_at_once_both_give_the_fresh_numbers(tmp_path):
    folder, cache = tmp_path / "logs", tmp_path / "cache"
    shutil.copytree(REALWORLD / "claude-code", folder)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    argv = [sys.executable, "-m", "ctxfit_cli", "sessions", "--json", "-q", "--jobs", "1", str(folder)]
    runs = [subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
            for _ in range(2)]
    outputs = [run.communicate(timeout=600)[0] for run in runs]
    fresh = ctxfit("sessions", "--json", "-q", "--no-cache", str(folder), cache=cache)[1]
    assert outputs == [fresh, fresh] and ctxfit("sessions", "--json", "-q", str(folder), cache=cache)[1] == fresh


def test_the_least_recently_used_entries_are_dropped_past_the_bound(tmp_path):
    base = tmp_path / "c"
    now = summary_cache.Identity(1, 2, 3, 4, b"h", b"t")
    value = "x" * 1000
    for k in range(8):
        summary_cache.store(f"e{k}", now, value, base=base, limit=1 << 20)
        os.utime(base / "summaries" / f"e{k}", ns=(k * 10**9, k * 10**9))  # e0 the oldest
    assert summary_cache.lookup("e0", now, base=base) == value  # used now: the newest
    size = (base / "summaries" / "e0").stat().st_size
    summary_cache.store("e8", now, value, base=base, limit=6 * size)
    left = sorted(p.name for p in (base / "summaries").iterdir())
    assert left == ["e0", "e6", "e7", "e8"]  # down to 3/4 of the bound, the least recently used first


def test_compare_is_never_cached_it_counts_with_the_tokenizers_installed_now(tmp_path):
    log = two_turns(tmp_path)
    work.run_file(str(log), Job("estimate", describe=False, compare=True, cache=True))
    assert not (summary_cache.folder() / "summaries").exists()
