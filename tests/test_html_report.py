"""The HTML report: one self-contained page, user text escaped, and charts that really render in
a real headless Chromium (console clean, chart areas not blank, the series' colours drawn)."""

from __future__ import annotations

import io
import os
import re
import shutil
from html import escape
from pathlib import Path

import orjson
import pytest
from browser import Browser, chromium
from conftest import REALWORLD, ROOT, needs_realworld, run_cli

from ctxfit_cli.cli.html_report import sessions_page
from ctxfit_cli.cli.svg import PALETTE, Bar, Limit, Series, bar_chart, line_chart, ticks

SAMPLE = ROOT / "sample_transcripts" / "subagent_reader.anthropic.jsonl"
REAL = ROOT.parent / "shared" / "realworld" / "claude-code" / "spotter_4d5611e5.jsonl"
EVIL = '<script>alert("x")</script> & <b>bold</b> [red]'


def session_row(id: str, project: str, peak: int, window: int = 200_000, budget: int = 150_000) -> dict:
    """A row as `ctxfit sessions --json` prints it."""
    return {"id": id, "agent": "Claude Code", "project": project, "models": ["claude-opus-4-6"],
            "path": f"/logs/{id}.jsonl", "started": "2026-02-01T10:00:00Z", "last_activity": "2026-02-01T12:30:00Z",
            "messages": 120, "calls": 60, "compactions": 0, "peak": peak, "peak_source": "recorded",
            "window": window, "window_share": round(peak / window, 4), "budget": budget,
            "ctxfit": {"stage": "clear", "cleared": 8, "peak": min(peak, budget), "rejected": 0},
            "agent_rejected": int(peak > window)}


SESSIONS = [session_row("5c0375b4", "sample-project", 61_000), session_row("ae4a77f8", EVIL, 183_000),
            session_row("4d5611e5", "spotter", 240_000)]


# --- the page as text -------------------------------------------------------------------------------


