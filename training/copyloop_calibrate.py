"""Calibrate CopyLoop's screening depth d_s and copied-tail limit K (engine.drafters.copyloop).

The paper's protocol (Du & Chung, arXiv:2610.38822, §3.3 / B.4), small: every (d_s, K) of a grid
runs full regeneration (``engine.decode.regen.regenerate``) of the default model on CALIBRATION
cases: HumanEvalPack-Fix TRAIN pairs (``evaluation.corpus.split``'s train part, never the held-out
part); the setting with the best equal-weight geometric mean of decode throughput (generated tokens
per second of decoding, the prefill forward excluded: it is the same for every drafter) wins. The
whole grid is then measured again on a separate EVALUATION sample (other train pairs) and the
pick's throughput deficit against that sample's grid optimum is reported. d_s = 0 (no screening)
is in the grid, so the calibration may also decide that screening does not pay on this model.

The evaluation sample also compares the drafters "none", "pld" (run interleaved with the grid) and
copyloop (the pick): forwards,
wall, mean acceptance length (tokens committed per verify forward) and whether the output ids are
identical to greedy ("none"). This process's CPU time is recorded beside wall (a busy machine's
wall time mixes in other processes; with ``--threads 1`` CPU time is the compute alone) and the pick
by CPU time is reported too; the pick itself is by wall time. Each case runs its settings back to back (order reversed on every
other case) so a busy machine's drift hits every setting alike.

    python -m training.copyloop_calibrate [--depths 0,20,24,28] [--tails 8,16,32] [--cases 4]
        [--eval-cases 4] [--max-new 160] [--threads N] [--json report.json] [--write]

``--write`` stores the pick (and a summary of the run) in ``engine.drafters.copyloop.DEFAULTS_FILE``,
the drafter's defaults.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
import time
from datetime import datetime, timezone
from pathlib import Path


def sample_cases(n_cal: int, n_eval: int, *, seed: int = 0, max_gold_chars: int = 400):
    """Two disjoint seeded samples of HumanEvalPack-Fix (python) TRAIN pairs with short golds."""
    from evaluation.corpus import load_pairs, split

    train, _held_out = split(load_pairs("python"))
    short = sorted((p for p in train if len(p.gold) <= max_gold_chars), key=lambda p: p.task_id)
    if len(short) < n_cal + n_eval:
        raise ValueError(f"only {len(short)} short train pairs for {n_cal} + {n_eval} cases")
    picked = random.Random(seed).sample(short, n_cal + n_eval)
    return picked[:n_cal], picked[n_cal:]


def run_case(loaded, pair, drafter, max_new: int) -> dict:
    """One regeneration; decode throughput excludes the first (prefill) round."""
    from engine.decode.regen import regenerate

    marks: list[tuple[float, float, int]] = []

    def on_forward(stats) -> None:
        if not marks:
            marks.append((time.perf_counter(), time.process_time(), stats.decoded_tokens + stats.copied_tokens))

    start, cpu_start = time.perf_counter(), time.process_time()
    r = regenerate(loaded, pair.document, pair.instruction, drafter=drafter, max_new_tokens=max_new,
                   on_forward=on_forward)
    end, cpu_end = time.perf_counter(), time.process_time()
    t0, c0, n0 = marks[0] if marks else (start, cpu_start, 0)
    tokens = len(r.output_ids)
    return {
        "task_id": pair.task_id, "tokens": tokens, "forwards": r.stats.forwards,
        "wall_s": round(end - start, 4), "decode_s": round(end - t0, 4), "decode_tokens": tokens - n0,
        "decode_cpu_s": round(cpu_end - c0, 4),
        "draft_tokens": r.stats.draft_tokens, "draft_accepted": r.stats.draft_accepted,
        "output_ids": list(r.output_ids),
    }


def tokens_per_s(row: dict, clock: str = "decode_s") -> float:
    """Decode tokens per second of ``clock``: wall ("decode_s") or this process's CPU time ("decode_cpu_s")."""
    return row["decode_tokens"] / row[clock] if row[clock] > 0 and row["decode_tokens"] > 0 else 0.0


