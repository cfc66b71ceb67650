"""HumanEvalPack-Fix edit pairs: loading and a fixed, seeded train/held-out split.

A pair's document is ``declaration + buggy_solution``, its gold is
``declaration + canonical_solution`` and its instruction ``Fix bugs in {entry_point}.``.
Data lives in ``$CAD_DATA_DIR`` or ``<repo>/../shared/data/humanevalpack`` as
``python.jsonl`` and ``js.jsonl``.
"""
from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

__all__ = ["Pair", "CorpusError", "LANGS", "data_dir", "load_pairs", "split"]

LANGS = ("python", "js")
_REQUIRED = ("task_id", "declaration", "buggy_solution", "canonical_solution", "entry_point", "test")


class CorpusError(RuntimeError):
    """The corpus files are missing or malformed; the message names the file and the fix."""


@dataclass(frozen=True)
class Pair:
    """One (document, gold) edit pair with its instruction and tests."""

    task_id: str
    lang: str
    document: str
    gold: str
    instruction: str
    entry_point: str
    test: str
    declaration: str


def data_dir() -> Path:
    """``$CAD_DATA_DIR`` if set, else ``<repo>/../shared/data/humanevalpack``."""
    env = os.environ.get("CAD_DATA_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "humanevalpack"


def load_pairs(lang: str) -> list[Pair]:
    """All pairs of one language (``"python"`` or ``"js"``), in file order."""
    if lang not in LANGS:
        raise CorpusError(f"unknown corpus language {lang!r}; use one of {LANGS}")
    path = data_dir() / f"{lang}.jsonl"
    if not path.is_file():
        raise CorpusError(f"{path} not found: set CAD_DATA_DIR to the folder holding "
                          f"HumanEvalPack's python.jsonl and js.jsonl")
    pairs: list[Pair] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
            missing = [k for k in _REQUIRED if k not in row]
            if missing:
                raise CorpusError(f"{path}:{lineno}: record lacks field(s) {missing}")
            decl = row["declaration"]
            pairs.append(Pair(
                task_id=row["task_id"], lang=lang,
                document=decl + row["buggy_solution"], gold=decl + row["canonical_solution"],
                instruction=f"Fix bugs in {row['entry_point']}.", entry_point=row["entry_point"],
                test=row["test"], declaration=decl,
            ))
    return pairs


def split(pairs: Sequence[Pair], seed: int = 0, held_out_frac: float = 0.2) -> tuple[list[Pair], list[Pair]]:
    """Deterministic shuffle with ``random.Random(seed)``; returns ``(train, held_out)``
    with ``round(len * held_out_frac)`` held-out pairs (in original order within each part)."""
    if not 0.0 <= held_out_frac <= 1.0:
        raise ValueError(f"held_out_frac must be in [0, 1], got {held_out_frac}")
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    n_held = round(len(pairs) * held_out_frac)
    held = set(order[:n_held])
    train = [p for i, p in enumerate(pairs) if i not in held]
    held_out = [p for i, p in enumerate(pairs) if i in held]
    return train, held_out
