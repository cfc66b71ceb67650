"""Edit jobs for `cad-apply`: what to edit, parsed from the command line or a jobs file.

Owns: the `Job` record, reading `jobs.jsonl` (one `{"path", "instruction", "range"?}` object per
line; range = [start_line, end_line], 1-based inclusive), and the `--root` confinement check
(symlinks resolved; anything outside the root is refused).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


class JobsFileError(ValueError):
    """A jobs file line is malformed; the message names the file, the line and the fix."""


class OutsideRootError(PermissionError):
    """A job's path resolves outside --root; cad-apply refuses to touch it."""


@dataclass(frozen=True)
class Job:
    path: Path                                   # as given (relative paths are relative to base)
    instruction: str
    line_range: tuple[int, int] | None = None    # 1-based inclusive

    def key(self) -> dict:
        """Identity of the job in the journal (path is the resolved absolute path)."""
        return {
            "path": str(self.path),
            "instruction": self.instruction,
            "range": list(self.line_range) if self.line_range else None,
        }

    def label(self) -> str:
        rng = f":{self.line_range[0]}-{self.line_range[1]}" if self.line_range else ""
        return f"{self.path}{rng}"


def _parse_range(value, where: str) -> tuple[int, int] | None:
    if value is None:
        return None
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise JobsFileError(f"{where}: \"range\" must be [start_line, end_line] (two integers), got {value!r}")
    start, end = value
    if start < 1 or end < start:
        raise JobsFileError(f"{where}: \"range\" {value!r} must satisfy 1 <= start_line <= end_line (1-based, inclusive)")
    return (start, end)


def read_jobs_file(path: Path) -> list[Job]:
    """Parse a jobs.jsonl file; relative job paths are relative to the jobs file's directory."""
    path = Path(path)
    try:
        raw_lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise JobsFileError(f"{path}: cannot read jobs file ({exc.strerror})") from exc
    jobs: list[Job] = []
    for number, raw in enumerate(raw_lines, start=1):
        where = f"{path}:{number}"
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise JobsFileError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
        if not isinstance(obj, dict):
            raise JobsFileError(f"{where}: expected a JSON object {{\"path\", \"instruction\", \"range\"?}}")
        unknown = set(obj) - {"path", "instruction", "range"}
        if unknown:
            raise JobsFileError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: path, instruction, range")
        job_path, instruction = obj.get("path"), obj.get("instruction")
        if not isinstance(job_path, str) or not job_path:
            raise JobsFileError(f"{where}: \"path\" must be a non-empty string")
        if not isinstance(instruction, str) or not instruction.strip():
            raise JobsFileError(f"{where}: \"instruction\" must be a non-empty string")
        p = Path(job_path)
        if not p.is_absolute():
            p = path.parent / p
        jobs.append(Job(p, instruction, _parse_range(obj.get("range"), where)))
    return jobs


def confine(job: Job, root: Path) -> Job:
    """Return the job with its path resolved (symlinks followed); refuse paths outside root."""
    root_resolved = Path(root).resolve()
    resolved = Path(job.path).resolve()
    if resolved != root_resolved and root_resolved not in resolved.parents:
        raise OutsideRootError(
            f"{job.path}: resolves to {resolved}, outside --root {root_resolved}; "
            "refused (pass a wider --root if this is intended)"
        )
    return Job(resolved, job.instruction, job.line_range)
