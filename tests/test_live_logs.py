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

import io
import shutil
from pathlib import Path

import orjson
import pytest
from conftest import REALWORLD, needs_realworld
from fuzzing import invoke
from test_realworld import INDEPENDENT

from ctxfit_cli.agents import BY_NAME, recognised
from ctxfit_cli import validate_request
from ctxfit_cli.errors import BadInput, NoConversation
from ctxfit_cli.formats import cline, read_transcripts
from ctxfit_cli.formats.detection import detect
from ctxfit_cli.formats.reading import Record

#: One agent's log per file (OpenCode's storage folder is cut file by file, below).
LOGS = sorted(
    p
    for kind in ("claude-code", "codex", "openhands", "swe-agent", "cline", "gemini-cli", "aider")
    for p in (REALWORLD / kind).rglob("*")
    if p.is_file() and (p.suffix in (".jsonl", ".json", ".traj") or p.name == ".aider.chat.history.md")
)
#: Where the byte cuts fall, as shares of the file (moved off a line end): past its first messages.
BYTE_CUTS = (0.41, 0.63, 0.87, 0.98)
#: (Each command reads every cut: a big log is cut in fewer places, so the test takes seconds.)
BIG, HUGE = 250_000, 1_000_000
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
    line_cuts, byte_cuts = (
        (1, BYTE_CUTS[1::2]) if len(data) > HUGE else (2, BYTE_CUTS[1::2]) if len(data) > BIG else (4, BYTE_CUTS)
    )
    ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A and i + 1 < len(data)]
    first_line = _first_line(path)
    first = max(FIRST * len(data), ends[first_line - 1] if len(ends) >= first_line else 0)
    ends = [e for e in ends if e >= first]
    step = max(1, len(ends) // line_cuts)  # N: cut after every Nth line
    cuts = [(data[:end], False) for end in ends[step - 1 :: step][:line_cuts]]
    for share in byte_cuts:
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
    """Each command over all the files at once: exit 0 or 4, every file read (the copies of a
    log are one session: all but one set aside as such)."""
    files = [str(p) for p in paths]
    runs = {
        "estimate": invoke(["estimate", "--json", "--jobs", "1", *files]),
        "fit": invoke(["fit", "--budget", BUDGET, "--json", *files]),
        "plan": invoke(["plan", "--budget", BUDGET, "--json", *files]),
        "replay": invoke(["replay", "--budget", BUDGET, "--json", "--no-chart", "--jobs", "1", *files]),
        "sessions": invoke(["sessions", "--json", "--jobs", "1", *files]),
    }
    for command, done in runs.items():
        assert done.exit_code in (0, 4) and "Traceback" not in done.stderr, (
            command,
            done.exit_code,
            done.stderr[-800:],
        )
    for command in ("estimate", "sessions"):
        document = orjson.loads(runs[command].stdout_bytes)
        assert not document["errors"], (command, document["errors"])
        assert all("the same session" in s["reason"] for s in document["skipped"]), (command, document["skipped"])
    return runs


def _said_still_being_written(path: str) -> None:
    """`estimate` and `sessions` of the file alone say it is (of a log of several runs, or of
    compacted conversations: its last)."""
    for command, key in (("estimate", "files"), ("sessions", "sessions")):
        done = invoke([command, "--json", path])
        assert done.exit_code == 0, (command, done.stderr)
        assert any(item["still_being_written"] for item in orjson.loads(done.stdout_bytes)[key]), (command, path)


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
    # Every cut inside a record is read as still being written (what both commands report of
    # it, `Transcript.open_end`), and both say so of one of them on their own.
    for live in inside:
        with open(live, "rb") as stream:
            assert any(t.materialize().being_written for t in read_transcripts(live, stream)), live
    _said_still_being_written(inside[-1])


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
    for session in readable:
        _said_still_being_written(str(session))


# --- the rules, on small documents ---------------------------------------------------------------

CLINE = [
    {"role": "user", "content": [{"type": "text", "text": "Fix the bug, {please} [now]."}], "ts": 1},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.py"}}],
        "ts": 2,
        "metrics": {"tokens": {"prompt": 900, "completion": 20}},
    },
    {"role": "user", "content": [{"type": "text", "text": "[read_file for 'a.py'] Result: \"x = 1\\n\" é"}], "ts": 3},
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "Done."}],
        "ts": 4,
        "metrics": {"tokens": {"prompt": 950}},
    },
]


def _read(name: str, data: bytes):
    return [t.materialize() for t in read_transcripts(name, io.BytesIO(data))]


@pytest.mark.parametrize("indent", [None, orjson.OPT_INDENT_2], ids=["one line", "pretty-printed"])
def test_a_document_cut_at_any_byte_is_read_up_to_its_last_whole_element(indent):
    """Every cut of a Cline history past its first message reads as the messages whole before
    the cut (the one being written left out, its open call answered), still being written."""
    data = orjson.dumps(CLINE, option=indent or 0)
    whole = [orjson.dumps(CLINE[: k + 1], option=indent or 0)[:-1] for k in range(len(CLINE))]  # (without "]")
    for at in range(len(whole[0]) + 1, len(data) - 1):
        complete = sum(1 for prefix in whole if data[:at].startswith(prefix.rstrip()) and at >= len(prefix.rstrip()))
        [transcript] = _read(cline.FILE_NAME, data[:at])
        assert transcript.format == "cline" and transcript.being_written, at
        assert len(transcript.calls) == sum(1 for m in CLINE[:complete] if m["role"] == "assistant"), at
        assert transcript.open_end[0].startswith("it is cut short at line"), at
    [transcript] = _read(cline.FILE_NAME, data)
    assert not transcript.being_written and len(transcript.messages) == 4


def test_a_document_broken_in_the_middle_is_still_refused_with_its_line():
    data = orjson.dumps(CLINE, option=orjson.OPT_INDENT_2)
    broken = data.replace(b'"ts": 2', b'"ts": 2 2', 1)[:-40]  # a stray number, then cut as well
    line = data[: data.index(b'"ts": 2')].count(b"\n") + 1
    with pytest.raises(BadInput) as error:
        _read(cline.FILE_NAME, broken)
    assert error.value.line == line and "not valid JSON at column" in error.value.problem


def test_a_cut_document_that_no_agent_rewrites_is_still_refused(tmp_path):
    """A request object (or a plain list of messages) is not a log being written: cut short, it is
    a broken file, as before."""
    request = orjson.dumps({"model": "m", "messages": CLINE[:1] * 3, "tools": []}, option=orjson.OPT_INDENT_2)
    for data, name in (
        (request[:-30], "request.json"),
        (orjson.dumps([{"role": "user", "content": "hi"}] * 3)[:-9], "chat.json"),
    ):
        with pytest.raises(BadInput, match="truncated JSON"):
            _read(name, data)


def test_what_a_cut_document_is_is_known_from_its_beginning():
    """Cut inside its first message, a Gemini CLI recording is still named as one (its metadata
    comes first); a Cline history by its file's name; neither has a conversation to read yet."""
    recording = orjson.dumps(
        {"sessionId": "s", "projectHash": "p", "messages": [{"id": "1", "type": "user", "content": "hello there"}]}
    )
    with pytest.raises(NoConversation, match="Gemini CLI"):
        _read("session-1.json", recording[:-12])
    with pytest.raises(NoConversation, match="Cline"):
        _read(cline.FILE_NAME, orjson.dumps(CLINE)[:30])
    assert detect("x.json", Record(1, [], b"[]")) == "request" and recognised([], "tasks/1/" + cline.FILE_NAME) is BY_NAME["cline"]
