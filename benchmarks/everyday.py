"""Everyday edits (``evaluation.everyday``): does the product do what a new user asks, in file types it never saw?

For each model (and strategy), every case of the hand-written corpus is edited as ``cad-apply`` would
edit it, and its outcome is one of:

* ``exact``: the result is the gold, byte for byte (for a ``noop`` case: nothing changed);
* ``unchanged``: the model's edit changed nothing although a change was asked for;
* ``wrong``: it changed the file, but not into the gold (a ``noop`` case that was changed is wrong);
* ``incomplete``: the program was truncated or repeating (never applied by the product), or the
  edit failed with an error.

``flagged`` counts changed results that carried the low-confidence warning (what the user is told
to review). One row per (model, strategy, kind) and an ALL row; every case's outcome in the JSON.

    python -m benchmarks.everyday --models default,default+none --json benchmarks/results/everyday.json
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict

from benchmarks.common import write_report
from evaluation.everyday import everyday_cases

OUTCOMES = ("exact", "unchanged", "wrong", "incomplete")


def outcome_of(case, text: str | None, incomplete: bool) -> str:
    if incomplete or text is None:
        return "incomplete"
    if text == case.gold:
        return "exact"
    return "unchanged" if text == case.document else "wrong"


def run_case(engine, case, strategy: str) -> dict:
    from engine.api import EditRequest
    from engine.edit import LOW_CONFIDENCE

    start = time.perf_counter()
    row = {"case_id": case.case_id, "file_type": case.file_type, "kind": case.kind, "strategy": strategy}
    try:
        result = engine.edit(EditRequest(document=case.document, instruction=case.instruction, strategy=strategy))
    except Exception as exc:  # an error is an outcome here, not the end of the run
        row.update(outcome="incomplete", error=f"{type(exc).__name__}: {exc}"[:300])
    else:
        stats = result.stats
        row.update(outcome=outcome_of(case, result.text, stats.truncated),   # a repeating gen is truncated too
                   confidence=stats.confidence, program=str(result.program)[:300],
                   flagged=any(w.startswith("low confidence") for w in result.warnings),
                   below_threshold=stats.confidence is not None and stats.confidence < LOW_CONFIDENCE)
    row["seconds"] = round(time.perf_counter() - start, 3)
    return row


def summarize(rows: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["model"], r["strategy"], "ALL")].append(r)
        groups[(r["model"], r["strategy"], r["kind"])].append(r)
    table = []
    for (model, strategy, kind), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] != "ALL",
                                                                             kv[0][2])):
        counts = Counter(r["outcome"] for r in rs)
        changed = [r for r in rs if r["outcome"] == "wrong" or (r["outcome"] == "exact" and r["kind"] != "noop")]
        table.append({"model": model, "strategy": strategy, "kind": kind, "n": len(rs),
                      **{o: counts.get(o, 0) for o in OUTCOMES},
                      "exact_rate": round(counts.get("exact", 0) / len(rs), 3),
                      "flagged_wrong": f"{sum(1 for r in changed if r['outcome'] == 'wrong' and r.get('flagged'))}"
                                       f"/{sum(1 for r in changed if r['outcome'] == 'wrong')}",
                      "flagged_exact": f"{sum(1 for r in changed if r['outcome'] == 'exact' and r.get('flagged'))}"
                                       f"/{sum(1 for r in changed if r['outcome'] == 'exact')}",
                      "s_per_edit": round(sum(r["seconds"] for r in rs) / len(rs), 2)})
    return table


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--models", default="default", help="comma-separated model specs (default: the shipped model)")
    p.add_argument("--strategies", default="cad", help="comma-separated strategies (default: cad, as cad-apply)")
    p.add_argument("--device", default="auto")
    p.add_argument("--json", help="write the report here")
    args = p.parse_args(argv)
    from engine.api import EditEngine

    cases = everyday_cases()
    rows: list[dict] = []
    for model in args.models.split(","):
        engine = EditEngine(model, args.device, on_status=lambda m: print(m, file=sys.stderr, flush=True))
        for strategy in args.strategies.split(","):
            for k, case in enumerate(cases, 1):
                row = {"model": model, **run_case(engine, case, strategy)}
                rows.append(row)
                print(f"[everyday {k}/{len(cases)}] {model} {strategy} {case.case_id}: {row['outcome']} "
                      f"({row['seconds']} s)", file=sys.stderr, flush=True)
    from training.langs import TRAIN_LANGS, language_of_name

    file_types = sorted({c.file_type for c in cases})
    # the documents are never trained on; some of their file types are languages the data build mines
    mined = sorted({c.file_type for c in cases if language_of_name(c.filename) in TRAIN_LANGS})
    write_report("everyday", summarize(rows), args.json,
                 {"cases": rows, "file_types": file_types, "file_types_the_data_build_mines": mined},
                 title=f"Everyday edits: {len(cases)} hand-written requests (never trained on) in "
                       f"{len(file_types)} file types, {len(mined)} of them mined for training data "
                       f"({', '.join(mined) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
