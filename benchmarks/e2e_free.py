"""Free-run (untrained) mode of the end-to-end benchmark (seed Table 24 / Appendix P).

CaD (line programs, all overhead reductions on) and full regeneration decode without forcing.
Per corpus: exact match with the gold, parse rate (CaD: complete program that resolves; regen:
stopped at the framing's end or EOS, not truncated), op-level copy endpoint accuracy against the
line oracle (i-th copy op vs i-th oracle copy op, start and end separately), decoded / copied /
forced tokens per case, forwards and wall-clock per case. Budget per case: gold tokens + `--free-extra`
(default 64).
"""
from __future__ import annotations

from benchmarks.e2e_runs import Variant, endpoint_accuracy, run_variant

FREE_COLUMNS = ["corpus", "strategy", "cases", "EM", "parse_rate", "start_acc", "end_acc", "decoded/case",
                "copied/case", "forced/case", "fwd/case", "wall_ms/case"]

FREE_VARIANTS = (
    Variant("cad-line", "cad", dict(ride_along=True, speculative_headers=True)),
    Variant("regen", "regen", {"drafter": "none"}),
)


def _row(corpus: str, name: str, rs: list[dict]) -> dict:
    n = len(rs)
    gold_copies = sum(r["endpoints"][0] for r in rs)
    return {
        "corpus": corpus, "strategy": name, "cases": n,
        "EM": sum(r["ok"] for r in rs) / n, "parse_rate": sum(r["parsed"] for r in rs) / n,
        "start_acc": sum(r["endpoints"][1] for r in rs) / gold_copies if gold_copies else float("nan"),
        "end_acc": sum(r["endpoints"][2] for r in rs) / gold_copies if gold_copies else float("nan"),
        "decoded/case": sum(r["decoded"] for r in rs) / n, "copied/case": sum(r["copied"] for r in rs) / n,
        "forced/case": sum(r["forced"] for r in rs) / n, "fwd/case": sum(r["forwards"] for r in rs) / n,
        "wall_ms/case": sum(r["wall_ms"] for r in rs) / n,
    }


def run_free(args, loaded, corpora, log) -> dict:
    from engine.program.oracle import line_program

    records = []
    for lang, pairs in corpora.items():
        for i, pair in enumerate(pairs, 1):
            log(f"[e2e --free] {lang} case {i}/{len(pairs)} {pair.task_id}")
            budget = len(loaded.tokenizer.encode(pair.gold, add_special_tokens=False)) + args.free_extra
            oracle = line_program(pair.document, pair.gold)
            for v in FREE_VARIANTS:
                rec = run_variant(v, loaded, pair, forced=False, repeats=1, max_new_tokens=budget,
                                  device=loaded.device)
                rec["endpoints"] = endpoint_accuracy(rec["program"], oracle)
                rec["program"] = str(rec["program"])
                records.append(rec)
    rows = []
    groups = list(corpora) + (["pooled"] if len(corpora) > 1 else [])
    for corpus in groups:
        for v in FREE_VARIANTS:
            rs = [r for r in records if r["variant"] == v.name and (corpus == "pooled" or r["lang"] == corpus)]
            if rs:
                rows.append(_row(corpus, v.name, rs))
    return {"rows": rows, "extra": {"records": records}}
