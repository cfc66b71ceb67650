"""Strategy ``auto`` (engine.picker): does the cost model pick the faster of cad and spec-edit?

Per case, on the same model and machine, in one run: the picker's predictions for ``cad`` and
``spec-edit`` (its choice, and the time the prediction itself took), then both strategies measured,
forced to the gold edit (``benchmarks.speculative_runs``: the same output for both, so their walls
compare), in two cache states:

* ``cold``: an empty prefix cache (a first edit, ``cad-apply``);
* ``warm``: each strategy after its own warm-up (``engine.warmup.warm_document``: what the LSP runs
  while the document sits unchanged); ``auto`` after auto's, which computes the prompt of the strategy
  it would pick once warm (``engine.warmup.auto_warm_strategy``), and picks in that cache state.

``auto_s`` = the picked strategy's measured wall + the prediction's own time; ``best_s`` = the faster
of the two (an oracle). The candidates are both strategies whatever the weights (``--model default``
is trained for programs only, so the product's ``auto`` runs ``cad`` on it; a forced run measures the
mechanics, which do not depend on what the weights can write). The prompts are the weights' own.

    python -m benchmarks.picker --cases 10 --long 8 --json benchmarks/results/picker.json \
        --md benchmarks/results/picker.md
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

COLUMNS = ["corpus", "cache", "cases", "cad_s", "spec_s", "auto_s", "best_s", "auto/best", "spec/auto",
           "picked cad", "right picks", "pred/meas cad", "pred/meas spec", "pred/meas picked", "pick_ms"]


def strategy_rows() -> dict[str, Row]:
    """The two candidates as benchmark rows: the product's cad path and spec-edit W=64."""
    from engine.drafters import DEFAULT_GEN_DRAFTER

    return {"cad": Row(f"cad+{DEFAULT_GEN_DRAFTER}", "cad", DEFAULT_GEN_DRAFTER),
            "spec-edit": Row(f"spec-edit W={SPEC_EDIT_WINDOW}", "regen", "spec-edit", window=SPEC_EDIT_WINDOW)}


def _fresh(loaded):
    from engine.backends.prefix_cache import PrefixCache

    return dataclasses.replace(loaded, prefix_cache=PrefixCache(max_tokens=1 << 16))


def measure(loaded, case, cache: str, cost) -> dict:
    """Predictions, the pick, and both strategies' forced walls for ``case`` in cache state ``cache``:
    ``cold`` (empty caches) or ``warm`` (each strategy after its own warm-up; auto after auto's)."""
    from engine.picker import CANDIDATES, choose, predict
    from engine.warmup import auto_warm_strategy, warm_document

    rows, states, warmed = strategy_rows(), {}, ""
    for name in rows:
        states[name] = _fresh(loaded)
        if cache == "warm":
            warm_document(states[name], case.document, name)
    auto_state = _fresh(loaded)
    if cache == "warm":
        chosen = auto_warm_strategy(auto_state, case.document, window=SPEC_EDIT_WINDOW, candidates=CANDIDATES)
        auto_state, warmed = states[chosen], chosen
    t0 = time.perf_counter()
    predicted = predict(auto_state, case.document, case.instruction, window=SPEC_EDIT_WINDOW, cost=cost)
    picked = choose(predicted)
    pick_ms = (time.perf_counter() - t0) * 1000.0
    walls, errors, auto_wall = {}, [], None
    for name, row in rows.items():
        for label, state in ((name, states[name]), ("auto", auto_state)):
            if label == "auto" and (name != picked or (cache == "warm" and warmed == name) or cache == "cold"):
                continue   # auto's run is one of the strategies' own runs unless it picked one not warmed
            rec = run(row, dataclasses.replace(state, prefix_cache=_copy(state.prefix_cache)), case, forced=True)
            if rec.get("error") or not rec["exact"]:
                errors.append(f"{label} {name}: {rec.get('error') or 'not the gold text'}")
            if label == "auto":
                auto_wall = rec["wall_s"]
            else:
                walls[name] = rec["wall_s"]
    if auto_wall is None:
        auto_wall = walls[picked]
    best = min(walls, key=walls.get)
    return {"corpus": case.corpus, "case_id": case.case_id, "cache": cache, "warmed": warmed,
            "doc_tokens": len(loaded.tokenizer.encode(case.document, add_special_tokens=False)),
            "predicted_ms": {k: round(v, 1) for k, v in predicted.items()}, "picked": picked, "pick_ms": pick_ms,
            "cad_s": walls["cad"], "spec_s": walls["spec-edit"], "best": best,
            "auto_s": auto_wall + pick_ms / 1000.0, "best_s": walls[best], "error": "; ".join(errors),
            "loadavg": os.getloadavg()[0]}


