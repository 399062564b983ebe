"""A URI input (`--engine ray`'s `s3://…`, `https://…`) is streamed with the line limit applied
as it downloads, and never written to local disk: tested over real HTTP on loopback (fsspec's
`http://` through aiohttp), with a server that counts what it sent and watches the temporary
folder while it sends."""

from __future__ import annotations

import dataclasses
import os
import tempfile
import threading

import pytest

pytest.importorskip("fsspec")
pytest.importorskip("aiohttp", reason="fsspec reads http:// with aiohttp: pip install 'ctxfit[proxy]'")

from conftest import ROOT  # noqa: E402
from uri_server import LogServer  # noqa: E402

from ctxfit_cli.fleet import ray_engine, uri_input  # noqa: E402
from ctxfit_cli.fleet.job import Job  # noqa: E402
from ctxfit_cli.fleet.work import run_file  # noqa: E402
from ctxfit_cli.formats.reading import BUFFER  # noqa: E402

SAMPLES = ROOT / "sample_transcripts"


@pytest.fixture
def temp_folder(tmp_path, monkeypatch):
    """The temporary folder of this process, empty at the start, watched by the server."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def server(temp_folder):
    files = {p.name: p.read_bytes() for p in SAMPLES.iterdir() if p.suffix in (".jsonl", ".json", ".traj")}
    server = LogServer(files, temp_folder)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def downloads(monkeypatch):
    """Every URI download of the test, to read how many bytes each took."""
    made: list[uri_input.Download] = []
    original = uri_input.Download.__init__

    def init(self, source):
        original(self, source)
        made.append(self)

    monkeypatch.setattr(uri_input.Download, "__init__", init)
    return made


def test_an_endless_one_line_uri_is_refused_after_reading_about_the_limit(server, temp_folder, downloads):
    uri = f"{server.url}/endless.jsonl"
    result = ray_engine.run_one(run_file, uri, Job("estimate", line_limit_mb=1))
    assert result.error == (
        f"{uri}:1: line longer than 1 MiB (the limit); if the file really holds such lines, raise --max-line-mb"
    )
    assert result.error_code == 3 and result.path == uri
    [download] = downloads
    # The limit plus one byte of the line, and at most one read buffer more: not the object.
    assert (1 << 20) < download.read_bytes <= (1 << 20) + 2 * BUFFER
    assert server.most_on_disk == 0 and not any(temp_folder.iterdir())


def test_a_uri_gives_what_the_same_file_gives_and_writes_nothing_to_disk(server, temp_folder, downloads):
    names = sorted(server.files)
    assert len(names) >= 5
    for command in ("estimate", "sessions", "replay"):
        job = Job(command, budget=20_000)
        for name in names:
            uri, path = f"{server.url}/sample_transcripts/{name}", str(SAMPLES / name)
            remote, local = ray_engine.run_one(run_file, uri, job), run_file(path, job)
            assert remote.error is None, remote.error
            # (`size`, the file's on disk, is read by no report; an object is not sized first)
            assert _plain(dataclasses.replace(remote, size=0), uri) == _plain(
                dataclasses.replace(local, size=0), path
            ), (command, name)
    assert sum(d.read_bytes for d in downloads) >= sum(len(server.files[n]) for n in names)
    assert server.most_on_disk == 0 and not any(temp_folder.iterdir())


def test_a_missing_uri_is_bad_input_naming_it(server):
    uri = f"{server.url}/nothing.jsonl"
    result = ray_engine.run_one(run_file, uri, Job("estimate"))
    assert (result.error, result.error_code) == (f"{uri}: no such file", 3)


def test_a_uri_is_read_as_a_uri_only_by_the_ray_engine(server):
    """The local engine reads paths: `http:…` there is a file name (that does not exist)."""
    uri = f"{server.url}/{sorted(server.files)[0]}"
    result = run_file(uri, Job("estimate"))
    assert result.error == f"{uri}: no such file"


def _plain(value, name: str):
    """A result as plain data, its input's name (URI or path, and the session id made from it)
    replaced by one word, so that a URI's result and its file's compare equal."""
    stem = os.path.splitext(os.path.basename(name))[0]
    if isinstance(value, str):
        return value.replace(name, "INPUT").replace(stem, "STEM")
    if isinstance(value, dict):
        return {_plain(k, name): _plain(v, name) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v, name) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, name)
    if hasattr(value, "__dict__"):
        return _plain(vars(value), name)
    return value
