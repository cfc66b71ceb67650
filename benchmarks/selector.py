"""Does the model write edit programs that complete and are right? Held-out free-run evaluation.

For each model spec (e.g. ``default`` = the shipped adapter, ``default+none`` = the untrained base)
and each strategy (``cad``, ``regen``: the same weights), decode held-out cases of every family of
``cad-train data`` (the ``test`` split: files never trained on, plus a language never trained on,
plus the held-out part of HumanEvalPack-Fix) and record per case:

* ``completed``: the program closed by itself (no token budget, no runaway gen);
* ``applied``: completed and resolved, so the editor would apply it (``cad.applyEdit`` refuses the rest);
* ``em``: the new text equals the gold text byte for byte;
* ``pass``: HumanEvalPack cases only, the dataset's tests on the result (``clients.testrun``: a
  fresh temp dir, isolated interpreter, timeout, process group killed);
* ``span_start`` / ``span_end``: of the oracle program's copy spans, the share whose first (last)
  line is the first (last) line of some predicted copy (CaD only);
* ``failure``: for a wrong result, one class of a small taxonomy (``truncated``, ``looping``,
  ``no-op`` (changed nothing although a change was asked), ``wrong-lines`` (the right lines were
  copied, the generated text is wrong), ``wrong-span`` (copied or dropped the wrong lines),
  ``changed-noop`` (changed something on a no-op request), ``wrong-text`` (regeneration: the
  document came back changed, but not as asked), ``error``);
* tokens decoded, forwards and seconds per edit;
* ``confidence`` (CaD in process: the least probability the model gave a token it chose) and
  ``flagged``: the edit carries the low-confidence review warning (``engine.edit.LOW_CONFIDENCE``);
  the table's ``flagged wrong`` / ``flagged exact`` count the model's changed, completed edits (what
  an editor would apply) that were flagged, among the wrong and among the exact ones;
* ``planner``: who wrote the program, ``model`` or ``snippet-merge`` (a pasted snippet merged by its
  anchors, `engine.program.snippet`; on by default as in the product, ``--no-snippet-merge`` measures
  the model alone). The table's ``merged`` column is the share of cases merged so.

Cases are written to ``--out``'s ``.jsonl`` as they finish, so an interrupted run resumes (rerun
the same command) and a long run can be watched. At the end: summary JSON, a markdown table per
(model, strategy, family) and an SVG plot of completed / EM per family.

    python -m benchmarks.selector --data data/cad-train --per-family 12 \\
        --models default,default+none --strategies cad,regen --out benchmarks/results/selector
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.common import environment, markdown_table
from benchmarks.selector_plot import write_svg


def pick_cases(data: Path, split: str, per_family: int, seed: int, max_lines: int) -> list:
    """``per_family`` cases of each family, spread over languages round-robin (deterministic)."""
    from training.dataset import load_cases

    by_family: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for case in load_cases(data / f"{split}.jsonl"):
        if case.document.count("\n") < max_lines:
            by_family[case.family][case.lang].append(case)
    rng, chosen = random.Random(seed), []
    for family in sorted(by_family):
        langs = {lang: rng.sample(cs, len(cs)) for lang, cs in sorted(by_family[family].items())}
        picked, i = [], 0
        while len(picked) < per_family and any(langs.values()):
            lang = sorted(langs)[i % len(langs)]
            if langs[lang]:
                picked.append(langs[lang].pop())
            i += 1
        chosen.extend(picked)
    return chosen


def oracle_copies(case) -> list:
    """The copy ops of the oracle program of a case (computed once per case)."""
    from engine.program.grammar import CopyLines
    from engine.program.oracle import line_program

    return [op for op in line_program(case.document, case.gold) if isinstance(op, CopyLines)]


def span_accuracy(oracle: list, program) -> tuple[float, float] | None:
    """Share of the oracle's copy spans whose start / end the predicted program also has."""
    from engine.program.grammar import CopyLines

    if not oracle:
        return None
    got = [op for op in program if isinstance(op, CopyLines)]
    starts, ends = {op.start for op in got}, {op.end for op in got}
    return (sum(op.start in starts for op in oracle) / len(oracle),
            sum(op.end in ends for op in oracle) / len(oracle))


