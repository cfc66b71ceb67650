"""What `cad-apply` reports per job: the `JobReport`, its final status, and the summary table.

Owns the status words (ok | unchanged | skipped | truncated | refused | failed | not-run), the
explanation a job gets when its edit changed nothing, the job's label relative to ``--root`` and the
markdown summary printed at the end of a run (`clients.batch`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from clients.jobs import Job
from engine.api import UNCHANGED_HINT

# An edit that decoded a complete program which changes nothing: the model found nothing to change,
# or rewrote lines exactly as they were. Said, so that "unchanged" is not mistaken for success.
UNCHANGED_DETAIL = f"the model's edit changed nothing: {UNCHANGED_HINT} (--model)"


@dataclass
class JobReport:
    job: Job
    status: str = "pending"    # ok | unchanged | skipped | truncated | refused | failed | not-run
    detail: str = ""
    seconds: float = 0.0
    stats: dict = field(default_factory=dict)

    def finish(self, *, truncated: bool, changed: bool) -> None:
        """The final status of a computed edit; an unchanged one says why it may be so."""
        self.status = "truncated" if truncated else "ok" if changed else "unchanged"
        if self.status == "unchanged" and not self.detail:
            self.detail = UNCHANGED_DETAIL


def relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when it is inside it, else as given."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


DETAIL_WIDTH = 180   # a longer detail (an error's full text) is cut, visibly, in the table


def _clip(detail: str) -> str:
    return detail if len(detail) <= DETAIL_WIDTH else detail[:DETAIL_WIDTH - 1] + "…"


def summary(reports: list[JobReport], root: Path) -> str:
    """The run's markdown table (status, file[:range], time, detail) and the totals per status."""
    rows = [("status", "file", "time", "detail")]
    for r in reports:
        rows.append((r.status, relative(r.job.path, root) + (f":{r.job.line_range[0]}-{r.job.line_range[1]}"
                                                              if r.job.line_range else ""),
                     f"{r.seconds:.1f}s", _clip(r.detail)))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = []
    for k, row in enumerate(rows):
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(row[:3], widths)) + " | " + row[3] + " |")
        if k == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|---|")
    counts: dict[str, int] = {}
    for r in reports:
        counts[r.status] = counts.get(r.status, 0) + 1
    lines.append("totals: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return "\n".join(lines)
