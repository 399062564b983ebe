"""Real server processes on loopback for tests: the fake provider, and `ctxfit proxy` in front of it."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent


class Server:
    """A server process that prints its URL on its first line of stdout; stopped on exit."""

    def __init__(self, argv: list[str], env: dict | None = None) -> None:
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                                        env={**os.environ, **(env or {})})
        line = self.process.stdout.readline().decode().strip()
        if not line.startswith("http://127.0.0.1:"):
            self.process.kill()
            self.process.wait()
            raise RuntimeError(f"{argv} did not start: {line!r} {self.process.stderr.read().decode()[-2000:]}")
        self.url = line
        self._stderr: list[bytes] = []
        # Drained all along: a server that logs a line per request would block on a full pipe.
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        for line in self.process.stderr:
            self._stderr.append(line)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    def stop(self) -> str:
        """Stop the server; its stderr."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=5)
        return self.stderr

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *_) -> None:
        self.stop()


def fake_provider(record: Path | None, steps: int = 30, *options: str, usage: str = "bytes") -> Server:
    """The fake provider; what it receives is recorded to `record` (None: not recorded); `usage`
    is what its replies report as the prompt's size (`fake_provider.py --usage`)."""
    return Server([sys.executable, str(ROOT / "tests" / "fake_provider.py"), "--steps", str(steps),
                   "--usage", usage, *(["--record", str(record)] if record is not None else []), *options])


def proxy(upstream: str, *options: str) -> Server:
    """`ctxfit proxy` on a free loopback port, as a user runs it."""
    return Server([sys.executable, "-m", "ctxfit_cli", "proxy", "--port", "0", "--upstream", upstream, *options])


def recorded(record: Path) -> list[dict]:
    """What the fake provider received and sent, one entry per request."""
    if not record.exists():
        return []
    return [orjson.loads(line) for line in record.read_bytes().splitlines()]


def eventually(condition, seconds: float = 20) -> bool:
    """Whether `condition()` comes true within `seconds` (a process logs, a worker dies, a port
    closes: wait for it to happen, never for a fixed time)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


class Recorded:
    """What the fake provider recorded (`self.record`): a stack of provider and proxy reads
    its requests and replies through these."""

    record: Path

    def mark(self) -> int:
        return len(recorded(self.record))

    def since(self, mark: int) -> list[dict]:
        return recorded(self.record)[mark:]

    def reply_of(self, headers) -> bytes:
        """The exact bytes the provider sent for the request these reply headers belong to."""
        return base64.b64decode(recorded(self.record)[int(headers["x-fake-request"]) - 1]["reply"])