def classify(case, oracle: list, text: str | None, program, stats, warnings: list[str]) -> str | None:
    """The failure class of a wrong result (None when the result is exact)."""
    from engine.program.grammar import CopyLines

    if text is None:
        return "error"
    if text == case.gold:
        return None
    if stats is not None and stats.truncated:
        return "looping" if any("repeating" in w for w in warnings) else "truncated"
    if case.gold == case.document:
        return "changed-noop"
    if text == case.document:
        return "no-op"
    got = {(op.start, op.end) for op in program if isinstance(op, CopyLines)}
    if not got and len(program) == 1:   # regeneration: one gen holding the whole new document
        return "wrong-text"
    return "wrong-lines" if got == {(op.start, op.end) for op in oracle} else "wrong-span"


def heval_tests() -> dict:
    from evaluation.corpus import load_pairs

    return {p.task_id: p for lang in ("python", "js") for p in load_pairs(lang)}


def run_case(engine, case, strategy: str, tests: dict, snippet_merge: bool = True) -> dict:
    from engine.api import EditRequest, EngineError

    if strategy == "cad" and case.granularity == "tokens":
        strategy = "cad-tokens"
    row = {"case_id": case.case_id, "family": case.family, "kind": case.kind, "lang": case.lang,
           "lines": case.document.count("\n") + 1, "strategy": strategy}
    start = time.perf_counter()
    try:
        result = engine.edit(EditRequest(document=case.document, instruction=case.instruction, strategy=strategy,
                                         snippet_merge=snippet_merge))
    except EngineError as exc:
        row.update(completed=False, applied=False, em=False, failure="error", error=str(exc)[:300],
                   seconds=round(time.perf_counter() - start, 3))
        return row
    stats = result.stats
    completed = not stats.truncated
    oracle = oracle_copies(case)
    row.update(completed=completed, applied=completed, em=result.text == case.gold,
               seconds=round(time.perf_counter() - start, 3), decoded_tokens=stats.decoded_tokens,
               forwards=stats.forwards, ops=stats.ops, planner=stats.planner,
               failure=classify(case, oracle, result.text, result.program, stats, result.warnings),
               changed=result.text != case.document, confidence=getattr(stats, "confidence", None),
               flagged=any(w.startswith("low confidence") for w in result.warnings))
    if strategy == "cad":
        spans = span_accuracy(oracle, result.program)
        if spans is not None:
            row["span_start"], row["span_end"] = spans
    if case.family == "heval" and case.case_id in tests:
        from clients.testrun import run_tests

        pair = tests[case.case_id]
        row["pass"] = run_tests(pair.lang, result.text, pair.test, pair.entry_point).passed
    return row


