"""How often does the syntax-breakage warning (engine.program.breakage) fire, on right and on wrong edits?

Two parts, one report:

* **gold edits** (no model): every case of ``cad-train data`` files and every HumanEvalPack-Fix
  pair; the warning fires on a gold edit only when the edit itself breaks the structure (a
  synthetic "delete lines 14-17" that cuts a block in half): ``flagged`` counts those.
* **model edits** (``--model-cases N``, optional): free runs of a model on the data's bug-fix,
  mechanical and HumanEvalPack cases (pasted snippets are merged without the model, so left out);
  per outcome (exact, wrong, unchanged) how many were flagged, and how many of the exact ones had a
  gold that is flagged too. A warning on a wrong edit is the point; on an exact one whose gold keeps
  the syntax it would be a false alarm.

    .venv/bin/cad-train data --out /tmp/fresh --per-lang 300 --seed 29
    python -m benchmarks.breakage /tmp/fresh/*.jsonl --model-cases 80 --json benchmarks/results/breakage.json
"""
from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from pathlib import Path

from benchmarks.common import write_report
from engine.program.breakage import find_breakage
from evaluation.corpus import load_pairs

MODEL_FAMILIES = ("bugfix", "mechanical", "heval")


def _cases(paths: list[Path]) -> list[dict]:
    return [json.loads(line) for path in paths for line in path.read_text(encoding="utf-8").splitlines()]


def gold_rows(cases: list[dict]) -> list[dict]:
    groups: dict[str, Counter] = {}
    for family, doc, gold in ([(c["family"], c["document"], c["gold"]) for c in cases]
                              + [("humanevalpack " + lang, p.document, p.gold) for lang in ("python", "js")
                                 for p in load_pairs(lang)]):
        found = find_breakage(doc, gold)
        c = groups.setdefault(family, Counter())
        c["cases"] += 1
        c["flagged"] += found is not None
        if found is not None:
            c[f"by {found.check}"] += 1
    return [{"part": "gold", "group": k, "cases": c["cases"], "flagged": c["flagged"],
             "by_check": ", ".join(f"{n[3:]} {v}" for n, v in sorted(c.items()) if n.startswith("by "))}
            for k, c in sorted(groups.items())]


def model_rows(cases: list[dict], n: int, model: str, seed: int) -> list[dict]:
    from engine.api import EditEngine, EditRequest

    picked = [c for c in cases if c["family"] in MODEL_FAMILIES and c.get("split", "test") == "test"]
    random.Random(seed).shuffle(picked)
    engine = EditEngine(model, "cpu")
    outcomes: dict[str, Counter] = {}
    for i, case in enumerate(picked[:n], 1):
        start = time.perf_counter()
        result = engine.edit(EditRequest(case["document"], case["instruction"], strategy="cad"))
        outcome = ("truncated" if result.stats.truncated else "exact" if result.text == case["gold"]
                   else "unchanged" if result.text == case["document"] else "wrong")
        c = outcomes.setdefault(outcome, Counter())
        c["cases"] += 1
        c["flagged"] += find_breakage(case["document"], result.text) is not None
        c["gold_flagged"] += find_breakage(case["document"], case["gold"]) is not None
        print(f"[{i}/{min(n, len(picked))}] {case['case_id']} {outcome} {time.perf_counter() - start:.1f}s", flush=True)
    return [{"part": f"model {model}", "group": k, "cases": c["cases"], "flagged": c["flagged"],
             "by_check": f"gold flagged {c['gold_flagged']}"} for k, c in sorted(outcomes.items())]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", type=Path, help="cad-train data .jsonl files")
    p.add_argument("--model-cases", type=int, default=0, help="also run the model on this many test cases")
    p.add_argument("--model", default="default")
    p.add_argument("--seed", type=int, default=7, help="which test cases the model runs on")
    p.add_argument("--json", type=Path, default=None, help="write the report here")
    args = p.parse_args(argv)
    cases = _cases(args.files)
    rows = gold_rows(cases)
    if args.model_cases:
        rows += model_rows(cases, args.model_cases, args.model, args.seed)
    write_report("breakage", rows, args.json, {"files": [str(f) for f in args.files]},
                 title="Syntax-breakage warning on gold and model edits")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
