"""What any Python `sessions` must do on a folder of Claude Code logs before it can answer, as one
process: the floor the first run's ratio to ccusage is measured against (bench/sessions_vs_ccusage.py).

    python bench/_floor.py start FOLDER      # the interpreter alone
    python bench/_floor.py parse FOLDER      # + every line of every log parsed (orjson)
    python bench/_floor.py measure FOLDER    # + every message's text measured once (ctxfit's character classes)

ccusage parses the logs and sums recorded usage; ctxfit's view also shows what fitting each session
to the budget would do, which needs every text measured once (DESIGN §3): `measure` is that floor.
"""

from __future__ import annotations

import sys
from pathlib import Path


def texts(value: object):
    """The strings of a message's content, as a reader would measure them."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in ("type", "id", "tool_use_id", "signature", "cache_control"):
                yield from texts(item)


def main() -> None:
    mode, folder = sys.argv[1], Path(sys.argv[2])
    if mode == "start":
        return
    import orjson

    measure = None
    if mode == "measure":
        from ctxfit_cli.counters.char_classes import class_counts as measure
    for log in sorted(folder.rglob("*.jsonl")):
        with open(log, "rb") as lines:
            for line in lines:
                record = orjson.loads(line)
                if measure is not None and isinstance(record, dict) and isinstance(record.get("message"), dict):
                    for text in texts(record["message"].get("content")):
                        measure(text)


if __name__ == "__main__":
    main()
