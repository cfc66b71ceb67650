"""Shared output helpers for every benchmark: argparse options, markdown tables, JSON reports.

Each benchmark is runnable as ``python -m benchmarks.<name> --json out.json`` and prints a
markdown table. Use :func:`bench_argparser` for the common options and :func:`write_report`
to print the table and write the JSON file.
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from evaluation.metrics import percentile  # noqa: F401  (re-exported for the benchmarks)


def bench_argparser(description: str, *, default_cases: int | None = None) -> argparse.ArgumentParser:
    """An ArgumentParser with ``--json PATH`` and ``--cases N`` (N=None means all cases)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--json", dest="json_path", type=Path, default=None,
                        help="write the full results as JSON to this path")
    parser.add_argument("--cases", type=int, default=default_cases,
                        help="only use the first N cases per corpus (default: all)")
    return parser


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if value != 0 and abs(value) < 0.01:
            return f"{value:.4f}"
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


def markdown_table(rows: Sequence[dict], columns: Sequence[str] | None = None) -> str:
    """Render ``rows`` (dicts sharing keys) as a GitHub markdown table."""
    if not rows:
        return "(no rows)"
    if columns is None:
        columns = []
        for row in rows:
            for key in row:
                if key not in columns:
                    columns.append(key)
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(c, "")) for c in columns) + " |")
    return "\n".join(lines)


def environment() -> dict:
    """A small description of where the numbers were measured."""
    return {"python": sys.version.split()[0], "platform": platform.platform(),
            "machine": platform.machine(), "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def emit(text: str, *, md_path: Path | None, json_path: Path | None, payload: dict) -> None:
    """Print a benchmark's markdown ``text``; write it to ``md_path`` and ``payload`` as JSON to
    ``json_path`` (each when set)."""
    print(text)
    if json_path:
        Path(json_path).write_text(json.dumps(payload, indent=2))
    if md_path:
        Path(md_path).write_text(text)


def write_report(name: str, rows: list[dict], json_path: Path | str | None,
                 extra: dict | None = None, *, columns: Sequence[str] | None = None,
                 title: str | None = None) -> dict:
    """Print ``rows`` as a markdown table and, if ``json_path`` is set, write a JSON report.

    The JSON object is ``{"benchmark": name, "rows": rows, "environment": {...}, **extra}``
    and is also returned.
    """
    print(f"## {title or name}\n")
    print(markdown_table(rows, columns))
    print()
    report = {"benchmark": name, "rows": rows, "environment": environment()}
    if extra:
        report.update(extra)
    if json_path is not None:
        path = Path(json_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"wrote {path}")
    return report


def token_fns(tokenizer):
    """``(encode, decode)`` for a HF tokenizer: no special tokens, no clean-up of spaces, so
    ``decode(encode(s)) == s`` for every text the tokenizer can represent losslessly."""

    def encode(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False)

    def decode(ids) -> str:
        return tokenizer.decode(list(ids), clean_up_tokenization_spaces=False, skip_special_tokens=False)

    return encode, decode


def load_corpora(cases: int | None = None, langs: Sequence[str] = ("python", "js")) -> dict:
    """``{lang: pairs}`` from :mod:`evaluation.corpus`, each cut to the first ``cases`` pairs."""
    from evaluation.corpus import load_pairs

    return {lang: load_pairs(lang)[:cases] if cases else load_pairs(lang) for lang in langs}
