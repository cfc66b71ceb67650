"""How often does the snippet merger (engine.program.snippet) merge, and is the merge right? No model.

Runs ``merge_snippet`` on every case of ``cad-train data`` output files and compares with the gold
text. Per family, and per language for snippets: ``merged_exact`` (merged, byte-identical to gold),
``merged_wrong`` (merged, differs), ``left_to_model`` (no merge: the model decodes those),
``lost_lines`` (non-blank gold lines missing from wrong merges: code a wrong merge would drop) and
``triggered`` on families that carry no snippet (should be 0). Measure on data whose seed was not
looked at while the merger was written: ``cad-train data --seed N`` makes fresh data in seconds.

    .venv/bin/cad-train data --out /tmp/fresh --per-lang 300 --seed 11
    python -m benchmarks.snippet_merge /tmp/fresh/*.jsonl --json benchmarks/results/snippet_merge.json
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from benchmarks.common import write_report
from engine.program.snippet import merge_snippet


def lost_lines(gold: str, merged: str) -> int:
    have = Counter(line.strip() for line in merged.split("\n"))
    return sum((Counter(line.strip() for line in gold.split("\n") if line.strip()) - have).values())


def evaluate(paths: list[Path]) -> tuple[list[dict], dict]:
    groups: dict[str, Counter] = defaultdict(Counter)
    seconds, seeds = 0.0, set()
    for path in paths:
        manifest = path.parent / "manifest.json"
        if manifest.is_file():
            seeds.add(json.loads(manifest.read_text()).get("seed"))
        for line in path.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            start = time.perf_counter()
            merged = merge_snippet(case["document"], case["instruction"])
            seconds += time.perf_counter() - start
            keys = [case["family"]] + ([f"snippet/{case['lang']}"] if case["family"] == "snippet" else [])
            for key in keys:
                c = groups[key]
                c["cases"] += 1
                if merged is None:
                    c["left_to_model"] += 1
                elif merged == case["gold"]:
                    c["merged_exact"] += 1
                else:
                    c["merged_wrong"] += 1
                    c["lost_lines"] += lost_lines(case["gold"], merged)
    rows = []
    for key in sorted(groups, key=lambda k: (k.startswith("snippet/"), k)):
        c = groups[key]
        rows.append({"group": key, "cases": c["cases"], "merged_exact": c["merged_exact"],
                     "merged_wrong": c["merged_wrong"], "left_to_model": c["left_to_model"],
                     "exact_rate": round(c["merged_exact"] / c["cases"], 3), "lost_lines": c["lost_lines"]})
    cases = sum(groups[k]["cases"] for k in groups if "/" not in k)
    return rows, {"seeds": sorted(s for s in seeds if s is not None), "cases": cases,
                  "ms_per_case": round(1000 * seconds / max(1, cases), 3)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", type=Path, help="cad-train data .jsonl files")
    p.add_argument("--json", type=Path, default=None, help="write the report here")
    args = p.parse_args(argv)
    rows, extra = evaluate(args.files)
    write_report("snippet_merge", rows, args.json, {"files": [str(f) for f in args.files], **extra},
                 title=f"Snippet merger on {extra['cases']} cases (data seeds {extra['seeds']}), "
                       f"{extra['ms_per_case']} ms a case")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
