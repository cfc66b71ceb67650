"""Lossless decoding strategies side by side: one run, one model, one machine.

Rows (`benchmarks.speculative_runs.rows`): ``AR`` (greedy full regeneration, no draft), ``HF pld N``
(Hugging Face ``generate(prompt_lookup_num_tokens=N)`` on the same regen prompt, free-run only), every
drafter of the registry ``engine.drafters.DRAFTERS`` drafting full regeneration (``spec-edit W=64``,
``pld``, ``replaced-lines``, ... iterated, not listed), and the Copy-as-Decode program decoder (the
``cad`` strategy) with each registry drafter in its gen bodies (``cad+none``, ``cad+pld``, ...).

Corpora: HumanEvalPack-Fix held-out (python + js, ``--cases`` per language) and the long-document
corpus (`benchmarks.longdocs`, ``--long`` documents whose regeneration fits the context), each
forced (the gold text / gold line program teacher-forced, as `benchmarks.e2e` does) and free-run.

Per (corpus, mode, strategy): cases, lossless (output ids AND text equal to the reference's: AR for
regeneration rows, ``cad+none`` for CaD rows, fp32 greedy), wall s/case, forwards/case, tok/s (tokens of
the edited text per wall second, so regeneration and CaD compare), speedup (reference-free: AR's total
wall / the row's), mean acceptance length (accepted draft tokens per verify forward that carried a
draft), trigger rate (share of drafter rounds with a non-empty draft), and any probe counters a drafter
exposes. Cases of one corpus run every strategy back to back, so background load hits them alike;
``os.getloadavg()`` is recorded per record and in the report.

Run: ``python -m benchmarks.speculative --cases 10 --long 8 --json results/speculative.json
--md results/speculative.md --svg results/speculative.svg [--forced|--free] [--strategies AR cad+pld]
[--resume]``. Progress goes to stderr; records are appended to ``<json>.records.jsonl`` as they finish
(``--resume`` skips the records already there).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from benchmarks.common import bench_argparser, environment, markdown_table
from benchmarks.speculative_runs import humaneval_cases, long_cases, rows, run

COLUMNS = ["corpus", "mode", "strategy", "cases", "errors", "lossless", "mismatches", "wall_s/case", "fwd/case",
           "tok/s", "speedup", "vs_ref", "acc_len", "trigger", "useful", "probe"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _key(rec: dict) -> tuple:
    return rec["corpus"], rec["mode"], rec["case_id"], rec["strategy"]


def check_lossless(records: list[dict]) -> list[dict]:
    """Mark every record ``lossless`` (its reference's output ids and text hashes equal its own);
    return the mismatches. A record whose reference did not run is ``lossless = None``."""
    by_key = {_key(r): r for r in records}
    bad = []
    for r in records:
        ref = by_key.get((r["corpus"], r["mode"], r["case_id"], r["reference"]))
        if ref is None or r.get("error") or ref.get("error"):
            r["lossless"] = None
            continue
        r["lossless"] = r["ids_sha"] == ref["ids_sha"] and r["text_sha"] == ref["text_sha"]
        if not r["lossless"]:
            bad.append({k: r[k] for k in ("corpus", "mode", "case_id", "strategy", "reference", "output_tokens")}
                       | {"reference_tokens": ref["output_tokens"]})
    return bad


def _probe(rs: list[dict]) -> str:
    """Summed drafter-specific counters (``probe_*``, ``drafter_*``: e.g. switchsd's matched / gated_out)."""
    keys = sorted({k for r in rs for k in r if k.startswith(("probe_", "drafter_", "precision", "recall"))})
    return " ".join(f"{k.removeprefix('drafter_')}={sum(r.get(k, 0) for r in rs):.4g}" for k in keys)


def _ratio(ref: list, rs: list[dict]) -> float:
    """Reference wall / row wall over the cases where the reference ran."""
    pairs = [(a, r["wall_s"]) for a, r in zip(ref, rs) if a is not None]
    own = sum(b for _, b in pairs)
    return sum(a for a, _ in pairs) / own if own else float("nan")


def _useful(rs: list[dict]) -> float:
    """Share of drafted rounds that kept a draft token, over the records that count it (not HF's)."""
    counted = [r for r in rs if "useful_rounds" in r]
    drafted = sum(r["drafted_rounds"] for r in counted)
    return sum(r["useful_rounds"] for r in counted) / drafted if drafted else float("nan")


def summarize(records: list[dict], order: list[str]) -> list[dict]:
    """One row per (corpus, mode, strategy), corpora and modes in run order, strategies in ``order``."""
    out = []
    groups = dict.fromkeys((r["corpus"], r["mode"]) for r in records)
    for corpus, mode in groups:
        part = [r for r in records if r["corpus"] == corpus and r["mode"] == mode]
        ar_wall = {r["case_id"]: r["wall_s"] for r in part if r["strategy"] == "AR" and r["wall_s"] > 0}
        ref_wall = {(r["strategy"], r["case_id"]): r["wall_s"] for r in part
                    if r["strategy"] in ("AR", "cad+none") and r["wall_s"] > 0}
        for name in order:
            every = [r for r in part if r["strategy"] == name]
            rs = [r for r in every if not r.get("error") and r["wall_s"] > 0]
            if not rs:
                continue
            n, wall = len(rs), sum(r["wall_s"] for r in rs)
            paired = [r for r in rs if r["case_id"] in ar_wall]
            pw = sum(r["wall_s"] for r in paired)
            drafted, rounds = sum(r["drafted_rounds"] for r in rs), sum(r["rounds"] for r in rs)
            out.append({
                "corpus": corpus, "mode": mode, "strategy": name, "cases": n, "errors": len(every) - n,
                "lossless": sum(r["lossless"] is True for r in rs),
                "mismatches": sum(r["lossless"] is False for r in rs),
                "wall_s/case": wall / n, "fwd/case": sum(r["forwards"] for r in rs) / n,
                "tok/s": sum(r["text_tokens"] for r in rs) / wall if wall else float("nan"),
                "speedup": sum(ar_wall[r["case_id"]] for r in paired) / pw if pw else float("nan"),
                "vs_ref": _ratio([ref_wall.get((r["reference"], r["case_id"])) for r in rs], rs),
                "acc_len": sum(r["draft_accepted"] for r in rs) / drafted if drafted else float("nan"),
                "trigger": drafted / rounds if rounds else float("nan"),
                "useful": _useful(rs),
                "probe": _probe(rs), "loadavg": sum(r["loadavg"] for r in rs) / n,
            })
    return out


def per_case_speedups(records: list[dict]) -> list[dict]:
    """``{mode, corpus, strategy, case_id, doc_tokens, speedup}`` per record with an AR partner."""
    ar = {(r["corpus"], r["mode"], r["case_id"]): r["wall_s"] for r in records
          if r["strategy"] == "AR" and r["wall_s"] > 0}
    return [{"mode": r["mode"], "corpus": r["corpus"], "strategy": r["strategy"], "case_id": r["case_id"],
             "doc_tokens": r["doc_tokens"], "speedup": ar[k] / r["wall_s"]}
            for r in records if r["strategy"] != "AR" and (k := (r["corpus"], r["mode"], r["case_id"])) in ar
            and r["wall_s"] > 0]


def parser():
    p = bench_argparser("Lossless decoding strategies side by side (speculative drafters vs AR vs CaD)",
                        default_cases=10)
    p.add_argument("--long", type=int, default=8, help="long documents (benchmarks.longdocs) that fit the context")
    p.add_argument("--md", type=Path, default=None, help="write the markdown report here")
    p.add_argument("--svg", type=Path, default=None, help="write the speedup-vs-length plot here")
    p.add_argument("--model", default="default")
    p.add_argument("--draft-model", default=None,
                   help="a smaller model of the same tokenizer for the draft-model rows (and SwitchSD below its gate); "
                        "without it those rows are left out")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--hf-lookup", type=int, default=10, help="HF prompt_lookup_num_tokens (0: no HF row)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--forced", dest="modes", action="store_const", const=("forced",), help="forced runs only")
    g.add_argument("--free", dest="modes", action="store_const", const=("free",), help="free runs only")
    p.add_argument("--strategies", nargs="+", default=None, help="row names to run (default: all)")
    p.add_argument("--resume", action="store_true", help="skip records already in <json>.records.jsonl")
    p.add_argument("--long-max-tokens", type=int, default=None,
                   help="only long documents with at most this many tokens")
    p.add_argument("--free-extra", type=int, default=0,
                   help="free-run budget = gold tokens + this (benchmarks.e2e --free); 0: the engine's automatic one")
    p.add_argument("--long-ids", nargs="+", default=None, help="only these long documents (e.g. long/16)")
    p.add_argument("--max-new", type=int, default=None, help="free-run token budget (tests; default: see --free-extra)")
    p.add_argument("--from-records", type=Path, nargs="+", default=None,
                   help="report over these <json>.records.jsonl files of earlier runs (no model runs)")
    return p


def run_all(loaded, cases, modes, lineup, *, sink=None, done=None, max_new=None, free_extra=0) -> list[dict]:
    """Every (case, mode, row) record: per case its modes, per mode every row back to back, so a run
    cut short still has complete cases; ``done``: records kept from an earlier run (``--resume``)."""
    done = {_key(r): r for r in (done or [])}
    records = list(done.values())
    for i, case in enumerate(cases, 1):
        for mode in modes:
            ref = None
            for row in lineup:
                if row.kind == "hf" and mode == "forced":
                    continue  # HF generate cannot be teacher-forced
                key = (case.corpus, mode, case.case_id, row.name)
                rec = done.get(key)
                if rec is None:
                    rec = run(row, loaded, case, forced=mode == "forced", reference=ref, max_new=max_new,
                              free_extra=free_extra)
                    records.append(rec)
                    if sink is not None:
                        sink(rec)
                    log(f"[speculative] {i}/{len(cases)} {case.case_id} {mode} {row.name}: "
                        f"{rec['wall_s']:.2f}s {rec['forwards']} fwd load {rec['loadavg']:.2f}"
                        + (f" ERROR {rec['error']}" if rec.get("error") else ""))
                if row.name == "AR":
                    ref = rec
    return records


def _run_line(c: dict) -> str:
    what = []
    if c.get("cases_per_lang"):
        what.append(f"HumanEvalPack-Fix {c['cases_per_lang']} held-out case(s) per language (python, js)")
    if c.get("long"):
        cap = f" of at most {c['long_max_tokens']} tokens" if c.get("long_max_tokens") else ""
        what.append(f"{c['long']} long document(s){cap} that fit the context")
    budget = (f"gold tokens + {c['free_extra']}" if c.get("free_extra") else
              "the engine's automatic budget (document tokens + 256)")
    return (f"{' and '.join(what) or 'no cases'}; modes {'/'.join(c.get('modes', []))}; free-run budget {budget}; "
            f"{c.get('threads')} torch thread(s); load average at start {c.get('loadavg_start')}")


def render_md(rows_: list[dict], report: dict) -> str:
    cfg = report["config"]
    load = report["loadavg"]
    lines = [f"## Lossless decoding strategies: {cfg['model']} on {cfg['device']} {cfg['dtype']}, "
             f"{cfg['threads']} threads\n",
             f"Measured {report['environment']['time_utc']}; load average (1/5/15 min) at start "
             f"{load['start']}, at end {load['end']} on {os.cpu_count()} cores: a load above the torch "
             "threads means other processes shared the machine and wall figures are contended; forwards, "
             "acceptance and trigger rate are not.\n",
             *[f"- run: {_run_line(c)}" for c in cfg.get("runs", [cfg])], "",
             markdown_table(rows_, COLUMNS), "",
             f"Lossless mismatches: {len(report['mismatches'])} of {report['checked']} checked records "
             "(regeneration rows vs AR, CaD rows vs cad+none; ids and text).", "",
             "speedup: AR wall / row wall over the same cases (CaD rows too; free-run CaD writes a different "
             "output than AR, so there it is a cost ratio, not a lossless speedup); vs_ref: the reference's wall "
             "(AR, or cad+none for CaD rows) / the row's; tok/s: tokens of the edited text "
             "per wall second; acc_len: accepted draft tokens per verify forward that carried a draft; trigger: "
             "share of drafter rounds with a non-empty draft; useful: share of drafted rounds that kept at least one "
             "draft token (the precision of drafting; probe recall is not measurable: gated-out drafts are "
             "never verified); probe: a drafter's own counters, summed; HF pld runs free-run only, with AR's output "
             "length as its budget; its forwards are counted by a forward hook."]
    for m in report["mismatches"]:
        lines.append(f"- mismatch: {m}")
    return "\n".join(lines) + "\n"


def build_report(records: list[dict], order: list[str], config: dict, load_start) -> dict:
    """The JSON report over ``records`` (lossless check, summary rows, per-case speedups)."""
    mismatches = check_lossless(records)
    return {"benchmark": "speculative", "rows": summarize(records, order), "environment": environment(),
            "config": config,
            "loadavg": {"start": [round(x, 2) for x in load_start], "end": [round(x, 2) for x in os.getloadavg()]},
            "checked": sum(r["lossless"] is not None for r in records), "mismatches": mismatches,
            "errors": [{k: r[k] for k in ("corpus", "mode", "case_id", "strategy", "error")}
                       for r in records if r.get("error")],
            "per_case": per_case_speedups(records), "records": records}


def write_outputs(args, report: dict) -> None:
    md = render_md(report["rows"], report)
    print(md)
    if args.json_path:
        args.json_path.parent.mkdir(parents=True, exist_ok=True)
        args.json_path.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    if args.md:
        args.md.write_text(md, encoding="utf-8")
    if args.svg:
        from benchmarks.speculative_plot import write_svg

        cfg = report["config"]
        write_svg(report["per_case"], args.svg,
                  title=f"Speedup over AR vs document length ({cfg['model']}, {cfg['device']})")


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def from_records(args) -> dict:
    """Report over the records of earlier runs (``--from-records A.jsonl B.jsonl``), no model runs.
    The config of the first run's ``<records>.config.json`` is kept, with the record files named."""
    records, config, starts = [], {}, []
    for path in args.from_records:
        records += _records(path)
        cfg_path = path.with_suffix(".config.json")
        if cfg_path.exists():
            cfg = json.loads(cfg_path.read_text())
            config = config or cfg
            starts.append(cfg.get("loadavg_start"))
    runs = [json.loads(p.with_suffix(".config.json").read_text()) for p in args.from_records
            if p.with_suffix(".config.json").exists()]
    config = {**config, "merged_from": [str(p) for p in args.from_records], "loadavg_starts": starts, "runs": runs}
    order = list(dict.fromkeys(config.get("strategies", []) + [r["strategy"] for r in records]))
    report = build_report(records, order, config, starts[0] if starts and starts[0] else os.getloadavg())
    write_outputs(args, report)
    return report


def load(spec: str, device: str):
    """``load_model(spec, device)``; ``"tiny"`` is the tiny random model (`tiny_random_model`, tests)."""
    from engine.backends.model import load_model, tiny_random_model

    return tiny_random_model() if spec == "tiny" else load_model(spec, device=device, progress=log)


def main(argv=None) -> dict:
    import torch

    from engine.drafters import DRAFTERS

    args = parser().parse_args(argv)
    if args.from_records:
        return from_records(args)
    modes = args.modes or ("forced", "free")
    if args.threads:
        torch.set_num_threads(args.threads)
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    loaded = load(args.model, args.device)
    if args.draft_model:
        loaded.draft = load(args.draft_model, args.device)
    import engine.decode.program  # noqa: F401  (imported once, up front: the tree may change while a run goes on)
    import engine.decode.regen  # noqa: F401
    lineup = rows([d for d in DRAFTERS if d != "draft-model" or loaded.draft is not None], args.hf_lookup)
    if args.strategies:
        unknown = set(args.strategies) - {r.name for r in lineup}
        if unknown:
            raise SystemExit(f"unknown strategies {sorted(unknown)}; choose from {[r.name for r in lineup]}")
        lineup = [r for r in lineup if r.name in args.strategies]
    cases = humaneval_cases(args.cases) if args.cases else []
    if args.long:
        longs = long_cases(99 if args.long_ids else args.long, loaded.tokenizer, int(loaded.context_length),
                           max_tokens=args.long_max_tokens)
        cases += [c for c in longs if not args.long_ids or c.case_id in args.long_ids][:args.long]
    log(f"[speculative] {len(cases)} cases x {len(modes)} modes x {len(lineup)} rows")
    config = {"model": args.model, "device": str(loaded.device), "dtype": str(loaded.dtype).replace("torch.", ""),
              "threads": torch.get_num_threads(), "cases_per_lang": args.cases, "long": args.long,
              "long_max_tokens": args.long_max_tokens, "max_new": args.max_new, "free_extra": args.free_extra,
              "modes": list(modes), "strategies": [r.name for r in lineup], "drafters": list(DRAFTERS),
              "hf_lookup": args.hf_lookup, "loadavg_start": [round(x, 2) for x in load_start],
              "transformers": __import__("transformers").__version__, "torch": torch.__version__}
    rec_path = args.json_path.with_suffix(".records.jsonl") if args.json_path else None
    done = []
    if rec_path and args.resume and rec_path.exists():
        done = _records(rec_path)
    elif rec_path:
        rec_path.parent.mkdir(parents=True, exist_ok=True)
        rec_path.write_text("")
    if rec_path:
        rec_path.with_suffix(".config.json").write_text(json.dumps(config, indent=2) + "\n")

    def sink(rec: dict) -> None:
        if rec_path:
            with rec_path.open("a") as f:
                f.write(json.dumps(rec) + "\n")

    wanted = {(c.corpus, c.case_id) for c in cases}
    done = [r for r in done if (r["corpus"], r["case_id"]) in wanted and r["mode"] in modes
            and r["strategy"] in {row.name for row in lineup}]
    records = run_all(loaded, cases, modes, lineup, sink=sink, done=done, max_new=args.max_new,
                      free_extra=args.free_extra)
    config["wall_s"] = time.perf_counter() - t0
    report = build_report(records, [r.name for r in lineup], config, load_start)
    write_outputs(args, report)
    return report


if __name__ == "__main__":
    main()
