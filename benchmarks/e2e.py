"""End-to-end benchmark on HumanEvalPack-Fix (Py + JS), one run, one model.

Oracle-forced mode (default): every strategy produces the gold output, so only the cost differs:
  * regen: full regeneration, one forward per gold token (engine.decode.regen forced);
  * spec-edit W: full regeneration with the document as the speculative draft (gold teacher-forced);
  * Copy-as-Decode, line oracle program, as an overhead-reduction ladder: seed schedule (every
    literal its own forward), + ride-along literals, + speculative op headers, + monotonic copies;
  * Copy-as-Decode tokens with the token oracle at m = m* (from the kernel) and m = 8.
Per corpus and pooled: realized speedup over regen (post-prefill decode time, and total wall),
bnd_exact from the s(N) just measured (or `--kernel-json`) over the corpus's own line-level span
histogram (benchmarks.ceiling.span_profile), realized/bnd, and the extended cost model's prediction
(evaluation.costmodel, from each run's forward schedule) next to the measurement. The prompt prefill is
reported separately: prompts differ per format and the bound (seed eq. 3) is about the output side.

Free mode (`--free`): untrained CaD (line) and regen decode freely: EM, parse rate, copy endpoint
accuracy vs the line oracle, decoded/copied/forced tokens, wall-clock (seed Table 24).

Run: `python -m benchmarks.e2e --json results/e2e.json [--cases 20] [--kernel-json K.json]`.
Progress lines (case i/N) go to stderr.
"""
from __future__ import annotations

import sys
import time

from benchmarks.common import bench_argparser, load_corpora, markdown_table, write_report
from benchmarks.e2e_runs import forced_variants, predicted_ms, run_variant

LANGS = ("python", "js")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def kernel_report(args, loaded) -> dict:
    """The kernel report (rows, tau_ms, fixed_costs, m*): from --kernel-json or measured now."""
    import json

    if args.kernel_json:
        report = json.loads(args.kernel_json.read_text(encoding="utf-8"))
        if report.get("skipped"):
            raise SystemExit(f"{args.kernel_json} is a skipped kernel run: {report['skipped']}")
        report["source"] = str(args.kernel_json)
        return report
    from benchmarks.kernel import FULL_NS, QUICK_NS, measure_kernel

    ns = QUICK_NS if args.kernel_quick else FULL_NS
    log(f"[e2e] measuring kernel s(N) for N={list(ns)} on the loaded model")
    report = measure_kernel(loaded.model, loaded.tokenizer, loaded.device, ns=ns,
                            trials=2 if args.kernel_quick else 5, prefix=128 if args.kernel_quick else 1024,
                            reps=20 if args.kernel_quick else 200)
    report["source"] = "measured in this run" + (" (quick)" if args.kernel_quick else "")
    return report


# --------------------------------------------------------------------------- aggregation


def _sum(records, key) -> float:
    return float(sum(r[key] for r in records))


def summarize(records: list[dict], variants, curve, bnd: float | None, corpus: str) -> list[dict]:
    """One row per variant over `records` (one corpus or pooled)."""
    base = [r for r in records if r["variant"] == "regen"]
    base_dec, base_wall = _sum(base, "decode_ms"), _sum(base, "wall_ms")
    rows = []
    for v in variants:
        rs = [r for r in records if r["variant"] == v.name]
        if not rs:
            continue
        n = len(rs)
        dec, wall = _sum(rs, "decode_ms"), _sum(rs, "wall_ms")
        pred = sum(r["pred_ms"] for r in rs)
        speed = base_dec / dec if dec and base else float("nan")
        rows.append({
            "corpus": corpus, "variant": v.name, "cases": n, "lossless": sum(r["ok"] for r in rs),
            "fwd/case": _sum(rs, "forwards") / n,
            "decode_ms/case": dec / n, "prefill_ms/case": _sum(rs, "prefill_ms") / n,
            "speedup": speed, "speedup_wall": base_wall / wall if wall and base else float("nan"),
            "bnd_exact": bnd if bnd is not None else float("nan"),
            "realized/bnd": speed / bnd if bnd else float("nan"),
            "pred_ms/case": pred / n, "pred/meas": pred / dec if dec else float("nan"),
        })
    return rows


