"""A fitting worker: a process of its own that reads request bodies, fits them, and answers.

    python -c "from ctxfit_cli.serve.worker import main; main()"   # started by the proxy (`pool.py`)

The proxy's event loop only moves bytes; every body of a fitted path is fitted here. The
proxy sends each conversation's requests to the same worker, so its warm state stays here:
the body readers that re-read only the bytes that changed (`body.py`) and the conversation's
`Session` (`conversations.py`), within this worker's share of `--memory-mb`. Requests are
fitted one after the other, so a conversation's session is never shared.

The channel is the worker's stdin and stdout, one frame per message each way (`frames.py`):

- in: the settings first (`Setup`); then `("fit", ticket, dialect, model, window, anchors, base, client)`
  with the body, or what follows the part it shares with its conversation's last one (`base`,
  a `bases.Base`'s fields, `bases.py`: the worker puts it back together); `model`: the one the request's path names,
  Gemini's, else ""; `window`: the one its headers opt into, `limits.asked_window`, or None;
  `anchors`: the `(key, ticket, Reported's fields)` of each reply since the last frame that reported the
  size of the prompt it was given, DESIGN §11: each anchors its conversation's next request,
  which this worker will fit, so they are applied first; or `("tighter", key, share)`: the
  provider refused one of the conversation's requests as too long); `client`: whose the request is
  (`owner.py`: a digest, never the credential), part of its conversation's key;
- out: `("ready", pid)` once, then `("fitted", ticket, Fitted, body)` for each fit, in order.

Whatever a body makes fitting raise is answered as `Fitted.skipped` (the reason, on one line):
the proxy forwards that body unchanged (fail open, in one place: `Proxy._fit`). The worker
ends when its stdin closes (the proxy stopped or died); it ignores Ctrl-C, which is the
proxy's to handle.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
from typing import BinaryIO

from ..core.reported import Reported
from .bases import BASE_LOST, Base, Bases
from .body import READER_MEMORY, Known, Readers
from .channel import TIGHTER, Fitted, PlanSummary, Setup, base_limit, reason
from .conversations import SESSION_MEMORY, Conversations, fixed_part
from .dialects import HANDLING
from .fitting import mark
from .frames import read_frame, write_frame

#: The least share of its budget any number of refusals leave a conversation.
LEAST_BUDGET = 0.25


class Fitting:
    """A worker's state: the conversations it serves and its body readers."""

    def __init__(self, setup: Setup) -> None:
        self.limits = setup.limits
        sessions = setup.memory * SESSION_MEMORY // (SESSION_MEMORY + READER_MEMORY)
        self.conversations = Conversations(setup.conversations, sessions)
        readers = Readers(setup.conversations, setup.memory - sessions)
        self.readers = {h.array: readers.sibling(h.array) for h in HANDLING.values()}

    def fit(
        self, ticket: int, dialect: str, body: bytes, model: str = "", window: int | None = None, client: str = ""
    ) -> Fitted:
        key = None
        try:
            handling = HANDLING[dialect]
            request, layout = handling.parse(self.readers[handling.array], body)
            key = handling.conversation_key(dialect, request, client)  # (`client`: whose it is, `owner.py`)
            conversation = self.conversations.get(key, dialect, fixed_part(request, handling.array))
            limits = handling.limits(self.limits.asking(window), request, dialect, model)  # type: ignore[arg-type]
            outcome = handling.fit_body(body, request, layout, dialect, conversation, limits)  # type: ignore[arg-type]
            marked = mark(outcome, layout)
            self.conversations.fitted(conversation, len(body))
            if outcome.body is not body:  # written back: its reader holds that too
                self.readers[handling.array].trim()
        except Exception as error:
            return Fitted(body, key, skipped=reason(error), held=self.held())
        anchorable = outcome.session is not None and outcome.sent is not None and outcome.error is None
        conversation.last = (ticket, outcome.session, outcome.sent) if anchorable else None
        plan = PlanSummary.of(outcome.plan, outcome.sent) if outcome.plan is not None else None
        limits = outcome.limits or limits  # (what the fit found: past the window, say)
        fields = tuple(marked) if marked is not None else None
        held = self.held()
        return Fitted(outcome.body, key, plan, limits, outcome.error, anchorable=anchorable, held=held, mark=fields)

    def expect(self, known: Known) -> None:
        """What the next body fitted shares with the last one sent for its conversation."""
        next(iter(self.readers.values())).expect(known)  # (the readers of every array share one shelf)

    def anchor(self, key: str, ticket: int, reported: Reported) -> None:
        """The reply to request `ticket` of conversation `key` reported its prompt's size."""
        conversation = self.conversations.find(key)
        last = conversation.last if conversation is not None else None
        if last is None or last[0] != ticket or reported.prompt <= 0:
            return  # another request of it was fitted since, or it is no longer kept here
        _, session, sent = last
        session.record(reported, sent=sent)

    def tighten(self, key: str, share: float) -> None:
        """The provider refused a request of conversation `key` as too long: its next ones are
        fitted to `share` of the budget they had (`refusals.py`)."""
        conversation = self.conversations.find(key)
        if conversation is not None:
            conversation.tighter = max(conversation.tighter * share, LEAST_BUDGET)

    def held(self) -> int:
        readers = next(iter(self.readers.values()))
        return self.conversations.held() + readers.held()


