"""A dependency-free SVG scatter of `benchmarks.speculative`: per case, speedup over AR (wall) against the
document's length in tokens (log scale), one panel per mode (forced, free), one colour per strategy.
Plain SVG so that the plot is reproducible without matplotlib (as `benchmarks.selector_plot`)."""
from __future__ import annotations

import math
from pathlib import Path

COLOURS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c",
           "#ccb974", "#64b5cd", "#1b9e77", "#d95f02"]


def _ticks(lo: float, hi: float) -> list[float]:
    out = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        out += [m * 10 ** e for m in (1, 2, 5) if lo <= m * 10 ** e <= hi]
    return out


def write_svg(points: list[dict], path: Path, *, title: str = "Speedup over AR vs document length") -> None:
    """``points``: ``{mode, strategy, doc_tokens, speedup, case_id, corpus}`` dicts."""
    modes = list(dict.fromkeys(p["mode"] for p in points)) or ["forced"]
    strategies = list(dict.fromkeys(p["strategy"] for p in points))
    colour = {s: COLOURS[i % len(COLOURS)] for i, s in enumerate(strategies)}
    xs = [p["doc_tokens"] for p in points] or [100, 1000]
    ys = [p["speedup"] for p in points if p["speedup"] > 0] or [1.0]
    xlo, xhi = min(xs) / 1.2, max(xs) * 1.2
    ylo, yhi = min(min(ys) / 1.2, 0.5), max(max(ys) * 1.2, 2.0)
    pw, ph, left, top, gap = 360, 260, 60, 50, 70
    width = left + len(modes) * (pw + gap) + 180
    lx = lambda v: (math.log10(v) - math.log10(xlo)) / (math.log10(xhi) - math.log10(xlo)) * pw  # noqa: E731
    ly = lambda v: ph - (math.log10(v) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo)) * ph  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + ph + 60}" '
           'font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="20" font-size="14">{title} (log-log; 1 = AR)</text>']
    for mi, mode in enumerate(modes):
        x0 = left + mi * (pw + gap)
        out.append(f'<text x="{x0 + pw / 2}" y="{top - 8}" text-anchor="middle" font-size="12">{mode}</text>')
        out.append(f'<rect x="{x0}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
        for t in _ticks(ylo, yhi):
            y = top + ly(t)
            stroke = "#888" if t == 1 else "#e4e4e4"
            out.append(f'<line x1="{x0}" x2="{x0 + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="{stroke}"/>')
            out.append(f'<text x="{x0 - 5}" y="{y + 4:.1f}" text-anchor="end">{t:g}x</text>')
        for t in _ticks(xlo, xhi):
            x = x0 + lx(t)
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + ph}" stroke="#f0f0f0"/>')
            out.append(f'<text x="{x:.1f}" y="{top + ph + 14}" text-anchor="middle">{t:g}</text>')
        out.append(f'<text x="{x0 + pw / 2}" y="{top + ph + 32}" text-anchor="middle">document tokens</text>')
        for p in points:
            if p["mode"] != mode or p["speedup"] <= 0:
                continue
            cx, cy = x0 + lx(p["doc_tokens"]), top + ly(p["speedup"])
            shape = "circle" if p["strategy"].startswith("cad") else "rect"
            tip = f'<title>{p["strategy"]} {p["corpus"]} {p["case_id"]}: {p["speedup"]:.2f}x</title>'
            if shape == "circle":
                out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3" fill="{colour[p["strategy"]]}" '
                           f'fill-opacity="0.8">{tip}</circle>')
            else:
                out.append(f'<rect x="{cx - 3:.1f}" y="{cy - 3:.1f}" width="6" height="6" '
                           f'fill="{colour[p["strategy"]]}" fill-opacity="0.8">{tip}</rect>')
    lx0 = left + len(modes) * (pw + gap) - gap + 20
    for si, s in enumerate(strategies):
        y = top + 14 * si
        out.append(f'<rect x="{lx0}" y="{y}" width="10" height="10" fill="{colour[s]}"/>')
        out.append(f'<text x="{lx0 + 14}" y="{y + 9}">{s}</text>')
    out.append(f'<text x="{lx0}" y="{top + 14 * len(strategies) + 14}" fill="#666">squares: regeneration; '
               'circles: CaD</text>')
    out.append("</svg>")
    Path(path).write_text("\n".join(out) + "\n")