def match_spec_edit(rows: list[dict], tau_ms: float) -> list[str]:
    """Sentences: what the best CaD-line variant needs to match the best spec-edit variant."""
    out = []
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        rs = [r for r in rows if r["corpus"] == corpus]
        spec = [r for r in rs if r["variant"].startswith("spec-edit")]
        cad = [r for r in rs if r["variant"].startswith("cad-line")]
        if not spec or not cad:
            continue
        best_spec = min(spec, key=lambda r: r["decode_ms/case"])
        best_cad = min(cad, key=lambda r: r["decode_ms/case"])
        gap = best_cad["decode_ms/case"] - best_spec["decode_ms/case"]
        if gap <= 0:
            out.append(f"{corpus}: {best_cad['variant']} ({best_cad['decode_ms/case']:.0f} ms/case) already matches "
                       f"{best_spec['variant']} ({best_spec['decode_ms/case']:.0f} ms/case), "
                       f"{-gap:.0f} ms/case to spare.")
        else:
            fwd_gap = best_cad["fwd/case"] - best_spec["fwd/case"]
            out.append(
                f"{corpus}: to match {best_spec['variant']} ({best_spec['decode_ms/case']:.0f} ms/case, "
                f"{best_spec['fwd/case']:.1f} fwd/case), {best_cad['variant']} "
                f"({best_cad['decode_ms/case']:.0f} ms/case, {best_cad['fwd/case']:.1f} fwd/case) must cut "
                f"{gap:.0f} ms/case = {gap / tau_ms:.1f} decode-step equivalents (tau={tau_ms:.1f} ms); "
                f"forward-count gap {fwd_gap:+.1f}/case.")
    return out


# --------------------------------------------------------------------------- main


def run_forced_cases(args, loaded, corpora, m_token: int) -> list[dict]:
    """Replay every case under every forced variant; the raw per-run records."""
    variants = forced_variants(tuple(args.windows), token_min_spans=(m_token, 8))
    records: list[dict] = []
    for lang, pairs in corpora.items():
        for i, pair in enumerate(pairs, 1):
            log(f"[e2e] {lang} case {i}/{len(pairs)} {pair.task_id}")
            for v in variants:
                rec = run_variant(v, loaded, pair, forced=True, repeats=args.repeats, device=loaded.device)
                rec["program"] = None
                records.append(rec)
                if not rec["ok"]:
                    log(f"[e2e]   {v.name}: output differs from gold")
    return records


def score_forced(records: list[dict], corpora, tokenizer, kernel: dict, windows, m_token: int) -> dict:
    """Rows (per corpus + pooled), bnd_exact, cost-model predictions and notes for forced records."""
    from benchmarks.ceiling import bnd_cases, span_profile
    from evaluation.costmodel import KernelCurve, bnd_exact_corpus

    curve = KernelCurve.from_report(kernel, source=kernel.get("source", ""))
    variants = forced_variants(tuple(windows), token_min_spans=(m_token, 8))
    for rec in records:
        rec["pred_ms"] = predicted_ms(rec, curve)
    profiles = {lang: span_profile(pairs, tokenizer) for lang, pairs in corpora.items()}
    bnds = {lang: bnd_exact_corpus(bnd_cases(p), curve.s) for lang, p in profiles.items()}
    pooled_cases = [c for p in profiles.values() for c in bnd_cases(p)]
    bnd_pooled = bnd_exact_corpus(pooled_cases, curve.s) if pooled_cases else None
    rows = []
    for lang in corpora:
        rows += summarize([r for r in records if r["lang"] == lang], variants, curve, bnds[lang], lang)
    if len(corpora) > 1:
        rows += summarize(records, variants, curve, bnd_pooled, "pooled")
    return {"rows": rows, "notes": match_spec_edit(rows, curve.tau_ms), "bnd_exact": {**bnds, "pooled": bnd_pooled},
            "span_profiles": {k: {kk: vv for kk, vv in p.items() if kk != "per_case"} for k, p in profiles.items()}}


