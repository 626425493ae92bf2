"""SVG charts drawn on the server: no JavaScript, no CDN, and they print.

Each function returns a ``Markup`` string holding one ``<svg>`` element. Colours and sizes are
presentation attributes (never ``style=``), so the dashboard's Content-Security-Policy can forbid
inline styles. Every number a chart shows is also in a ``<title>`` (a tooltip, and what a screen
reader says) and in the table next to it, which stays the authority.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

from taskeval.contract import BAND_NAMES, BANDS

BAND_ORDER = BAND_NAMES  # failing .. excellent
BAND_MARKS = (*sorted(low for low, _name in BANDS), 100)  # 0, each band's lower bound, 100
BAND_COLOURS = {
    "failing": "#c0392b",
    "weak": "#e67e22",
    "acceptable": "#d4ac0d",
    "strong": "#27ae60",
    "excellent": "#1e8449",
}
LINE = "#2c6fbb"
GRID = "#d0d7de"
TEXT = "#57606a"


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def band_bar(counts: dict[str, int], *, width: int = 160, height: int = 14) -> Markup:
    """One horizontal bar split by band, widths proportional to the counts."""
    total = sum(counts.get(b, 0) for b in BAND_ORDER)
    label = ", ".join(f"{b} {counts.get(b, 0)}" for b in BAND_ORDER)
    parts = [f'<svg class="bands" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{escape(label)}</title>"]
    if total == 0:
        parts.append(f'<rect width="{width}" height="{height}" fill="{GRID}"/>')
    x = 0.0
    for band in BAND_ORDER:
        n = counts.get(band, 0)
        if not n:
            continue
        w = width * n / total
        parts.append(f'<rect x="{_num(x)}" y="0" width="{_num(w)}" height="{height}" '
                     f'fill="{BAND_COLOURS[band]}"><title>{band}: {n}</title></rect>')
        x += w
    parts.append("</svg>")
    return Markup("".join(parts))


def trend(points: Sequence[tuple[str, float, int]], *, width: int = 150, height: int = 36,
          axes: bool = False) -> Markup:
    """A weekly trend line: ``points`` are (week, mean overall, PR count), oldest first.

    The y axis is fixed at 0..100 so lines are comparable across rows. With ``axes`` (the agent
    page) the band thresholds and the first and last week are drawn as well.
    """
    pad_l, pad_r, pad_t, pad_b = (28, 6, 6, 16) if axes else (2, 2, 2, 2)
    inner_w, inner_h = width - pad_l - pad_r, height - pad_t - pad_b
    summary = "; ".join(f"{w}: {_num(m)} ({n} PRs)" for w, m, n in points) or "no data"
    parts = [f'<svg class="trend" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>weekly mean overall score: {escape(summary)}</title>"]

    def y(score: float) -> float:
        return pad_t + inner_h * (1 - max(0.0, min(100.0, score)) / 100)

    def x(i: int) -> float:
        return pad_l + (inner_w * i / (len(points) - 1) if len(points) > 1 else inner_w / 2)

    if axes:
        for mark in BAND_MARKS:
            parts.append(f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{_num(y(mark))}" '
                         f'y2="{_num(y(mark))}" stroke="{GRID}" stroke-width="1"/>')
            parts.append(f'<text x="{pad_l - 4}" y="{_num(y(mark) + 3)}" font-size="9" '
                         f'text-anchor="end" fill="{TEXT}">{mark}</text>')
        if points:
            parts.append(f'<text x="{pad_l}" y="{height - 3}" font-size="9" fill="{TEXT}">'
                         f"{escape(points[0][0])}</text>")
            parts.append(f'<text x="{width - pad_r}" y="{height - 3}" font-size="9" '
                         f'text-anchor="end" fill="{TEXT}">{escape(points[-1][0])}</text>')
    else:
        parts.append(f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{_num(y(60))}" y2="{_num(y(60))}" '
                     f'stroke="{GRID}" stroke-width="1" stroke-dasharray="2 2"/>')
    if points:
        coords = " ".join(f"{_num(x(i))},{_num(y(m))}" for i, (_w, m, _n) in enumerate(points))
        if len(points) > 1:
            parts.append(f'<polyline points="{coords}" fill="none" stroke="{LINE}" '
                         f'stroke-width="1.5" stroke-linejoin="round"/>')
        radius = 2.5 if axes else 1.5
        for i, (week, mean, n) in enumerate(points):
            parts.append(f'<circle cx="{_num(x(i))}" cy="{_num(y(mean))}" r="{radius}" fill="{LINE}">'
                         f"<title>week of {escape(week)}: {_num(mean)} over {n} PRs</title></circle>")
    parts.append("</svg>")
    return Markup("".join(parts))


def histogram(buckets: Sequence[tuple[str, int, str]], *, width: int = 420,
              height: int = 160, ticks: dict[int, str] | None = None) -> Markup:
    """Vertical bars: ``buckets`` are (label, count, colour), left to right. ``ticks``: the axis
    text, by bucket index, at the bucket's left edge (default: each bucket's label under it)."""
    pad_l, pad_r, pad_t, pad_b = 30, 6, 8, 20
    inner_w, inner_h = width - pad_l - pad_r, height - pad_t - pad_b
    top = max((n for _l, n, _c in buckets), default=0) or 1
    summary = ", ".join(f"{label}: {n}" for label, n, _c in buckets)
    parts = [f'<svg class="histogram" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>score distribution: {escape(summary)}</title>",
             f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{pad_t + inner_h}" y2="{pad_t + inner_h}" '
             f'stroke="{GRID}"/>',
             f'<text x="{pad_l - 4}" y="{pad_t + 8}" font-size="9" text-anchor="end" '
             f'fill="{TEXT}">{top}</text>',
             f'<text x="{pad_l - 4}" y="{pad_t + inner_h}" font-size="9" text-anchor="end" '
             f'fill="{TEXT}">0</text>']
    slot = inner_w / max(1, len(buckets))
    for i, (label, n, colour) in enumerate(buckets):
        h = inner_h * n / top
        bx = pad_l + i * slot + slot * 0.1
        parts.append(f'<rect x="{_num(bx)}" y="{_num(pad_t + inner_h - h)}" width="{_num(slot * 0.8)}" '
                     f'height="{_num(h)}" fill="{colour}"><title>{escape(label)}: {n}</title></rect>')
        if ticks is None:
            parts.append(f'<text x="{_num(bx + slot * 0.4)}" y="{height - 6}" font-size="9" '
                         f'text-anchor="middle" fill="{TEXT}">{escape(label)}</text>')
        elif i in ticks:
            edge = pad_l + i * slot
            parts.append(f'<line x1="{_num(edge)}" x2="{_num(edge)}" y1="{pad_t + inner_h}" '
                         f'y2="{pad_t + inner_h + 3}" stroke="{GRID}"/>'
                         f'<text x="{_num(edge)}" y="{height - 6}" font-size="9" text-anchor="middle" '
                         f'fill="{TEXT}">{escape(ticks[i])}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def line(points: Sequence[tuple[str, float, int]], *, unit: str, label: str, width: int = 560,
         height: int = 180) -> Markup:
    """A weekly line on its own scale (0 to the largest value): ``points`` are (week, value,
    PR count), oldest first; for quantities without a fixed range, such as hours."""
    pad_l, pad_r, pad_t, pad_b = 40, 6, 6, 16
    inner_w, inner_h = width - pad_l - pad_r, height - pad_t - pad_b
    top = max((v for _w, v, _n in points), default=0.0) or 1.0
    summary = "; ".join(f"{w}: {_num(v)} {unit} ({n} PRs)" for w, v, n in points) or "no data"
    parts = [f'<svg class="trend" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{escape(label)}: {escape(summary)}</title>"]

    def y(value: float) -> float:
        return pad_t + inner_h * (1 - max(0.0, value) / top)

    def x(i: int) -> float:
        return pad_l + (inner_w * i / (len(points) - 1) if len(points) > 1 else inner_w / 2)

    for mark in (0.0, top / 2, top):
        parts.append(f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{_num(y(mark))}" y2="{_num(y(mark))}" '
                     f'stroke="{GRID}" stroke-width="1"/>')
        parts.append(f'<text x="{pad_l - 4}" y="{_num(y(mark) + 3)}" font-size="9" text-anchor="end" '
                     f'fill="{TEXT}">{_num(mark)} {escape(unit)}</text>')
    if points:
        parts.append(f'<text x="{pad_l}" y="{height - 3}" font-size="9" fill="{TEXT}">{escape(points[0][0])}</text>')
        parts.append(f'<text x="{width - pad_r}" y="{height - 3}" font-size="9" text-anchor="end" '
                     f'fill="{TEXT}">{escape(points[-1][0])}</text>')
        if len(points) > 1:
            coords = " ".join(f"{_num(x(i))},{_num(y(v))}" for i, (_w, v, _n) in enumerate(points))
            parts.append(f'<polyline points="{coords}" fill="none" stroke="{LINE}" stroke-width="1.5" '
                         f'stroke-linejoin="round"/>')
        for i, (week, value, n) in enumerate(points):
            parts.append(f'<circle cx="{_num(x(i))}" cy="{_num(y(value))}" r="2.5" fill="{LINE}">'
                         f"<title>week of {escape(week)}: {_num(value)} {escape(unit)} over {n} PRs</title></circle>")
    parts.append("</svg>")
    return Markup("".join(parts))
