"""Warm start: an edit whose document was prefilled while the user read it, vs the same edit cold.

The LSP prefills a document's instruction-free prompt when it is left unchanged for a second
(``cad_lsp.warmup``, ``engine.warmup.warm_document``); this benchmark measures what that buys, for
the default CaD path and for spec-edit W=64 (regeneration with the document as draft, which can be
warmed the same way), on the same model, machine and cases, in one run.

Per case and strategy, forced to the gold edit (``benchmarks.speculative_runs``: same output for
every strategy, so their walls compare): ``cold`` (an empty prefix cache), then ``warm-up`` (the
prefill alone, in chunks of ``engine.warmup.WARM_CHUNK_TOKENS``) and ``warm`` (the edit afterwards).
``lossless``: the warm edit's output ids and text equal the cold one's. Summary rows per corpus and
strategy: mean cold, warm-up and warm wall, warm / cold, and the warm edit against spec-edit's warm
edit (``vs spec-edit``: spec-edit's warm wall / the row's).

    python -m benchmarks.warm_start --cases 5 --long 4 --json benchmarks/results/warm_start.json \
        --md benchmarks/results/warm_start.md
"""
from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

from benchmarks.common import bench_argparser, emit, environment, markdown_table
from benchmarks.speculative_runs import SPEC_EDIT_WINDOW, Row, humaneval_cases, long_cases, run

COLUMNS = ["corpus", "strategy", "cases", "lossless", "prompt_tok", "cold_s", "warmup_s", "warm_s",
           "warm/cold", "vs spec-edit"]


def strategy_rows() -> list[tuple[str, Row]]:
    """(engine strategy name, benchmark row): the product default and spec-edit W=64."""
    from engine.drafters import DEFAULT_GEN_DRAFTER

    return [("cad", Row(f"cad+{DEFAULT_GEN_DRAFTER}", "cad", DEFAULT_GEN_DRAFTER)),
            ("spec-edit", Row(f"spec-edit W={SPEC_EDIT_WINDOW}", "regen", "spec-edit", window=SPEC_EDIT_WINDOW))]


def measure(loaded, case, strategy: str, row: Row) -> dict:
    """Cold edit, then warm-up + warm edit, each on a fresh prefix cache (records as `run` makes them)."""
    from engine.backends.prefix_cache import PrefixCache
    from engine.warmup import warm_document

    cold_model = dataclasses.replace(loaded, prefix_cache=PrefixCache(max_tokens=1 << 16))
    cold = run(row, cold_model, case, forced=True)
    warm_model = dataclasses.replace(loaded, prefix_cache=PrefixCache(max_tokens=1 << 16))
    t0 = time.perf_counter()
    warmed = warm_document(warm_model, case.document, strategy)
    warmup_s = time.perf_counter() - t0
    warm = run(row, warm_model, case, forced=True)
    return {"corpus": case.corpus, "case_id": case.case_id, "strategy": row.name, "doc_lines": cold["doc_lines"],
            "doc_tokens": cold["doc_tokens"], "warm_status": warmed.status, "prompt_tok": warmed.prompt_tokens,
            "cold_s": cold["wall_s"], "warmup_s": warmup_s, "warm_s": warm["wall_s"],
            "cold_forwards": cold["forwards"], "warm_forwards": warm["forwards"],
            "lossless": cold["ids_sha"] == warm["ids_sha"] and cold["text_sha"] == warm["text_sha"],
            "exact": warm["exact"], "error": cold.get("error") or warm.get("error"), "loadavg": os.getloadavg()[0]}


def summarize(records: list[dict]) -> list[dict]:
    out = []
    for corpus in dict.fromkeys(r["corpus"] for r in records):
        spec = [r for r in records if r["corpus"] == corpus and r["strategy"].startswith("spec-edit")]
        spec_warm = statistics.mean(r["warm_s"] for r in spec) if spec else float("nan")
        for name in dict.fromkeys(r["strategy"] for r in records):
            rs = [r for r in records if r["corpus"] == corpus and r["strategy"] == name and not r["error"]]
            if not rs:
                continue
            cold, warm = statistics.mean(r["cold_s"] for r in rs), statistics.mean(r["warm_s"] for r in rs)
            out.append({"corpus": corpus, "strategy": name, "cases": len(rs),
                        "lossless": sum(r["lossless"] for r in rs),
                        "prompt_tok": statistics.mean(r["prompt_tok"] for r in rs),
                        "cold_s": cold, "warmup_s": statistics.mean(r["warmup_s"] for r in rs), "warm_s": warm,
                        "warm/cold": warm / cold, "vs spec-edit": spec_warm / warm})
    return out


def main(argv=None) -> int:
    parser = bench_argparser(__doc__.splitlines()[0], default_cases=5)
    parser.add_argument("--long", type=int, default=4, help="long documents (benchmarks.longdocs) to run")
    parser.add_argument("--long-max-tokens", type=int, default=2000)
    parser.add_argument("--md", type=Path, default=None, help="also write the markdown report here")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    import torch

    from engine.backends.model import load_model

    torch.set_num_threads(args.threads)
    loaded = load_model("default", "cpu", progress=lambda m: print(m, file=sys.stderr))
    load_start = os.getloadavg()
    cases = humaneval_cases(args.cases)
    if args.long > 0:
        cases += long_cases(args.long, loaded.tokenizer, int(loaded.context_length), max_tokens=args.long_max_tokens)
    run(strategy_rows()[0][1], loaded, cases[0], forced=True)  # warm the kernels, not timed
    records = []
    for i, case in enumerate(cases, 1):
        for strategy, row in strategy_rows():
            rec = measure(loaded, case, strategy, row)
            records.append(rec)
            print(f"[{i}/{len(cases)}] {case.corpus} {case.case_id} {row.name}: cold {rec['cold_s']:.2f} s, "
                  f"warm-up {rec['warmup_s']:.2f} s, warm {rec['warm_s']:.2f} s, lossless {rec['lossless']}",
                  file=sys.stderr, flush=True)
    summary = summarize(records)
    env = {**environment(), "threads": args.threads, "loadavg_start": load_start, "loadavg_end": os.getloadavg()}
    table = markdown_table(summary, COLUMNS)
    text = (f"## Warm start: default model, cpu float32, {args.threads} threads, forced gold edits\n\n"
            f"Measured {env['time_utc']}; load average at start {list(load_start)}, at end "
            f"{list(env['loadavg_end'])}.\n\n{table}\n\n"
            "cold_s: the edit with an empty prefix cache; warmup_s: `engine.warmup.warm_document` alone (what the "
            "LSP runs while the document sits unchanged); warm_s: the same edit afterwards; lossless: warm output "
            "ids and text equal to cold; vs spec-edit: spec-edit's mean warm wall / the row's.\n")
    emit(text, md_path=args.md, json_path=args.json_path,
         payload={"benchmark": "warm_start", "summary": summary, "records": records, "environment": env})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