def parser():
    p = bench_argparser("End-to-end forced (or --free) edit benchmark on HumanEvalPack-Fix")
    p.add_argument("--model", default="default")
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (1 is steadier on a busy machine)")
    p.add_argument("--langs", nargs="+", default=list(LANGS), choices=LANGS)
    p.add_argument("--kernel-json", type=__import__("pathlib").Path, default=None,
                   help="use this kernel JSON (benchmarks.kernel) instead of measuring s(N) now")
    p.add_argument("--kernel-quick", action="store_true", help="measure a quick kernel (few N, short prefix)")
    p.add_argument("--windows", type=int, nargs="+", default=[16, 32, 64], help="spec-edit draft windows")
    p.add_argument("--repeats", type=int, default=1, help="runs per (case, variant); the median is kept")
    p.add_argument("--free", action="store_true", help="free-run (untrained) CaD vs regen instead of forced")
    p.add_argument("--free-extra", type=int, default=64,
                   help="--free: token budget per case = gold tokens + this")
    p.add_argument("--token-m", type=int, default=None,
                   help="minimum span of the token-level oracle for cad-tokens (default: the kernel's m*)")
    p.add_argument("--rescore", type=__import__("pathlib").Path, default=None,
                   help="re-score the records of an earlier e2e JSON with --kernel-json (no model runs)")
    return p


COLUMNS = ["corpus", "variant", "cases", "lossless", "fwd/case", "decode_ms/case", "prefill_ms/case",
           "speedup", "speedup_wall", "bnd_exact", "realized/bnd", "pred_ms/case", "pred/meas"]


def report_forced(args, config: dict, kernel: dict, records: list[dict], scored: dict, m_token: int) -> dict:
    from benchmarks.kernel import fixed_cost_rows

    report = write_report(
        "e2e", scored["rows"], args.json_path, columns=COLUMNS,
        title=f"E2E oracle-forced, {config['model']} on {config['device']} {config['dtype']}",
        extra={"config": config, "kernel": kernel, "notes": scored["notes"], "bnd_exact": scored["bnd_exact"],
               "m_token": m_token, "span_profiles": scored["span_profiles"], "records": records},
    )
    print(f"Kernel: {kernel.get('source', '')}\n")
    print(markdown_table([{"N": r["N"], "s": r["s"]} for r in kernel["rows"]]))
    print()
    print(markdown_table(fixed_cost_rows(kernel)))
    print("\n## What CaD needs to match spec-edit\n")
    for line in scored["notes"]:
        print(f"- {line}")
    return report


def rescore(args) -> dict:
    """Re-score an earlier forced run's records with another kernel JSON (no model runs)."""
    import json

    from engine.backends.model import load_tokenizer

    if not args.kernel_json:
        raise SystemExit("--rescore needs --kernel-json (the s(N) curve to score with)")
    old = json.loads(args.rescore.read_text(encoding="utf-8"))
    config, records, m_token = old["config"], old["records"], old["m_token"]
    kernel = kernel_report(args, None)
    corpora = load_corpora(config["cases"], tuple(config["langs"]))
    config["rescored_from"] = str(args.rescore)
    scored = score_forced(records, corpora, load_tokenizer(config["model"]), kernel, config["windows"], m_token)
    return report_forced(args, config, kernel, records, scored, m_token)


def main(argv=None) -> dict:
    import torch

    from engine.backends.model import load_model

    args = parser().parse_args(argv)
    if args.rescore:
        return rescore(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    loaded = load_model(args.model, device=args.device, progress=log)
    corpora = load_corpora(args.cases, tuple(args.langs))
    config = {"model": args.model, "device": str(loaded.device), "dtype": str(loaded.dtype).replace("torch.", ""),
              "threads": torch.get_num_threads(), "cases": args.cases, "langs": list(args.langs),
              "repeats": args.repeats, "windows": list(args.windows)}
    if args.free:
        from benchmarks.e2e_free import FREE_COLUMNS, run_free

        out = run_free(args, loaded, corpora, log)
        return write_report("e2e_free", out["rows"], args.json_path, extra={"config": config, **out["extra"]},
                            columns=FREE_COLUMNS, title="E2E free-run (untrained) CaD vs regen")
    kernel = kernel_report(args, loaded)
    m_token = args.token_m or kernel.get("m_star") or 8
    records = run_forced_cases(args, loaded, corpora, m_token)
    scored = score_forced(records, corpora, loaded.tokenizer, kernel, args.windows, m_token)
    config["wall_s"] = time.perf_counter() - t0
    return report_forced(args, config, kernel, records, scored, m_token)


if __name__ == "__main__":
    main()
