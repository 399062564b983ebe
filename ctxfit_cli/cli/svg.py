"""Charts as inline SVG text: no script, no library, nothing fetched, so a report works offline
and opens the same in every browser. Every string from the user's data is escaped here.

>>> svg = line_chart([Series("ctxfit", [10, 20, 15])], limits=[Limit("budget", 18)], title="<a>")
>>> svg.startswith("<svg") and "&lt;a&gt;" in svg and "<a>" not in svg
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

#: Colours that stay apart for colour-blind readers (Okabe-Ito), one per series in order.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
BUDGET_COLOUR, WINDOW_COLOUR, REJECTED_COLOUR = "#B8860B", "#C62828", "#C62828"
#: A line chart keeps at most this many points per series (the largest of each bucket), so a
#: report of 100,000 calls stays small and every peak stays visible.
MAX_POINTS = 1200
#: A series of this many points or fewer has each point marked.
FEW_POINTS = 12


@dataclass(frozen=True)
class Series:
    name: str
    values: list[int]
    #: Indexes of values that were rejected (over the window): drawn as marks.
    rejected: tuple[int, ...] = ()


@dataclass(frozen=True)
class Limit:
    name: str
    value: float
    colour: str = BUDGET_COLOUR
    dashed: bool = True


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    #: Text shown at the end of the bar (defaults to the value).
    note: str | None = None
    colour: str = PALETTE[0]
    #: Shown on hover.
    title: str | None = None


def short(value: float) -> str:
    """12_345 -> '12.3k', 1_500_000 -> '1.5M' (axis labels).

    >>> short(999), short(12_345), short(1_000_000), short(0.5)
    ('999', '12.3k', '1M', '0.5')
    """
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


def ticks(top: float, count: int = 5, *, integer: bool = False) -> list[float]:
    """Round tick values from 0 to at least `top`: steps of 1, 2 or 5 times a power of ten;
    for counts (`integer`), never a step under 1, so no two ticks read the same.

    >>> ticks(388_898)
    [0, 100000, 200000, 300000, 400000]
    >>> ticks(2, 6, integer=True)
    [0, 1, 2]
    """
    if top <= 0:
        return [0, 1]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if integer:
        step = max(int(round(step)), 1)
    return [i * step for i in range(math.ceil(top / step) + 1)]


def _downsample(values: list[int]) -> tuple[list[tuple[int, int]], int]:
    """(index, value) points: every value, or the largest of each bucket past MAX_POINTS."""
    if len(values) <= MAX_POINTS:
        return list(enumerate(values)), 1
    per = math.ceil(len(values) / MAX_POINTS)
    points = []
    for start in range(0, len(values), per):
        chunk = values[start : start + per]
        best = max(range(len(chunk)), key=chunk.__getitem__)
        points.append((start + best, chunk[best]))
    return points, per


def line_chart(
    series: list[Series],
    *,
    limits: Sequence[Limit] = (),
    title: str = "",
    x_label: str = "model call",
    y_label: str = "tokens per request",
    width: int = 760,
    height: int = 300,
) -> str:
    """Lines of values per x (one per series) with horizontal limit lines and rejected marks."""
    left, right, top_pad, bottom = 64, 16, 34, 40
    plot_w, plot_h = width - left - right, height - top_pad - bottom
    longest = max((len(s.values) for s in series), default=0)
    peak = max([max(s.values, default=0) for s in series] + [lim.value for lim in limits] + [1])
    scale = ticks(peak * 1.04, integer=True)  # tokens: whole numbers
    y_top = scale[-1]
    x_of = lambda i: left + (plot_w * i / max(longest - 1, 1))
    y_of = lambda v: top_pad + plot_h - plot_h * min(v, y_top) / y_top
    parts = [_open(width, height, "line-chart", title), f'<text class="title" x="{left}" y="20">{escape(title)}</text>']
    for value in scale:
        y = y_of(value)
        parts.append(
            f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{short(value)}</text>'
        )
    # Calls are counted from 1 (call c is at index c - 1): round call numbers, the first call too.
    for call in sorted({max(int(c), 1) for c in ticks(max(longest, 1), 6, integer=True) if c <= longest}):
        x, y = x_of(call - 1), top_pad + plot_h + 16
        parts.append(f'<text class="tick" x="{x:.1f}" y="{y}" text-anchor="middle">{call:,}</text>')
    for lim in limits:
        y = y_of(lim.value)
        dash = ' stroke-dasharray="6 4"' if lim.dashed else ""
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="{lim.colour}" '
            f'stroke-width="1.5"{dash}><title>{escape(lim.name)}: {lim.value:,.0f}</title></line>'
            f'<text class="limit" x="{left + plot_w - 4}" y="{y - 5:.1f}" text-anchor="end" '
            f'fill="{lim.colour}">{escape(lim.name)} {short(lim.value)}</text>'
        )
    for n, s in enumerate(series):
        colour = PALETTE[n % len(PALETTE)]
        points, per = _downsample(s.values)
        path = " ".join(f"{x_of(i):.1f},{y_of(v):.1f}" for i, v in points)
        note = f" (largest of every {per} calls)" if per > 1 else ""
        parts.append(
            f'<polyline class="series" points="{path}" fill="none" stroke="{colour}" stroke-width="2">'
            f"<title>{escape(s.name)}{note}</title></polyline>"
        )
        if len(points) <= FEW_POINTS:  # a line of one or two calls is hardly seen: mark each call
            parts.extend(
                f'<circle class="point" cx="{x_of(i):.1f}" cy="{y_of(v):.1f}" r="3" fill="{colour}">'
                f"<title>{escape(s.name)}: call {i + 1:,}, {v:,} tokens</title></circle>"
                for i, v in points
            )
        for i in s.rejected[:MAX_POINTS]:
            parts.append(
                f'<circle cx="{x_of(i):.1f}" cy="{y_of(s.values[i]):.1f}" r="3.5" fill="{REJECTED_COLOUR}">'
                f"<title>{escape(s.name)}: call {i + 1:,} rejected, {s.values[i]:,} tokens</title></circle>"
            )
    parts.append(
        f'<line class="axis" x1="{left}" x2="{left}" y1="{top_pad}" y2="{top_pad + plot_h}"/>'
        f'<line class="axis" x1="{left}" x2="{left + plot_w}" '
        f'y1="{top_pad + plot_h}" y2="{top_pad + plot_h}"/>'
        f'<text class="label" x="{left + plot_w / 2:.1f}" y="{height - 6}" '
        f'text-anchor="middle">{escape(x_label)}</text>'
        f'<text class="label" transform="translate(14 {top_pad + plot_h / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text></svg>'
    )
    return "".join(parts)


def bar_chart(
    bars: list[Bar],
    *,
    maximum: float | None = None,
    limits: Sequence[Limit] = (),
    title: str = "",
    value_label: str = "",
    width: int = 760,
    percent: bool = False,
) -> str:
    """Horizontal bars, one per label, with vertical limit lines (e.g. the window at 100%)."""
    label_w, right, top_pad, row, bottom = 220, 90, 34, 22, 34
    plot_w = width - label_w - right
    height = top_pad + row * max(len(bars), 1) + bottom
    top = maximum if maximum is not None else max([b.value for b in bars] + [lim.value for lim in limits] + [1e-9])
    x_of = lambda v: label_w + plot_w * min(max(v, 0), top) / top
    parts = [_open(width, height, "bar-chart", title), f'<text class="title" x="8" y="20">{escape(title)}</text>']
    for value in ticks(top, 5):
        if value <= top:
            x = x_of(value)
            tick = f"{value:.0%}" if percent else short(value)
            parts.append(
                f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{top_pad}" y2="{height - bottom}"/>'
                f'<text class="tick" x="{x:.1f}" y="{height - bottom + 14}" '
                f'text-anchor="middle">{tick}</text>'
            )
    for n, bar in enumerate(bars):
        y = top_pad + n * row
        end = x_of(bar.value)
        note = bar.note if bar.note is not None else (f"{bar.value:.1%}" if percent else f"{bar.value:,.0f}")
        hover = f"<title>{escape(bar.title or bar.label)}</title>"
        parts.append(
            f'<text class="bar-label" x="{label_w - 6}" y="{y + 15}" '
            f'text-anchor="end">{escape(_clip(bar.label))}{hover}</text>'
            f'<rect class="bar" x="{label_w}" y="{y + 3}" width="{max(end - label_w, 1):.1f}" '
            f'height="{row - 6}" '
            f'fill="{bar.colour}">{hover}</rect>'
            f'<text class="bar-note" x="{end + 4:.1f}" y="{y + 15}">{escape(note)}</text>'
        )
    for lim in limits:
        x = x_of(lim.value)
        dash = ' stroke-dasharray="6 4"' if lim.dashed else ""
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top_pad - 4}" y2="{height - bottom}" stroke="{lim.colour}" '
            f'stroke-width="1.5"{dash}/><text class="limit" x="{x:.1f}" y="{top_pad - 8}" '
            f'text-anchor="middle" fill="{lim.colour}">{escape(lim.name)}</text>'
        )
    if value_label:
        parts.append(
            f'<text class="label" x="{label_w + plot_w / 2:.1f}" y="{height - 6}" '
            f'text-anchor="middle">{escape(value_label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _open(width: int, height: int, kind: str, title: str) -> str:
    return (
        f'<svg class="chart {kind}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="{escape(title)}" viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
    )


def _clip(label: str, limit: int = 30) -> str:
    """A long label shortened in the middle (the full one is the bar's hover title)."""
    return label if len(label) <= limit else label[: limit // 2 - 1] + "…" + label[-(limit // 2 - 1) :]
