"""An HTTP server on loopback that serves logs as object stores do, and one that never ends:
what URI inputs (`--engine ray`, fleet/uri_input.py) are tested against."""

from __future__ import annotations

import http.server
import re
import threading
from pathlib import Path

CHUNK = 1 << 16


class LogServer(http.server.ThreadingHTTPServer):
    """Serves files by name (Content-Length and Range, as S3 or nginx do) and `/endless.jsonl`,
    one line that never ends (no length: fsspec streams it). Before every chunk it sends it
    notes how many bytes the watched folder holds."""

    daemon_threads = True

    def __init__(self, files: dict[str, bytes], watched: Path) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.files, self.watched = files, watched
        self.endless_sent = 0
        self.most_on_disk = 0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def note_disk(self) -> None:
        held = sum(p.stat().st_size for p in self.watched.rglob("*") if p.is_file())
        with self.lock:
            self.most_on_disk = max(self.most_on_disk, held)


class Handler(http.server.BaseHTTPRequestHandler):
    server: LogServer

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, body: bool) -> None:
        name = self.path.rsplit("/", 1)[-1]  # (any folder: a URI's folder is its project)
        if name == "endless.jsonl":
            self.send_response(200)
            self.end_headers()
            if body:
                self._endless()
            return
        if name not in self.server.files:
            self.send_error(404)
            return
        data = self.server.files[name]
        start, end = 0, len(data)
        asked = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if asked:
            start, end = int(asked[1]), min(len(data), int(asked[2] or len(data) - 1) + 1)
        self.send_response(206 if asked else 200)
        self.send_header("Content-Length", str(end - start))
        self.send_header("Accept-Ranges", "bytes")
        if asked:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.end_headers()
        if body:
            for at in range(start, end, CHUNK):
                self.server.note_disk()
                self.wfile.write(data[at : min(end, at + CHUNK)])

    def _endless(self) -> None:
        try:
            self.wfile.write(b'{"role":"user","content":"')
            while True:
                self.server.note_disk()
                self.wfile.write(b"x" * CHUNK)
                with self.server.lock:
                    self.server.endless_sent += CHUNK
        except OSError:  # the reader hung up
            pass

    def log_message(self, *args) -> None:
        pass
