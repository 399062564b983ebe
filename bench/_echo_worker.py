"""A fitting worker that fits nothing, for bench/proxy.py's floor of the proxy's design: it
speaks the workers' channel (`serve/frames.py`), puts each body back together from its base
(`serve/bases.py`) as a worker does, and answers at once that the body goes on unchanged. What
the proxy and such a worker spend per request is the body's trip to a worker and back, alone.

    started by bench/proxy.py (its stdin and stdout are the channel)
"""

from __future__ import annotations

import os
import sys

from ctxfit_cli.serve.bases import Base, Bases
from ctxfit_cli.serve.channel import Fitted, base_limit
from ctxfit_cli.serve.frames import read_frame, write_frame


def main() -> None:
    inbox, outbox = sys.stdin.buffer, sys.stdout.buffer
    first = read_frame(inbox)
    if first is None:
        return
    (setup,), _ = first
    bases = Bases(base_limit(setup))
    write_frame(outbox, ("ready", os.getpid()))
    while (frame := read_frame(inbox)) is not None:
        (_, ticket, _dialect, _model, _window, _anchors, fields, client), rest = frame
        base = Base(*fields)
        body = bases.rebuilt(base, rest)
        if body is None:
            raise SystemExit("the echo worker lost a base")
        bases.put(base.route, ticket, body)
        write_frame(outbox, ("fitted", ticket, Fitted(b"", client or "-"), False))


if __name__ == "__main__":
    main()
