"""A real headless Chromium (Debian's `chromium`) driven over the DevTools protocol on a pipe:
open a page, collect every console error, uncaught exception and failed load, find elements'
boxes and take a full-page screenshot. Standard library only (`--remote-debugging-pipe` speaks
NUL-terminated JSON on file descriptors 3 and 4), so the test needs no driver package.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from base64 import b64decode
from dataclasses import dataclass, field

#: Flags for a sandboxed, offline CI box (as root, no GPU, no network beyond loopback).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-debugging-pipe"]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class Visit:
    """What a page did while loading, and what it looks like."""

    errors: list[str] = field(default_factory=list)
    boxes: list[list[float]] = field(default_factory=list)
    screenshot: bytes = b""
    #: What each expression asked for (`visit(measure=...)`) evaluated to in the loaded page.
    measured: dict = field(default_factory=dict)


class Browser:
    def __init__(self, executable: str, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="ctxfit-chromium-")
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def descriptors() -> None:  # in the child: fd 3 reads commands, fd 4 writes answers
            # Copies first: a pipe may already sit on 3 or 4, and dup2 onto itself would leave
            # it close-on-exec.
            commands, answers = os.dup(to_browser), os.dup(from_browser)
            os.dup2(commands, 3)
            os.dup2(answers, 4)

        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=descriptors, close_fds=False)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._write)
        os.close(self._read)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- protocol ---

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str | None = None) -> dict:
        """The first event `method` (of `session`, when given) not waited for before."""
        def matches(event: dict) -> bool:
            return event.get("method") == method and session in (None, event.get("sessionId")) \
                and not event.get("_waited")
        for event in self.events:
            if matches(event):
                event["_waited"] = True
                return event
        while True:
            event = self._receive()
            self.events.append(event)
            if matches(event):
                event["_waited"] = True
                return event

    def _receive(self) -> dict:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    # --- what a test needs ---

    def visit(self, url: str, selector: str, width: int = 1050, measure: dict[str, str] | None = None,
              mobile: bool = False) -> Visit:
        """Load `url` in a window `width` px wide (`mobile`: as a phone shows it, the page's
        viewport honoured), then the boxes of `selector`, the values of the `measure`
        expressions (before the window is stretched to the page's height) and a full-page
        screenshot."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": mobile}, session=session)
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired", session)
        measured = {name: self._evaluate(expression, session) for name, expression in (measure or {}).items()}
        height = self._evaluate("document.documentElement.scrollHeight", session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": int(height), "deviceScaleFactor": 1, "mobile": mobile}, session=session)
        boxes = self._evaluate(
            f"[...document.querySelectorAll({json.dumps(selector)})].map(e => {{"
            "const r = e.getBoundingClientRect(); return [r.x + scrollX, r.y + scrollY, r.width, r.height]; })",
            session)
        shot = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session)
        return Visit(errors=self._errors(session), boxes=boxes, screenshot=b64decode(shot["data"]), measured=measured)

    def _evaluate(self, expression: str, session: str):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"]["value"]

    def _errors(self, session: str) -> list[str]:
        errors = []
        for event in self.events:
            if event.get("sessionId") != session:
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert", "warning"):
                errors.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Runtime.exceptionThrown":
                errors.append(f"exception: {params.get('exceptionDetails', {}).get('text')}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") in ("error", "warning"):
                entry = params["entry"]
                errors.append(f"log {entry['level']}: {entry.get('text')} {entry.get('url', '')}")
        return errors
