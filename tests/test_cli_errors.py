"""Bad input through the real CLI: one line naming file, line and problem; exit 3; empty stdout;
no traceback; the input untouched. Awkward but valid input works."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import orjson
import pytest

from conftest import ROOT, Chat, run_cli

GOOD = b'{"role":"user","content":"hi"}\n'

BAD_INPUTS = {
    "not-json": (b"this is not json\n", ":1: not valid JSON"),
    # (cut short in the middle: a cut *last* line is the record being written, read past: test_repair.py)
    "truncated": (GOOD + b'{"role":"assistant","content":"hel\n' + GOOD, ":2: truncated JSON"),
    "top-level-number": (b"42\n", ":1: expected a JSON object per line, got a number"),
    "top-level-string-line2": (GOOD + b'"hello"\n', ":2: a message must be a JSON object, got a string"),
    "missing-role": (b'{"content":"hi"}\n', ":1: not a transcript"),
    "missing-role-line3": (GOOD + GOOD + b'{"content":"hi"}\n', ':3: missing "role"'),
    "content-wrong-type": (b'{"role":"user","content":42}\n', ":1: content: must be a string"),
    "block-not-object": (b'{"role":"user","content":["hi"]}\n', ":1: content[0]: a content part must be a JSON object"),
    "invalid-utf8": (b'{"role":"user","content":"caf\xe9"}\n', ":1: invalid UTF-8 at byte"),
    "nul-bytes": (b'{"role":"user",\x00"content":"hi"}\n', ":1: contains a NUL byte"),
    "empty-file": (b"", "is empty"),
    "only-blank-lines": (b"\n  \n\r\n", "is empty"),
    "no-messages": (b'{"role":"system","content":"only a system prompt"}\n', "has no messages"),
    "claude-code-bookkeeping-only": (b'{"type":"summary","summary":"x","leafUuid":"u"}\n', "has no messages"),
    "tool-without-call-id": (GOOD + b'{"role":"tool","content":"x"}\n', ':2: a "tool" message needs a "tool_call_id"'),
    "tool-use-without-id": (b'{"role":"assistant","content":[{"type":"tool_use","name":"x","input":{}}]}\n',
                            ':1: content[0]: a tool_use "id" must be a string'),
    "request-messages-not-list": (b'{"messages": {"role": "user"}}\n', "not a transcript"),
    "request-bad-message": (b'{"messages": [{"role": "user", "content": "a"}, {"role": 7}]}\n',
                            ":1: messages[1]: \"role\" must be a string, got a number"),
    "binary-garbage": (bytes(range(1, 256)) * 4, ":1:"),
}


CASES = [("estimate", case) for case in sorted(BAD_INPUTS)] + [
    (command, case) for command in ("fit", "plan", "replay")
    for case in ("not-json", "truncated", "empty-file", "invalid-utf8", "no-messages")
]


@pytest.mark.parametrize(("command", "case"), CASES)
def test_bad_input_is_one_line_exit_3_and_nothing_on_stdout(tmp_path, case, command):
    data, expected = BAD_INPUTS[case]
    path = tmp_path / "input.jsonl"
    path.write_bytes(data)
    result = run_cli(command, str(path))
    stderr = result.stderr.decode()
    assert result.returncode == 3, stderr
    assert result.stdout == b""
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert stderr.startswith("ctxfit: error: ") and str(path) in stderr
    assert expected in stderr
    assert path.read_bytes() == data


def test_a_folder_without_logs_and_a_missing_file_are_bad_input(tmp_path):
    (tmp_path / "notes.txt").write_text("not a log")
    for target, words in ((tmp_path, "has no transcript files"), (tmp_path / "nope.jsonl", "no such file")):
        result = run_cli("estimate", str(target))
        assert result.returncode == 3 and result.stdout == b""
        assert words in result.stderr.decode()


def test_bad_input_on_stdin_names_stdin():
    result = run_cli("estimate", "-", input=b"{oops\n")
    assert result.returncode == 3
    assert result.stderr.decode().startswith("ctxfit: error: <stdin>:1: not valid JSON")


@pytest.mark.parametrize("args", [
    ["estimate", "--format", "klingon", "x.jsonl"],
    ["fit", "--budget", "0", "x.jsonl"],
    ["fit", "--budget", "500", "--window", "100", "sample.jsonl"],
    ["estimate", "--no-such-option"],
])
def test_usage_errors_exit_2(tmp_path, args):
    (tmp_path / "sample.jsonl").write_bytes(GOOD)
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stdout == b""
    assert "Traceback" not in result.stderr.decode()


def test_a_terminal_with_no_input_is_a_usage_error_not_a_silent_wait():
    controller, terminal = pty.openpty()
    try:
        result = subprocess.run([sys.executable, "-m", "ctxfit_cli", "estimate"], stdin=terminal,
                                capture_output=True, cwd=ROOT, timeout=60)
    finally:
        os.close(controller)
        os.close(terminal)
    assert result.returncode == 2
    assert "no input" in result.stderr.decode()


def test_awkward_but_valid_input_works(tmp_path):
    huge = "слово " * 8_000_000 + "end"  # an 88 MB line of Cyrillic: over the default limit
    lines = [
        b"\xef\xbb\xbf" + orjson.dumps({"role": "user", "content": "Read it."}) + b"\r\n",
        orjson.dumps({"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{not json"}}]}) + b"\r\n",
        orjson.dumps({"role": "tool", "tool_call_id": "c1", "content": huge}) + b"\r\n",
    ]
    path = tmp_path / "awkward.jsonl"
    path.write_bytes(b"".join(lines))
    refused = run_cli("estimate", "--json", str(path))
    assert refused.returncode == 3 and refused.stdout == b""
    assert b":3: line longer than 64 MiB" in refused.stderr and b"--max-line-mb" in refused.stderr
    result = run_cli("estimate", "--json", "--max-line-mb", "100", str(path))
    assert result.returncode == 0, result.stderr
    report = orjson.loads(result.stdout)["files"][0]
    assert report["format"] == "openai" and report["messages"] == 3
    assert report["by_script"]["other"]["chars"] == 5 * 8_000_000


def test_a_pretty_printed_request_document_is_read(tmp_path):
    chat = Chat("anthropic").user("hello").round("some result")
    request = {"model": "m", "system": "be brief", "messages": chat.lines[1:]}
    path = tmp_path / "request.json"
    path.write_bytes(orjson.dumps(request, option=orjson.OPT_INDENT_2))
    result = run_cli("estimate", "--json", str(path))
    assert result.returncode == 0, result.stderr
    assert orjson.loads(result.stdout)["files"][0]["format"] == "request"
