"""The proxy's fitting workers: processes of their own, each conversation always sent to one.

A plan depends only on the history (DESIGN §4, §12), so any process could fit any request; a
conversation goes to the same worker each time only so that its warm state (the body reader
that re-reads only what changed, the `Session` that steps on from the last request) is there.
The worker is chosen from the first element of the body's conversation array (`route`): an
agent resends it unchanged at every step, and reading it takes a search over a few bytes, not
a parse, so the event loop only moves bytes. Requests are fitted in worker processes, not
threads: a team's conversations are fitted side by side, each on a core of its own, with no
lock between them.

Most requests never come here: a conversation's next request that provably needs no fitting
(the last one its worker forwarded unchanged, grown by whole elements whose bytes bound their
tokens, still within the budget by that bound) goes on from the proxy's own process, without
the trip (`bypass.py`, `Proxy._fit`); the worker reads the steps it did not see as one larger
growth when the conversation next comes to it.

A worker that dies (a crash, killed, out of memory) is replaced: the requests it had in hand
get `WorkerLost`, which the proxy treats as any failure to fit (the body goes on unchanged,
`Proxy._fit`); the conversations it served are rebuilt in the new one from their next request.
So is a worker stuck on one request past the fit deadline (`--fit-timeout`): killed, so that
neither that request nor the ones queued behind it wait longer. The deadline runs from when the
worker took the request up, not from when it was queued: a busy worker is never taken for a
stuck one.
"""

from __future__ import annotations

import asyncio
import re
import time
import zlib
from collections.abc import Callable
from itertools import count

from ..core.anchor import implausible
from ..core.reported import Reported
from .bases import BASE_LOST, MIN_BYTES, MIN_SHARED, Base, Bases, common_prefix
from .channel import TIGHTER, Fitted, Setup, base_limit
from .frames import frame, receive
from .paths import ARRAYS
from .spawning import spawn_worker, stop_unused

#: The first element of a body's array is looked for within this many bytes of the array's name.
ROUTE_BYTES = 4096
#: The end of an element: a closing brace followed by a comma or the array's end.
_ELEMENT_END = re.compile(rb"\}\s*[,\]]")
#: Seconds a worker has to start; a worker that died sooner than `RESTART_AFTER` seconds after
#: it started is replaced no sooner than that (meanwhile its requests go on unchanged).
START_SECONDS, RESTART_AFTER = 60.0, 1.0
#: Seconds a worker may take over one request before it is taken for stuck (`--fit-timeout`):
#: a full walk of a new conversation at the largest body accepted takes a few seconds.
FIT_SECONDS = 30.0


class WorkerLost(Exception):
    """The worker fitting a request ended before answering (the request goes on unchanged)."""

    key: str | None = None


class NotFitted(Exception):
    """The worker could not fit the body (its reason: the request goes on unchanged)."""

    def __init__(self, reason: str, key: str | None) -> None:
        super().__init__(reason)
        self.key = key


class Worker:
    """One worker process and the requests it has in hand."""

    def __init__(self, number: int, process: asyncio.subprocess.Process, base_limit: int) -> None:
        self.number, self.process = number, process
        #: The last body sent for each route, kept as the worker keeps them (`bases.py`).
        self.bases = Bases(base_limit)
        self.started = time.monotonic()
        self.waiting: dict[int, asyncio.Future] = {}
        self.ready: asyncio.Future = asyncio.get_running_loop().create_future()
        self.alive = True
        self.held = 0
        self.reader: asyncio.Future | None = None
        #: When the worker took up the request it is fitting now (None: it has none in hand);
        #: it fits them one after the other, in the order they were sent.
        self.busy_since: float | None = None
        #: Why the proxy ended it, for the log line (a stuck fit), or "".
        self.ended_why = ""
        #: Anchors for conversations this worker serves, sent with the next request it fits:
        #: the one they help is a later request of theirs, which comes here after them, and a
        #: frame of their own would wake the worker once more per request.
        self.anchors: list[tuple] = []  # (key, ticket, Reported's fields), or a refusal's (`tighten`)

    def base(self, route: int, ticket: int, body: bytes, whole: bool = False) -> Base:
        """What `body` (sent now, as `ticket`) is sent against: the part it shares with the last
        body sent for its route, unless `whole`; kept as that route's last (`bases.py`)."""
        last = None if whole or len(body) < MIN_BYTES else self.bases.get(route)
        shared = common_prefix(body, last[1]) if last is not None else 0
        base = Base(route, last[0], shared) if last is not None and shared >= MIN_SHARED else Base(route, 0, 0)
        self.bases.put(route, ticket, body)
        return base

    def send(self, message: tuple, body: bytes | memoryview = b"") -> None:
        stdin = self.process.stdin
        if not self.alive or stdin is None or stdin.is_closing():
            raise WorkerLost(f"fitting worker {self.number} has ended")
        stdin.write(b"".join(frame(message, body)))  # one write: the worker wakes once

    def answered(self) -> None:
        """One request done: the next one in hand, if any, is taken up now."""
        self.busy_since = time.monotonic() if self.waiting else None

    def stuck(self, seconds: float) -> bool:
        return self.busy_since is not None and time.monotonic() - self.busy_since > seconds