def test_ticks_are_round_and_cover_the_top():
    assert ticks(0.93) == [0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
    assert ticks(1_000_000)[-1] >= 1_000_000 and ticks(7)[-1] >= 7


def test_user_text_is_escaped_everywhere():
    svg = line_chart([Series(EVIL, [1, 2, 3], rejected=(2,))], limits=[Limit(EVIL, 2)], title=EVIL)
    svg += bar_chart([Bar(EVIL, 0.5, note=EVIL, title=EVIL)], title=EVIL, value_label=EVIL)
    page = sessions_page(SESSIONS, budget=150_000, version="1")
    for text in (svg, page):
        assert "<script" not in text and "<b>" not in text
        assert "&lt;script&gt;" in text and "&amp;" in text


def test_page_is_self_contained():
    page = sessions_page(SESSIONS, budget=150_000, version="1")
    assert "<script" not in page
    assert re.findall(r"https?://[^\"' ]+", page) == ["http://www.w3.org/2000/svg"] * page.count("<svg")
    assert re.findall(r"\b(?:src|href)=\"(?!data:)", page) == []


def test_a_long_line_is_drawn_from_at_most_max_points_keeping_peaks():
    values = [i % 1000 for i in range(100_000)]
    values[54_321] = 5_000
    svg = line_chart([Series("long", values)])
    points = re.search(r'points="([^"]+)"', svg).group(1).split()
    assert len(points) <= 1200
    # The 5,000 peak (y ~72) stands far above the rest (at most 999: y >= 222).
    assert min(float(p.split(",")[1]) for p in points) < 100


def test_replay_html_is_written_beside_the_report_and_matches_the_json(tmp_path):
    out = tmp_path / "report.html"
    done = run_cli("replay", str(SAMPLE), "--budget", "50000", "-p", "ctxfit", "-p", "turns", "--json",
                   "--html", str(out))
    assert done.returncode == 0, done.stderr
    document = orjson.loads(done.stdout)
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count('<svg class="chart line-chart') == 1
    share = document["policies"]["ctxfit"]["cache_read_share"]
    assert f"{share:.1%}" in page
    assert f"{document['policies']['turns']['max_request']:,}" in page
    assert "steps" not in document["files"][0]["policies"]["ctxfit"]  # --html did not change --json


def test_html_refuses_to_overwrite_an_input(tmp_path):
    log = tmp_path / "log.anthropic.jsonl"
    shutil.copy(SAMPLE, log)
    done = run_cli("replay", str(log), "--html", str(log))
    assert done.returncode == 2 and log.read_bytes() == SAMPLE.read_bytes()


# --- the page in a real browser ----------------------------------------------------------------------


def _browser() -> str:
    executable = chromium()
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: .ci/run installs it with apt-get")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return executable


def _check_renders(page_path, expected_charts: int, colours: list[str]) -> None:
    from PIL import Image, ImageStat
    with Browser(_browser()) as browser:
        visit = browser.visit(page_path.as_uri(), "svg.chart")
    assert visit.errors == []
    assert len(visit.boxes) == expected_charts
    image = Image.open(io.BytesIO(visit.screenshot)).convert("RGB")
    for x, y, width, height in visit.boxes:
        assert width > 300 and height > 100
        chart = image.crop((int(x), int(y), int(x + width), int(y + height)))
        spread = sum(ImageStat.Stat(chart).stddev)
        assert spread > 30, f"chart at {x},{y} looks blank (pixel spread {spread:.1f})"
        drawn = {c for c in colours if _pixels_near(chart, c) > 40}
        assert drawn, f"chart at {x},{y} shows none of the series' colours"
    # The measure can fail: the page's empty margin right of the tables and charts is flat.
    margin = image.crop((image.width - 12, 0, image.width, image.height))
    assert sum(ImageStat.Stat(margin).stddev) < 1


def _pixels_near(image, colour: str, tolerance: int = 40) -> int:
    import numpy
    target = numpy.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
    pixels = numpy.asarray(image, dtype=numpy.int32)
    return int((numpy.abs(pixels - target).sum(axis=2) <= tolerance).sum())


@pytest.mark.skipif(not REAL.exists(), reason="the shared real logs are not beside the project")
def test_replay_report_renders_in_chromium(tmp_path):
    evil = tmp_path / f"{EVIL.replace('/', '_')}.jsonl"
    shutil.copy(SAMPLE, evil)
    out = tmp_path / "replay.html"
    done = run_cli("replay", str(evil), str(REAL), "--budget", "30000", "-p", "ctxfit", "-p", "turns",
                   "-p", "clear-each", "--html", str(out))
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert "&lt;script&gt;" in page and "<script" not in page
    # The cache-share chart, then one request-size chart per transcript (the real log was
    # compacted once: two conversations).
    _check_renders(out, 1 + 3, PALETTE[:3])


def test_sessions_report_renders_in_chromium(tmp_path):
    out = tmp_path / "sessions.html"
    out.write_text(sessions_page(SESSIONS, budget=150_000, version="test"))
    _check_renders(out, 1, [PALETTE[0], "#E69F00", "#C62828"])


@pytest.mark.skipif(not REAL.exists(), reason="the shared real logs are not beside the project")
def test_sessions_html_from_the_cli_renders_every_session(tmp_path):
    out = tmp_path / "sessions.html"
    done = run_cli("sessions", str(REAL.parent), str(ROOT / "sample_transcripts"), "--budget", "30000",
                   "--json", "--html", str(out), "--top", "10")
    assert done.returncode == 0, done.stderr
    rows = orjson.loads(done.stdout)["sessions"]
    page = out.read_text()
    assert len(rows) > 10 and page.count('<rect class="bar"') == 10  # the worst 10 charted
    charted = sorted(rows, key=lambda r: -r["window_share"])[:10]
    assert all(f"{row['peak']:,} / {row['window']:,}" in page for row in charted)
    assert all(f'<td data-label="session" class="text">{escape(row["id"])}</td>' in page for row in rows)  # all listed
    _check_renders(out, 1, [PALETTE[0], "#E69F00", "#C62828"])


# --- reports at scale: summary, legends, the worst first, layouts that fit -------------------------


def test_a_three_call_axis_reads_one_two_three():
    svg = line_chart([Series("ctxfit", [100, 200, 300])])
    assert re.findall(r'text-anchor="middle">([0-9,]+)</text>', svg) == ["1", "2", "3"]
    assert svg.count('class="point"') == 3  # so few calls are each marked
    svg = line_chart([Series("ctxfit", list(range(1, 101)))])
    assert re.findall(r'text-anchor="middle">([0-9,]+)</text>', svg) == ["1", "20", "40", "60", "80", "100"]


def test_sessions_page_opens_with_a_summary_and_the_worst_first():
    rows = [session_row(f"s{n:03d}", "p", peak) for n, peak in enumerate([10_000, 250_000, 160_000, 90_000] * 10)]
    page = sessions_page(rows, budget=150_000, version="1", top=5)
    summary = re.search(r'<ul class="summary">(.*?)</ul>', page).group(1)
    assert "<strong>40</strong>sessions" in summary and "<strong>20</strong>went over the budget" in summary
    assert "<strong>10</strong>went past the window" in summary
    worst = re.findall(r'data-label="peak">([0-9,]+)<', page.split("The worst 10")[1].split("</table>")[0])
    assert worst == ["250,000"] * 10
    assert page.count('<rect class="bar"') == 5 and "35 more sessions below the chart (--top 5)" in page
    legend = re.search(r'<ul class="legend">(.*?)</ul>', page).group(1)
    for colour in (PALETTE[0], "#E69F00", "#C62828"):  # every bar colour is explained
        assert colour in legend


@needs_realworld
def test_replay_page_charts_the_worst_and_no_empty_chart(tmp_path):
    idle = REAL.parent.parent / "codex" / "simonw_sample_codex_session.jsonl"  # no model reply: 0 calls
    out = tmp_path / "replay.html"
    done = run_cli("replay", str(SAMPLE), str(idle), str(REAL.parent / "ccviewer_5c0375b4.jsonl"), str(REAL),
                   "--budget", "30000", "-p", "ctxfit", "-p", "none", "--html", str(out), "--top", "2")
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert page.count('<svg class="chart line-chart') == 2  # --top 2, none for the idle log
    assert "1 transcript made no model call: nothing to chart" in page
    sections = re.findall(r"<h2>([^<]+)</h2>\s*<p class=\"sub\">[^<]*largest request ([0-9,]+) \(([0-9.]+)%", page)
    shares = [float(share) for _, _, share in sections]
    assert len(shares) == 2 and shares == sorted(shares, reverse=True)
    worst = page.split("The worst")[1].split("</table>")[0]
    assert worst.index(str(REAL)) < worst.index(str(idle))  # the real, long log first
    for name in ("policy ctxfit", "policy none", "budget", "window", "a request the window rejects"):
        assert f"</i>{name}</li>" in page  # every colour and mark of the charts in the legend


#: What a layout test measures in the page: the page's width against the window's, and any
#: table wider than its box (columns behind a scroll) or reaching past the window.
LAYOUT = {
    "page": "document.documentElement.scrollWidth",
    "window": "innerWidth",
    "overflowing": "[...document.querySelectorAll('table, svg, h2, p, ul')].filter(e => "
                   "e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > innerWidth + 1).length",
    "legend": "document.querySelectorAll('ul.legend li').length",
    "first_worst": "document.querySelector('table td[data-label=\"of window\"]').textContent",
}


#: The shared logs of agents ctxfit has no reader for yet (issue #34 item 4): `sessions` names them
#: and exits 5 (partial), which is not what this test looks at.
NOT_READ_YET = {"copilot-cli", "continue", "pi", "cursor", "opencode-export", "cline-ui"}


@pytest.fixture(scope="module")
def real_reports(tmp_path_factory) -> tuple[Path, Path, float]:
    """The sessions and replay reports of the shared real logs (made once: each width views
    them), and the largest share of a window among the sessions."""
    folder = tmp_path_factory.mktemp("reports")
    sessions, replay = folder / "sessions.html", folder / "replay.html"
    read = sorted(str(folder) for folder in REALWORLD.iterdir() if folder.is_dir() and folder.name not in NOT_READ_YET)
    done = run_cli("sessions", *read, str(ROOT / "sample_transcripts"), "--budget", "30000",
                   "--json", "--html", str(sessions))
    assert done.returncode == 0, done.stderr
    largest = max(r["window_share"] for r in orjson.loads(done.stdout)["sessions"])
    done = run_cli("replay", str(REALWORLD / "claude-code"), str(REALWORLD / "codex"), "--budget", "30000",
                   "-p", "ctxfit", "-p", "none", "--html", str(replay))
    assert done.returncode == 0, done.stderr
    return sessions, replay, largest


@needs_realworld
@pytest.mark.parametrize("width", [1400, 390])
def test_reports_fit_a_desktop_and_a_phone(tmp_path, width, real_reports):
    from PIL import Image
    sessions, replay, largest = real_reports
    with Browser(_browser()) as browser:
        for page in (sessions, replay):
            visit = browser.visit(page.as_uri(), "svg.chart", width=width, measure=LAYOUT, mobile=width < 500)
            layout = visit.measured
            assert visit.errors == []
            assert layout["page"] <= layout["window"] == width, (page.name, layout)  # no sideways scroll
            assert layout["overflowing"] == 0, (page.name, layout)  # no column hidden behind a scroll
            assert layout["legend"] >= 3
            assert Image.open(io.BytesIO(visit.screenshot)).width == width
            if page is sessions:
                assert layout["first_worst"] == f"{largest:.1%}"  # the worst session first
            (tmp_path / f"{page.stem}-{width}.png").write_bytes(visit.screenshot)