#: Answers between two full collections of the worker's garbage (made after an answer).
FULL_COLLECTION_EVERY = 1000


class Collector:
    """Keeps the garbage collector's full passes out of the requests.

    A worker holds its conversations' state: tens of thousands of objects each, all of them
    long-lived. Python walks every one of them in a full collection, due whenever the objects
    that survived since the last grew by a quarter: right after the first request of a
    conversation (its whole history read) and again as the conversations grow, each time in
    the middle of some request (8.7 ms for one 400,000-token conversation of short results,
    3.5 ms for 25 of a team's 150,000-token ones). What survives an answer is frozen instead
    (`gc.freeze`: young objects are still collected as they come), and a full collection runs
    after every `every`th answer. The state itself holds no cycles (each conversation's is freed as its
    references go); the periodic pass is for any that some other path made."""

    def __init__(self, every: int = FULL_COLLECTION_EVERY) -> None:
        self.every, self.answers = every, 0

    def answered(self) -> None:
        self.answers += 1
        if self.answers % self.every == 0:
            gc.unfreeze()
            gc.collect()
        gc.freeze()


def serve(inbox: BinaryIO, outbox: BinaryIO) -> None:
    """Answer the proxy until it closes the channel."""
    first = read_frame(inbox)
    if first is None:
        return
    (setup,), _ = first
    fitting = Fitting(setup)
    bases = Bases(base_limit(setup))
    collector = Collector()
    write_frame(outbox, ("ready", os.getpid()))
    warm(setup)
    while (frame := read_frame(inbox)) is not None:
        (_, ticket, dialect, model, window, anchors, fields, client), rest = frame
        base = Base(*fields)
        for anchor in anchors:
            try:
                if anchor[0] == TIGHTER:  # (a refusal's lesson: `Pool.tighten`)
                    fitting.tighten(*anchor[1:])
                else:
                    key, answered, reported = anchor
                    fitting.anchor(key, answered, Reported(*reported))
            except Exception:  # an anchor is a help, never a failure: the count is estimated then
                pass
        last = bases.get(base.route) if base.shared else None
        body = bases.rebuilt(base, rest)
        if body is None:
            write_frame(outbox, ("fitted", ticket, Fitted(b"", skipped=BASE_LOST), False))
            continue
        bases.put(base.route, ticket, body)
        if last is not None:  # (the proxy found where they differ: its reader need not look again)
            fitting.expect(Known(body, last[1], base.shared))
        fitted = fitting.fit(ticket, dialect, body, model, window, client)
        changed = fitted.body is not body
        answer, fitted.body = fitted.body, b""
        try:
            write_frame(outbox, ("fitted", ticket, fitted, changed), answer if changed else b"")
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as error:
            failed = Fitted(b"", fitted.key, skipped=f"the fitted request could not be passed on ({reason(error)})")
            write_frame(outbox, ("fitted", ticket, failed, False))
        collector.answered()


#: A request of each API a worker fits, to load on start what fitting loads only when first
#: asked (`warm`): its readers, the counters' profiles and the model catalog.
WARM_BODIES = (
    ("anthropic", b'{"model":"claude-sonnet-4-5","system":"s","messages":[{"role":"user","content":"a"}]}', ""),
    ("openai", b'{"model":"gpt-4o","messages":[{"role":"user","content":"a"}]}', ""),
    ("responses", b'{"model":"gpt-5-codex","input":[{"role":"user","content":"a"}]}', ""),
    ("gemini", b'{"contents":[{"role":"user","parts":[{"text":"a"}]}]}', "gemini-2.5-pro"),
    ("openai", b'{"model":"a-model-of-no-known-family","messages":[{"role":"user","content":"a"}]}', ""),
)


def warm(setup: Setup) -> None:
    """Fit one small request of each API in a throwaway state, once the proxy has been told the
    worker is ready: the first request a fresh worker fitted took 16-26 ms more than the next
    (lazy imports, a profile read, the model catalog searched), and a new conversation's first
    request is what sets the p99 the proxy adds (docs/benchmarks.md). Whatever fails here is
    left for the request that meets it."""
    scratch = Fitting(setup)
    for ticket, (dialect, body, model) in enumerate(WARM_BODIES, 1):
        try:
            scratch.fit(ticket, dialect, body, model)
        except Exception:
            pass
    gc.collect()
    gc.freeze()


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The channel is the original stdout; anything else printed goes to stderr (the proxy's log).
    outbox = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    # A long-lived process: what is loaded now stays; full collections skip it.
    gc.enable()
    gc.freeze()
    try:
        serve(sys.stdin.buffer, outbox)
    except (BrokenPipeError, KeyboardInterrupt):  # the proxy went away: nothing to answer
        pass
    except Exception as error:  # one line for the proxy's log, never a traceback; the proxy replaces it
        sys.stderr.write(f"ctxfit fitting worker {os.getpid()} stopped: {reason(error)}\n")
        sys.stderr.flush()
        sys.exit(70)


if __name__ == "__main__":
    main()