def summarize(rows: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        base = r["strategy"].replace("cad-tokens", "cad")
        groups[(r["model"], base, r["family"])].append(r)
        groups[(r["model"], base, "ALL")].append(r)
    table = []
    for (model, strategy, family), rs in sorted(groups.items()):
        n = len(rs)

        def mean(key, rows=rs):
            vals = [float(r[key]) for r in rows if key in r]
            return round(sum(vals) / len(vals), 3) if vals else None

        # the model's changed, completed edits: what the editor would apply of what the model wrote
        changed = [r for r in rs if r.get("changed") and r.get("completed") and r.get("planner", "model") == "model"]

        def flagged(em: bool, rows=changed) -> str | None:
            group = [r for r in rows if bool(r["em"]) == em]
            return f"{sum(bool(r.get('flagged')) for r in group)}/{len(group)}" if group else None

        failures = defaultdict(int)
        for r in rs:
            if r.get("failure"):
                failures[r["failure"]] += 1
        table.append({"model": model, "strategy": strategy, "family": family, "n": n,
                      "completed": mean("completed"), "applied": mean("applied"), "em": mean("em"),
                      "merged": round(sum(r.get("planner") == "snippet-merge" for r in rs) / n, 3),
                      "pass@1": mean("pass"), "span_start": mean("span_start"), "span_end": mean("span_end"),
                      "tokens": mean("decoded_tokens"), "s/edit": mean("seconds"),
                      "flagged wrong": flagged(False), "flagged exact": flagged(True),
                      "failures": ", ".join(f"{k} {v}" for k, v in sorted(failures.items()))})
    return table


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=Path("data/cad-train"), help="a `cad-train data` output directory")
    p.add_argument("--split", default="test")
    p.add_argument("--per-family", type=int, default=12)
    p.add_argument("--max-lines", type=int, default=400, help="skip documents longer than this")
    p.add_argument("--models", default="default,default+none", help="comma-separated model specs")
    p.add_argument("--strategies", default="cad,regen")
    p.add_argument("--families", default="", help="only these families (comma-separated)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-snippet-merge", dest="snippet_merge", action="store_false",
                   help="the model decodes every case (default: pasted changes that pin down the text are applied without it, as in the product)")
    p.add_argument("--device", default="auto")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/selector"), help="output path prefix")
    p.add_argument("--report-only", action="store_true", help="rewrite the summary from --out's .jsonl files")
    args = p.parse_args(argv)
    if args.report_only:
        return report(args, [json.loads(x) for f in args.out.parent.glob(args.out.name + "*.jsonl")
                             for x in f.read_text().splitlines() if x.strip()])

    from engine.api import EditEngine

    cases = pick_cases(args.data, args.split, args.per_family, args.seed, args.max_lines)
    if args.families:
        cases = [c for c in cases if c.family in args.families.split(",")]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    log_path = args.out.with_suffix(".jsonl")
    done = {}
    if log_path.is_file():
        for line in log_path.read_text().splitlines():
            r = json.loads(line)
            done[(r["model"], r["strategy"].replace("cad-tokens", "cad"), r["case_id"])] = r
    tests = heval_tests() if any(c.family == "heval" for c in cases) else {}
    rows = list(done.values())
    total = len(args.models.split(",")) * len(args.strategies.split(",")) * len(cases)
    with log_path.open("a", encoding="utf-8") as log:
        for model in args.models.split(","):
            engine = EditEngine(model, args.device, on_status=lambda m: print(m, file=sys.stderr, flush=True))
            for strategy in args.strategies.split(","):
                for case in cases:
                    if (model, strategy, case.case_id) in done:
                        continue
                    row = {"model": model, **run_case(engine, case, strategy, tests, args.snippet_merge)}
                    rows.append(row)
                    log.write(json.dumps(row) + "\n")
                    log.flush()
                    print(f"[selector {len(rows)}/{total}] {model} {row['strategy']} {case.family}/{case.kind} "
                          f"{case.lang} {row['lines']} lines: {'EM' if row['em'] else row.get('failure')} "
                          f"{row['seconds']:.1f}s", file=sys.stderr, flush=True)
    return report(args, rows)


def report(args, rows: list[dict]) -> int:
    """Summary JSON, markdown table and SVG plot beside ``--out``."""
    table = summarize(rows)
    out = {"benchmark": "selector", "environment": environment(), "args": {k: str(v) for k, v in vars(args).items()},
           "summary": table, "rows": len(rows)}
    args.out.with_suffix(".json").write_text(json.dumps(out, indent=2) + "\n")
    md = markdown_table(table)
    caption = (f"Held-out free runs (`python -m benchmarks.selector`), {len(rows)} decodes, measured "
               f"{out['environment']['time_utc']} on {out['environment']['machine']} CPU. n differs per row "
               "when a run was cut short: read each row with its n.\n\n")
    args.out.with_suffix(".md").write_text(caption + md + "\n")
    write_svg(table, args.out.with_suffix(".svg"))
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
