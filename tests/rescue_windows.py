"""Resume a real session past a scripted provider's window at several windows, directly and
through `ctxfit wrap`, and print what happened (issue 33 item 7; the figures of its report).

    PYTHONPATH=$PWD python tests/rescue_windows.py claude 30000,45000,60000,70000,100000
    PYTHONPATH=$PWD python tests/rescue_windows.py codex 20000,30000,45000

For each window and way: the agent's exit code, then every main request the provider got
(refused or answered, its size by the provider's count, its messages or items, whether it holds
the trimmed-history note, and for an answered one the roles of its last messages).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_rescue import NOTE, resume, resume_codex  # noqa: E402


def main() -> None:
    agent, windows = sys.argv[1], [int(w) for w in sys.argv[2].split(",")]
    run = resume if agent == "claude" else resume_codex
    with tempfile.TemporaryDirectory() as tmp:
        for window in windows:
            for through_wrap in (False, True):
                done, requests = run(Path(tmp), window, through_wrap)
                print(f"{agent} window {window:,} {'wrap' if through_wrap else 'direct'}: exit {done.returncode}")
                for request in requests:
                    sent = request.get("messages") or request.get("items") or []
                    roles = [m.get("role") or m.get("type") for m in sent[-4:]] if request["ok"] else ""
                    note = "note" if NOTE in json.dumps(sent[:5]) else ""
                    print(f"   {'answered' if request['ok'] else 'refused '} {request['true_tokens']:>7,} tokens,"
                          f" {len(sent):>3} messages {note:4} {roles}")


if __name__ == "__main__":
    main()