def geo_mean(values: list[float]) -> float:
    values = [v for v in values if v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else 0.0


def measure_grid(loaded, pairs, settings: list[tuple[int, int]], max_new: int, log, extras=()) -> dict:
    """``{(d_s, K): [row per case]}`` plus ``"none"`` (the greedy reference, run first on each case)
    and one entry per registered drafter name in ``extras``, interleaved with the grid."""
    from engine.drafters.copyloop import CopyLoopProposer

    runs: dict = {"none": []}
    runs.update({s: [] for s in [*settings, *extras]})
    for i, pair in enumerate(pairs):
        runs["none"].append(run_case(loaded, pair, "none", max_new))
        order = [*settings, *extras]
        for s in (order if i % 2 == 0 else list(reversed(order))):
            drafter = s if isinstance(s, str) else CopyLoopProposer(tail=s[1], screen_depth=s[0])
            row = run_case(loaded, pair, drafter, max_new)
            row["identical"] = row["output_ids"] == runs["none"][-1]["output_ids"]
            runs[s].append(row)
            log(f"{pair.task_id} {_key(s)}: {tokens_per_s(row):.1f} tok/s, {row['forwards']} forwards")
    return runs


def summarize(runs: dict, settings, clock: str = "decode_s") -> dict:
    """Geometric-mean decode throughput per setting (and the greedy reference)."""
    return {s: geo_mean([tokens_per_s(r, clock) for r in runs[s]]) for s in ["none", *settings]}


def acceptance_row(name: str, rows: list[dict], reference: list[dict]) -> dict:
    """Forwards, wall, mean acceptance length and identity to greedy of one drafter over the sample."""
    tokens = sum(r["tokens"] for r in rows)
    forwards = sum(r["forwards"] for r in rows)
    return {
        "drafter": name, "cases": len(rows), "tokens": tokens, "forwards": forwards,
        "wall_s": round(sum(r["wall_s"] for r in rows), 2),
        "decode_s": round(sum(r["decode_s"] for r in rows), 2),
        "decode_tok_per_s": round(geo_mean([tokens_per_s(r) for r in rows]), 2),
        "decode_tok_per_cpu_s": round(geo_mean([tokens_per_s(r, "decode_cpu_s") for r in rows]), 2),
        "mean_acceptance_length": round(tokens / forwards, 3) if forwards else 0.0,
        "draft_tokens": sum(r["draft_tokens"] for r in rows),
        "draft_accepted": sum(r["draft_accepted"] for r in rows),
        "identical_to_greedy": sum(r["output_ids"] == ref["output_ids"] for r, ref in zip(rows, reference)),
    }


def _adapter_digest() -> str | None:
    from engine.backends.adapters import ADAPTER_WEIGHTS, SHIPPED_ADAPTER

    weights = SHIPPED_ADAPTER / ADAPTER_WEIGHTS
    return hashlib.sha256(weights.read_bytes()).hexdigest()[:16] if weights.is_file() else None


def _key(s) -> str:
    return s if isinstance(s, str) else f"d_s={s[0]},K={s[1]}"


def calibrate(loaded, *, depths, tails, cases: int, eval_cases: int, max_new: int, seed: int = 0,
              log=lambda m: None) -> dict:
    """Grid search on calibration cases, deficit and drafter comparison on evaluation cases."""
    from engine.drafters.copyloop import CopyLoopProposer

    layers = int(loaded.model.config.num_hidden_layers)
    bad = [d for d in depths if not 0 <= d < layers]
    if bad:
        raise ValueError(f"screening depths {bad} outside 0..{layers - 1} (the model has {layers} layers)")
    settings = [(d, k) for d in depths for k in tails]
    cal, ev = sample_cases(cases, eval_cases, seed=seed)
    run_case(loaded, cal[0], "none", 8)                      # warm-up (allocator, kernels)
    log(f"calibration on {[p.task_id for p in cal]}")
    cal_runs = measure_grid(loaded, cal, settings, max_new, log)
    cal_tps = summarize(cal_runs, settings)
    cal_cpu = summarize(cal_runs, settings, "decode_cpu_s")
    pick = max(settings, key=lambda s: cal_tps[s])
    log(f"picked d_s={pick[0]} K={pick[1]}; evaluation on {[p.task_id for p in ev]}")
    ev_runs = measure_grid(loaded, ev, settings, max_new, log, extras=("pld",))
    ev_tps = summarize(ev_runs, settings)
    ev_cpu = summarize(ev_runs, settings, "decode_cpu_s")
    best = max(settings, key=lambda s: ev_tps[s])
    compare = [acceptance_row("none", ev_runs["none"], ev_runs["none"]),
               acceptance_row("pld", ev_runs["pld"], ev_runs["none"]),
               acceptance_row(f"copyloop (d_s={pick[0]}, K={pick[1]})", ev_runs[pick], ev_runs["none"])]
    if pick[0]:
        unscreened = (0, pick[1])
        rows = ev_runs[unscreened] if unscreened in ev_runs else [
            run_case(loaded, p, CopyLoopProposer(tail=pick[1], screen_depth=0), max_new) for p in ev]
        compare.append(acceptance_row(f"copyloop (unscreened, K={pick[1]})", rows, ev_runs["none"]))
    screened = [s for s in settings if s[0] > 0]
    if screened and not pick[0]:
        top = max(screened, key=lambda s: ev_tps[s])
        compare.append(acceptance_row(f"copyloop (best screened: d_s={top[0]}, K={top[1]})", ev_runs[top],
                                      ev_runs["none"]))
    strip = lambda runs: {_key(s): [{k: v for k, v in r.items() if k != "output_ids"} for r in rows]  # noqa: E731
                          for s, rows in runs.items()}
    return {
        "screen_depth": pick[0], "tail": pick[1],
        "calibration": {
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%MZ"), "model": loaded.spec,
            "layers": layers, "adapter_sha256_16": _adapter_digest(), "metric": "geometric-mean decode tokens/s",
            "grid": {"depths": list(depths), "tails": list(tails)}, "max_new_tokens": max_new, "seed": seed,
            "calibration_cases": [p.task_id for p in cal], "evaluation_cases": [p.task_id for p in ev],
            "calibration_tok_per_s": {_key(s): round(v, 3) for s, v in cal_tps.items()},
            "evaluation_tok_per_s": {_key(s): round(v, 3) for s, v in ev_tps.items()},
            "evaluation_optimum": {"screen_depth": best[0], "tail": best[1]},
            "calibration_tok_per_cpu_s": {_key(s): round(v, 3) for s, v in cal_cpu.items()},
            "evaluation_tok_per_cpu_s": {_key(s): round(v, 3) for s, v in ev_cpu.items()},
            "cpu_time_pick": _key(max(settings, key=lambda s: cal_cpu[s])),
            "deficit_vs_evaluation_optimum": round(1.0 - ev_tps[pick] / ev_tps[best], 4) if ev_tps[best] else None,
            "all_identical_to_greedy": all(r["identical"] for runs in (cal_runs, ev_runs)
                                           for s, rows in runs.items() if s != "none" for r in rows),
        },
        "comparison": compare,
        "runs": {"calibration": strip(cal_runs), "evaluation": strip(ev_runs)},
    }


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.copyloop_calibrate", description=__doc__.split("\n\n")[0])
    p.add_argument("--depths", type=_ints, default=_ints("0,20,24,28"), help="screening depths d_s (0 = off)")
    p.add_argument("--tails", type=_ints, default=_ints("8,16,32"), help="copied-tail limits K")
    p.add_argument("--cases", type=int, default=4, help="calibration cases (train pairs)")
    p.add_argument("--eval-cases", type=int, default=4, help="evaluation cases (other train pairs)")
    p.add_argument("--max-new", type=int, default=160, help="regeneration token budget per case")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--json", type=Path, help="write the full report here")
    p.add_argument("--write", action="store_true", help="store the pick as the drafter's defaults")
    args = p.parse_args(argv)

    import torch

    from engine.backends.model import load_model
    from engine.drafters.copyloop import DEFAULTS_FILE

    if args.threads:
        torch.set_num_threads(args.threads)
    loaded = load_model("default", "cpu")
    report = calibrate(loaded, depths=args.depths, tails=args.tails, cases=args.cases, eval_cases=args.eval_cases,
                       max_new=args.max_new, seed=args.seed,
                       log=lambda m: print(f"[copyloop-calibrate] {m}", file=sys.stderr, flush=True))
    report["calibration"]["torch_threads"] = torch.get_num_threads()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    summary = {k: v for k, v in report.items() if k != "runs"}
    if args.write:
        DEFAULTS_FILE.parent.mkdir(parents=True, exist_ok=True)
        DEFAULTS_FILE.write_text(json.dumps({k: v for k, v in summary.items() if k != "comparison"}, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
