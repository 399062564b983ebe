"""Every real log of ../shared/realworld read while its agent is writing it (issue #19, DESIGN §13).

Each log is cut as a reader can find it on disk: after every Nth line, and at a handful of byte
offsets inside lines (a JSON Lines record half written; a JSON document that its agent rewrites
whole — Cline, Gemini CLI, OpenHands, SWE-agent — cut anywhere; an aider history in the middle
of a line; one file of an OpenCode storage folder half written). `estimate`, `fit`, `plan`,
`replay` and `sessions` read every cut: exit 0 or 4, never 3 (nor 5, a file set aside); every
payload `fit` writes is valid; and `estimate` and `sessions` say "still being written" of each
cut that ends inside a record. The commands run in this process, each over all the cuts of one
log at once, so the whole test takes seconds.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from conftest import REALWORLD, needs_realworld
from fuzzing import invoke
from test_realworld import INDEPENDENT

from ctxfit_cli import validate_request
from ctxfit_cli.formats import read_transcripts

#: One agent's log per file (OpenCode's storage folder is cut file by file, below).
LOGS = sorted(
    p
    for kind in ("claude-code", "codex", "openhands", "swe-agent", "cline", "gemini-cli", "aider")
    for p in (REALWORLD / kind).rglob("*")
    if p.is_file() and (p.suffix in (".jsonl", ".json", ".traj") or p.name == ".aider.chat.history.md")
)
LINE_CUTS = 4  # cuts after whole lines, spread over the log (N = lines / LINE_CUTS)
#: Where the byte cuts fall, as shares of the file (moved off a line end): past its first messages.
BYTE_CUTS = (0.41, 0.63, 0.87, 0.98)
FIRST = 0.3  # no cut before this share of the file: a log cut before its first reply holds no conversation
BUDGET = "30000"


@needs_realworld
def test_every_agent_has_a_log_here():
    kinds = {p.relative_to(REALWORLD).parts[0] for p in LOGS}
    assert kinds == {"claude-code", "codex", "openhands", "swe-agent", "cline", "gemini-cli", "aider"}
    assert (REALWORLD / "opencode" / "storage_v2").is_dir()


def _cuts(path: Path) -> list[tuple[bytes, bool]]:
    """(the log as it was on disk at one moment, whether it ends inside a line), each holding
    the log's first message whole (before it, there is no conversation to read yet)."""
    data = path.read_bytes()
    ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A and i + 1 < len(data)]
    first = max(FIRST * len(data), ends[_first_line(path) - 1] if len(ends) >= _first_line(path) else 0)
    ends = [e for e in ends if e >= first]
    step = max(1, len(ends) // LINE_CUTS)
    cuts = [(data[:end], False) for end in ends[step - 1 :: step][:LINE_CUTS]]
    for share in BYTE_CUTS:
        at = max(int(len(data) * share), int(first) + 1)
        while at < len(data) - 1 and data[at - 1 : at] in (b"\n", b"\r") or data[at : at + 1] in (b"\n", b"\r"):
            at += 1  # inside a line: neither right after a line end nor right before one
        cuts.append((data[:at], True))
    return cuts


def _first_line(path: Path) -> int:
    """The line the log's first conversation message ends on (its last line, for a document)."""
    with path.open("rb") as stream:
        transcript = next(iter(read_transcripts(path.name, stream))).materialize()
    messages = transcript.messages
    return max(m.line for m in messages[:2]) if not _is_document(path) else 1


def _is_document(path: Path) -> bool:
    return path.suffix in (".json", ".traj")


def _commands(paths: list[Path]) -> dict[str, object]:
    """Each command over all the files at once, with its --json document (None when none)."""
    files = [str(p) for p in paths]
    runs = {
        "estimate": invoke(["estimate", "--json", *files]),
        "fit": invoke(["fit", "--budget", BUDGET, "--json", *files]),
        "plan": invoke(["plan", "--budget", BUDGET, "--json", *files]),
        "replay": invoke(["replay", "--budget", BUDGET, "--json", "--no-chart", *files]),
        "sessions": invoke(["sessions", "--json", *files]),
    }
    for command, done in runs.items():
        assert done.exit_code in (0, 4) and "Traceback" not in done.stderr, (
            command,
            done.exit_code,
            done.stderr[-800:],
        )
    return runs


def _check_payloads(done) -> None:
    if done.exit_code != 0:
        return
    document = orjson.loads(done.stdout_bytes)
    for report, payload in zip(document["reports"], document["payloads"]):
        if report["dialect"] in INDEPENDENT:  # (Gemini: ctxfit's validator only)
            assert INDEPENDENT[report["dialect"]](payload) == [], report["path"]
        assert validate_request(payload, report["dialect"]) == [], report["path"]


@needs_realworld
@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_log_being_written_is_read_by_every_command(path, tmp_path):
    """DESIGN §13: every command reads a log up to its last complete record (exit 0, or 4 when
    it cannot fit), never refuses it (3); every request it writes is valid; a log cut inside a
    record (any cut of a whole JSON document) is said to be still being written."""
    cuts = _cuts(path)
    written, inside = [], []
    for n, (data, cut_in_line) in enumerate(cuts):
        live = tmp_path / f"{n}" / path.name  # (the agent's own file name: aider's is how it is known)
        live.parent.mkdir()
        live.write_bytes(data)
        written.append(live)
        if cut_in_line or _is_document(path):
            inside.append(str(live))
    runs = _commands(written)
    _check_payloads(runs["fit"])
    for command in ("estimate", "sessions"):  # (the copies are one session: all but one set aside as such)
        document = orjson.loads(runs[command].stdout_bytes)
        assert not document["errors"], (command, document["errors"])
        assert all("the same session" in s["reason"] for s in document["skipped"]), (command, document["skipped"])
    for n, live in enumerate(inside):  # each on its own: said to be still being written
        done = invoke(["estimate", "--json", live])
        # (a compacted log: its last conversation; a file of several runs: the last one)
        assert done.exit_code == 0 and any(f["still_being_written"] for f in orjson.loads(done.stdout_bytes)["files"])
        if n >= len(inside) - 2:
            done = invoke(["sessions", "--json", live])
            assert done.exit_code == 0, done.stderr
            sessions = orjson.loads(done.stdout_bytes)["sessions"]  # (a file of several runs: the last)
            assert any(session["still_being_written"] for session in sessions), live


def _opencode_cuts(tmp_path: Path) -> list[tuple[Path, str]]:
    """The storage folder copied once per cut, with one of its message or part files half written
    (each file in turn): (its session file, the file cut)."""
    storage = REALWORLD / "opencode" / "storage_v2"
    files = sorted(p for p in storage.rglob("*.json") if "session" not in p.relative_to(storage).parts)
    out = []
    for n, cut in enumerate(files):
        copy = tmp_path / f"{n}" / "storage"
        shutil.copytree(storage, copy)
        target = copy / cut.relative_to(storage)
        data = target.read_bytes().rstrip()
        target.write_bytes(data[: len(data) * 2 // 3])
        out.append((next((copy / "session").rglob("*.json")), cut.relative_to(storage).as_posix()))
    return out


@needs_realworld
def test_an_opencode_session_being_written_is_read_by_every_command(tmp_path):
    """OpenCode rewrites its message and part files as a session goes (a text part as it streams):
    one cut short is read up to its last complete member, and the session said still being
    written."""
    cuts = _opencode_cuts(tmp_path)
    readable = [session for session, _ in cuts]
    runs = _commands(readable)
    _check_payloads(runs["fit"])
    for session in readable:  # (the copies are one session: each on its own)
        for command, key in (("estimate", "files"), ("sessions", "sessions")):
            done = invoke([command, "--json", str(session)])
            assert done.exit_code == 0, done.stderr
            [item] = orjson.loads(done.stdout_bytes)[key]
            assert item["still_being_written"], (command, session)
