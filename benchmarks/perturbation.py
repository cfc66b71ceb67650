"""Endpoint-noise perturbation (seed Table 8): how precise must span selection be?

Each CopyLines endpoint of the line oracle is shifted by an independent integer drawn from
U[-eps, +eps] (``random.Random(seed)``), clamped to [1, n]; a reversed range is swapped back
so start <= end. The program is resolved in clipped mode and compared with the gold, both
byte-exact and trimmed (``.strip()``, the seed's metric). ``trials`` trials per case.

Run: ``python -m benchmarks.perturbation --json out.json [--cases N] [--trials 5] [--seed 0]``.
"""
from __future__ import annotations

import random

from benchmarks.common import bench_argparser, load_corpora, write_report
from engine.program.grammar import CopyLines
from engine.program.oracle import line_program
from engine.program.resolver import document_lines, resolve

EPSILONS = (0, 1, 2, 3, 5)


def perturb(program, n_lines: int, eps: int, rng: random.Random):
    """``program`` with every CopyLines endpoint shifted by U[-eps, eps], clamped, ordered."""
    out = []
    for op in program:
        if isinstance(op, CopyLines):
            s = min(max(op.start + rng.randint(-eps, eps), 1), n_lines)
            e = min(max(op.end + rng.randint(-eps, eps), 1), n_lines)
            op = CopyLines(min(s, e), max(s, e))
        out.append(op)
    return tuple(out)


def measure(pairs, epsilons=EPSILONS, trials: int = 5, seed: int = 0, corpus: str = "") -> list[dict]:
    """One row per epsilon: exact and trimmed EM over ``trials x len(pairs)`` attempts
    (RNG seeded by ``(seed, corpus, eps)``, so each row is reproducible on its own)."""
    programs = [(p, line_program(p.document, p.gold), len(document_lines(p.document))) for p in pairs]
    rows = []
    for eps in epsilons:
        rng = random.Random(f"{seed}:{corpus}:{eps}")
        exact = trimmed = 0
        for _ in range(trials):
            for pair, prog, n in programs:
                text = resolve(perturb(prog, n, eps, rng), pair.document, "clipped").text
                exact += text == pair.gold
                trimmed += text.strip() == pair.gold.strip()
        total = trials * len(programs)
        rows.append(_row(eps, total, exact, trimmed))
    return rows


def _row(eps: int, total: int, exact: int, trimmed: int) -> dict:
    return {"eps": eps, "attempts": total, "exact": exact, "trimmed": trimmed,
            "em_exact": exact / total if total else 0.0, "em_trimmed": trimmed / total if total else 0.0}


def main(argv=None) -> dict:
    parser = bench_argparser(__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rows = []
    for name, pairs in load_corpora(args.cases).items():
        rows += [{"corpus": name, **r} for r in measure(pairs, EPSILONS, args.trials, args.seed, name)]
    for eps in EPSILONS:  # pooled = the per-corpus attempts together
        part = [r for r in rows if r["eps"] == eps]
        rows.append({"corpus": "pooled", **_row(eps, *(sum(r[k] for r in part) for k in ("attempts", "exact", "trimmed")))})
    return write_report("perturbation", rows, args.json_path,
                        {"trials": args.trials, "seed": args.seed, "epsilons": list(EPSILONS)},
                        title="Oracle EM under CopyLines endpoint noise (clipped resolve)")


if __name__ == "__main__":
    main()
