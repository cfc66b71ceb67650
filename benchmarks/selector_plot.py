"""A dependency-free SVG bar chart of the selector benchmark: completed and EM per family, one group
of bars per (model, strategy). Plain SVG so that the plot is reproducible without matplotlib."""
from __future__ import annotations

from pathlib import Path

COLOURS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860"]


def write_svg(table: list[dict], path: Path) -> None:
    families = sorted({r["family"] for r in table}, key=lambda f: (f == "ALL", f))
    series = sorted({(r["model"], r["strategy"]) for r in table})
    value = {(r["model"], r["strategy"], r["family"]): r for r in table}
    bar, gap, top, left, height = 9, 18, 40, 50, 220
    group = len(series) * 2 * bar + gap
    width = left + group * len(families) + 260
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + height + 60}" '
           'font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="20" font-size="14">Held-out edits: completed (light) and exact match (dark) '
           'per family</text>']
    for tick in range(0, 101, 25):
        y = top + height - height * tick / 100
        out.append(f'<line x1="{left}" x2="{left + group * len(families)}" y1="{y}" y2="{y}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{tick}%</text>')
    for fi, family in enumerate(families):
        x0 = left + fi * group
        for si, (model, strategy) in enumerate(series):
            row = value.get((model, strategy, family))
            if row is None:
                continue
            for k, key in enumerate(("completed", "em")):
                v = row.get(key) or 0.0
                h = height * v
                x = x0 + (si * 2 + k) * bar
                opacity = "0.45" if key == "completed" else "1"
                out.append(f'<rect x="{x}" y="{top + height - h}" width="{bar - 1}" height="{h}" '
                           f'fill="{COLOURS[si % len(COLOURS)]}" fill-opacity="{opacity}">'
                           f'<title>{model} {strategy} {family} {key} {v:.2f} (n={row["n"]})</title></rect>')
        out.append(f'<text x="{x0 + (group - gap) / 2}" y="{top + height + 16}" text-anchor="middle">{family}</text>')
    for si, (model, strategy) in enumerate(series):
        y = top + 14 * si
        lx = left + group * len(families) + 14
        out.append(f'<rect x="{lx}" y="{y}" width="10" height="10" fill="{COLOURS[si % len(COLOURS)]}"/>')
        out.append(f'<text x="{lx + 14}" y="{y + 9}">{model} · {strategy}</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")