class _Deadline:
    """Every quarter of the fit deadline, while `answer` is awaited: whether `worker` has been
    on one request past the deadline; if so it is killed (its reader sees the end: every other
    request in hand fails open) and `answer` is that it was stuck."""

    def __init__(self, worker: Worker, answer: asyncio.Future, seconds: float) -> None:
        self.worker, self.answer, self.seconds = worker, answer, seconds
        self.loop = asyncio.get_running_loop()
        self.timer = self.loop.call_later(seconds / 4, self.check)

    def check(self) -> None:
        worker, answer = self.worker, self.answer
        if answer.done():
            return
        if worker.alive and worker.stuck(self.seconds):
            worker.ended_why = f"took over {self.seconds:g} s to fit a request (--fit-timeout)"
            worker.process.kill()
            answer.set_exception(WorkerLost(f"the fitting worker {worker.ended_why}; it was replaced"))
            return
        self.timer = self.loop.call_later(self.seconds / 4, self.check)

    def cancel(self) -> None:
        self.timer.cancel()


class Pool:
    def __init__(
        self,
        size: int,
        setup: Setup,
        log: Callable[[str, str], None],
        fit_seconds: float = FIT_SECONDS,
        spawned: list[asyncio.subprocess.Process] | None = None,
    ) -> None:
        """`spawned`: worker processes started already (`spawning.py`), taken up first."""
        self.size, self.setup, self.log, self.fit_seconds = size, setup, log, fit_seconds
        self.spawned = list(spawned or [])
        self.workers: list[Worker | None] = [None] * size
        self._starting: list[asyncio.Task | None] = [None] * size
        self._tickets = count(1)
        self.replaced = 0
        self.closing = False

    async def start(self) -> None:
        """Start every worker (raises `WorkerLost` if one cannot start)."""
        for number in range(self.size):
            await self._worker(number)

    def route(self, dialect: str, body: bytes, client: str = "") -> int:
        """This body's conversation, as a number: from whose it is (`owner.py`) and the first
        element of its array (its worker is this number modulo the workers)."""
        whose = zlib.crc32(client.encode())
        array = b'"' + ARRAYS[dialect].encode() + b'"' if dialect in ARRAYS else b""
        at = body.find(array) if array else -1
        if at < 0:
            return zlib.crc32(body[:ROUTE_BYTES], whose)
        end = _ELEMENT_END.search(body, at, at + ROUTE_BYTES)
        return zlib.crc32(body[at : end.start() if end else at + ROUTE_BYTES], whose)

    async def fit(
        self,
        dialect: str,
        body: bytes,
        model: str = "",
        window: int | None = None,
        client: str = "",
        route: int | None = None,
    ) -> Fitted:
        """`body` (to `model`, when its path names one; in `window`, when its headers ask for
        one; of `client`, `owner.py`; of `route` when the caller found it) fitted by its
        conversation's worker; raises `NotFitted` (with the worker's reason) or `WorkerLost`
        when it was not."""
        route = self.route(dialect, body, client) if route is None else route
        number = route % self.size
        worker = await self._worker(number)
        for whole in (False, True):  # sent as what follows its base; whole if the worker lost that
            ticket = next(self._tickets)
            answer = worker.waiting[ticket] = asyncio.get_running_loop().create_future()
            anchors, worker.anchors = worker.anchors, []
            if worker.busy_since is None:
                worker.busy_since = time.monotonic()
            try:
                base = worker.base(route, ticket, body, whole)
                # (plain tuples: a NamedTuple took 5 us to pickle, against 0.8 us for the whole frame)
                message = ("fit", ticket, dialect, model, window, anchors, tuple(base), client)
                worker.send(message, memoryview(body)[base.shared :])
                fitted, changed, fitted_body = await self._answer(worker, answer)
            finally:
                worker.waiting.pop(ticket, None)
            if fitted.skipped != BASE_LOST:
                break
        fitted.body = fitted_body if changed else body
        fitted.worker, fitted.ticket = number, ticket
        if fitted.skipped:
            raise NotFitted(fitted.skipped, fitted.key)
        return fitted

    async def _answer(self, worker: Worker, answer: asyncio.Future) -> tuple:
        """The worker's answer; a worker stuck past the fit deadline is killed (`WorkerLost`).
        (A timer checks it, not `wait_for`: that took a task, a shield and three more turns of
        the event loop for every request.)"""
        deadline = _Deadline(worker, answer, self.fit_seconds)
        try:
            return await answer
        finally:
            deadline.cancel()

    def anchor(self, fitted: Fitted, reported: Reported) -> str | None:
        """The reply to `fitted` reported its prompt's size: for the worker holding its
        conversation, with the next request it is sent (the conversation's next one is sent
        there, after the agent has this reply). A count far outside what that request can cost
        is not passed on: why, or None (`core.anchor.implausible`)."""
        worker = self.workers[fitted.worker] if 0 <= fitted.worker < self.size else None
        if worker is None or not fitted.anchorable or fitted.key is None:
            return None  # (a replaced worker: the conversation is rebuilt estimated, nothing to anchor)
        why = implausible(reported.prompt, fitted.plan.estimate) if fitted.plan is not None else None
        if why is None:
            worker.anchors.append((fitted.key, fitted.ticket, tuple(reported)))
        return why

    def tighten(self, fitted: Fitted, share: float) -> None:
        """The provider refused `fitted` as too long: its conversation's next requests are
        fitted to `share` of their budget (`refusals.py`), told with the next request its
        worker is sent (the retry, which comes there after the agent has the refusal)."""
        worker = self.workers[fitted.worker] if 0 <= fitted.worker < self.size else None
        if worker is not None and fitted.key is not None:
            worker.anchors.append((TIGHTER, fitted.key, share))

    def fitting(self) -> int:
        """The requests the workers have in hand."""
        return sum(len(w.waiting) for w in self.workers if w is not None)

    def held(self) -> int:
        """The conversation state the workers hold, in bytes (as each last told)."""
        return sum(w.held for w in self.workers if w is not None and w.alive)

    async def close(self) -> None:
        self.closing = True
        for task in self._starting:
            if task is not None:
                task.cancel()
        unused, self.spawned = self.spawned, []
        await stop_unused(unused)
        workers = [w for w in self.workers if w is not None]
        for worker in workers:
            if worker.process.stdin is not None:
                worker.process.stdin.close()  # the worker ends at the end of its input
        for worker in workers:
            try:
                await asyncio.wait_for(worker.process.wait(), 5)
            except TimeoutError:
                worker.process.kill()
                await worker.process.wait()

    # --- workers ------------------------------------------------------------------------------

    async def _worker(self, number: int) -> Worker:
        """The live worker `number`, started first if there is none."""
        worker = self.workers[number]
        if worker is not None and worker.alive:
            await asyncio.shield(worker.ready)
            return worker
        task = self._starting[number]
        if task is None:
            task = self._starting[number] = asyncio.ensure_future(self._start(number, worker))
            task.add_done_callback(lambda _task: self._started(number))
        return await asyncio.shield(task)

    def _started(self, number: int) -> None:
        self._starting[number] = None

    async def _start(self, number: int, previous: Worker | None) -> Worker:
        if self.closing:
            raise WorkerLost("the proxy is stopping")
        if previous is not None:
            wait = previous.started + RESTART_AFTER - time.monotonic()
            if wait > 0:  # it died young: not a tight loop of starts
                await asyncio.sleep(wait)
        process = self.spawned.pop(0) if self.spawned else await spawn_worker()
        worker = Worker(number, process, base_limit(self.setup))
        self.workers[number] = worker
        worker.reader = asyncio.ensure_future(self._read(worker))
        worker.send((self.setup,))
        try:
            await asyncio.wait_for(asyncio.shield(worker.ready), START_SECONDS)
        except TimeoutError:
            process.kill()
            raise WorkerLost(f"fitting worker {number} did not start within {START_SECONDS:g} s") from None
        return worker

    async def _read(self, worker: Worker) -> None:
        """Hand each answer of `worker` to the request waiting for it, until the worker ends."""
        assert worker.process.stdout is not None  # (stdout=PIPE)
        try:
            while True:
                message, body = await receive(worker.process.stdout)
                if message[0] == "fitted":
                    _, ticket, fitted, changed = message
                    worker.held = fitted.held
                    answer = worker.waiting.pop(ticket, None)
                    worker.answered()
                    if answer is not None and not answer.done():
                        answer.set_result((fitted, changed, body))
                elif message[0] == "ready" and not worker.ready.done():
                    worker.ready.set_result(worker)
        except Exception:  # the end of its output, or output that is not a frame: it is gone
            pass
        finally:
            await self._lost(worker)

    async def _lost(self, worker: Worker) -> None:
        worker.alive = False
        if worker.process.returncode is None:
            try:
                await asyncio.wait_for(worker.process.wait(), 2)
            except TimeoutError:
                worker.process.kill()
                await worker.process.wait()
        lost = WorkerLost(f"the fitting worker ended (exit code {worker.process.returncode})")
        if not worker.ready.done():
            worker.ready.set_exception(lost)
            worker.ready.exception()  # (retrieved: a failed start is reported by `_start`)
        in_hand = [answer for answer in worker.waiting.values() if not answer.done()]
        for answer in in_hand:
            answer.set_exception(lost)
        if self.closing:
            return
        self.replaced += 1
        how = worker.ended_why or f"ended with exit code {worker.process.returncode}"
        self.log(
            "worker ended",
            f"fitting worker {worker.number} (pid {worker.process.pid}) {how}: its {len(in_hand)} requests "
            "in hand were forwarded unchanged; a new worker takes its place",
        )
        if self.workers[worker.number] is worker and self._starting[worker.number] is None:
            try:
                await self._worker(worker.number)
            except WorkerLost:
                pass  # the next request of its conversations tries again