def _copy(cache):
    """A prefix cache holding the same entries (entries are never written into: sharing them is safe)."""
    from engine.backends.prefix_cache import PrefixCache

    out = PrefixCache(max_tokens=cache.max_tokens, min_tokens=cache.min_tokens)
    out._entries.update(cache._entries)
    return out


def summarize(records: list[dict]) -> list[dict]:
    out = []
    for corpus in dict.fromkeys(r["corpus"] for r in records):
        for cache in ("cold", "warm"):
            rs = [r for r in records if r["corpus"] == corpus and r["cache"] == cache and not r["error"]]
            if not rs:
                continue
            mean = lambda key: statistics.mean(r[key] for r in rs)  # noqa: E731
            ratio = lambda name, key: statistics.mean(r["predicted_ms"][name] / 1000.0 / r[key] for r in rs)  # noqa: E731
            out.append({"corpus": corpus, "cache": cache, "cases": len(rs), "cad_s": mean("cad_s"),
                        "spec_s": mean("spec_s"), "auto_s": mean("auto_s"), "best_s": mean("best_s"),
                        "auto/best": mean("auto_s") / mean("best_s"), "spec/auto": mean("spec_s") / mean("auto_s"),
                        "picked cad": sum(r["picked"] == "cad" for r in rs),
                        "right picks": sum(r["picked"] == r["best"] for r in rs),
                        # warm: each strategy was measured in its own cache state, predicted in auto's
                        "pred/meas cad": ratio("cad", "cad_s") if cache == "cold" else "-",
                        "pred/meas spec": ratio("spec-edit", "spec_s") if cache == "cold" else "-",
                        "pred/meas picked": statistics.mean(r["predicted_ms"][r["picked"]] / 1000.0 /
                                                            (r["auto_s"] - r["pick_ms"] / 1000.0) for r in rs),
                        "pick_ms": mean("pick_ms")})
    return out


def main(argv=None) -> int:
    parser = bench_argparser(__doc__.splitlines()[0], default_cases=10)
    parser.add_argument("--long", type=int, default=8, help="long documents (benchmarks.longdocs) to run")
    parser.add_argument("--long-max-tokens", type=int, default=2000)
    parser.add_argument("--model", default="default")
    parser.add_argument("--md", type=Path, default=None, help="also write the markdown report here")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    import torch

    from engine.backends.model import load_model
    from engine.picker import measure_forward_cost

    torch.set_num_threads(args.threads)
    loaded = load_model(args.model, "cpu", progress=lambda m: print(m, file=sys.stderr))
    load_start = os.getloadavg()
    cases = humaneval_cases(args.cases)
    if args.long > 0:
        cases += long_cases(args.long, loaded.tokenizer, int(loaded.context_length), max_tokens=args.long_max_tokens)
    run(strategy_rows()["cad"], loaded, cases[0], forced=True)  # warm the kernels, not timed
    t0 = time.perf_counter()
    cost = measure_forward_cost(loaded)   # measured now, not the fit kept in the user cache directory
    calibration_s = time.perf_counter() - t0
    records = []
    for i, case in enumerate(cases, 1):
        for cache in ("cold", "warm"):
            rec = measure(loaded, case, cache, cost)
            records.append(rec)
            print(f"[{i}/{len(cases)}] {case.corpus} {case.case_id} {cache}: picked {rec['picked']} "
                  f"(predicted {rec['predicted_ms']}), cad {rec['cad_s']:.2f} s, spec-edit {rec['spec_s']:.2f} s "
                  f"{rec['error']}", file=sys.stderr, flush=True)
    summary = summarize(records)
    env = {**environment(), "threads": args.threads, "model": args.model, "loadavg_start": load_start,
           "loadavg_end": os.getloadavg(), "calibration": dataclasses.asdict(cost), "calibration_s": calibration_s}
    text = (f"## Strategy auto: {args.model} model, cpu float32, {args.threads} threads, forced gold edits\n\n"
            f"Measured {env['time_utc']}; load average at start {list(load_start)}, at end "
            f"{list(env['loadavg_end'])}. Calibration ({calibration_s:.2f} s, once per model): "
            f"{cost.fixed_ms:.1f} ms + {cost.token_ms:.2f} ms/token (+{cost.attend_ms:.2f} ms/token per 1k attended).\n\n"
            f"{markdown_table(summary, COLUMNS)}\n\n"
            "cad_s / spec_s: each strategy's mean wall (spec-edit W=64); auto_s: the picked strategy's wall + the "
            "prediction's time (pick_ms); best_s: the faster of the two per case; right picks: cases where auto "
            "picked the faster; pred/meas: mean predicted / measured wall. warm: auto after its own warm-up "
            "(the prompt of the strategy it would pick when warm is cached) and each strategy after its own warm-up.\n")
    emit(text, md_path=args.md, json_path=args.json_path,
         payload={"benchmark": "picker", "summary": summary, "records": records, "environment": env})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
