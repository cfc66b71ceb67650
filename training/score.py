"""``cad-train score``: several models side by side on the same cases, teacher-forced.

For each model spec (``"default"``, ``"default+none"``, ``"<base>+<adapter dir>"``, a fully fine-tuned
directory...), the first ``cases`` cases of a data split are rendered with the prompt profile that
model's weights record, and scored in one forward each (``training.loop.teacher_forced_scores``):
``val_loss`` (token-weighted cross-entropy of the program tokens) and ``val_exact`` (the share of cases
the greedy grammar-constrained decoder reproduces exactly: a lower bound of free-run exact match).
It is the quick check of an extracted adapter against the full model it came from; free-run figures
come from ``benchmarks.selector`` and ``benchmarks.everyday``.
"""
from __future__ import annotations

import time
from pathlib import Path


def score_models(data: str | Path, specs: list[str], *, split: str = "val", cases: int = 60,
                 log=lambda message: None) -> list[dict]:
    """One row per spec: {model, cases, val_loss, val_exact, seconds}."""
    from engine.backends.model import load_model
    from training.loop import render_all, teacher_forced_scores

    path = Path(data) / f"{split}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: pass a directory made by `cad-train data`")
    rows = []
    for spec in specs:
        t0 = time.perf_counter()
        loaded = load_model(spec, "cpu")
        rendered = render_all(path, loaded.tokenizer, loaded.prompt_profile, cases)
        row = {"model": spec, "cases": len(rendered), **teacher_forced_scores(loaded.model, rendered),
               "seconds": round(time.perf_counter() - t0, 1)}
        log(f"{spec}: val_loss {row['val_loss']:.4f}, val_exact {row['val_exact']:.3f} ({row['cases']} cases)")
        rows.append(row)
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| model | cases | val loss | val_exact |", "|---|---|---|---|"]
    lines += [f"| {r['model']} | {r['cases']} | {r['val_loss']:.4f} | {r['val_exact']:.3f} |" for r in rows]
    return "\n".join(lines)
