"""Edit-format cost and round-trip EM (seed Table 3): full / search-replace / udiff / CaD.

Every format's output is derived from the oracle (``evaluation.formats.<fmt>.serialize``),
tokenized with the default model's tokenizer, then parsed and applied back to the document
(``apply``); RT-EM is byte-exact equality with the gold. For search/replace, blocks whose
SEARCH anchor occurs more than once are counted (``ambiguous``), as are the cases where
Aider's first-match rule then rewrites the wrong place (``fails``).

Run: ``python -m benchmarks.formats --json out.json [--cases N]``.
"""
from __future__ import annotations

import statistics

from benchmarks.common import bench_argparser, load_corpora, percentile, token_fns, write_report
from evaluation.formats import FORMATS, FormatApplyError
from evaluation.formats import search_replace


def measure(pairs, encode) -> tuple[list[dict], list[dict]]:
    """One row per format for ``pairs`` plus the list of failing cases."""
    tokens = {name: [] for name in FORMATS}
    ok = {name: 0 for name in FORMATS}
    ambiguous_cases = ambiguous_blocks = 0
    failures: list[dict] = []
    for pair in pairs:
        for name, fmt in FORMATS.items():
            text = fmt.serialize(pair.document, pair.gold)
            tokens[name].append(len(encode(text)))
            try:
                good = fmt.apply(pair.document, text) == pair.gold
                error = None if good else "wrong output"
            except FormatApplyError as exc:
                good, error = False, str(exc)
            ok[name] += good
            if not good:
                failures.append({"task_id": pair.task_id, "format": name, "error": error})
            if name == search_replace.NAME:
                amb = search_replace.ambiguous_anchors(pair.document, text)
                ambiguous_blocks += amb
                ambiguous_cases += amb > 0
    n = len(pairs)
    cad_total = sum(tokens["cad"])
    rows = []
    for name in FORMATS:
        t = tokens[name]
        row = {"format": name, "cases": n, "mean_tok": statistics.fmean(t) if t else 0.0,
               "median_tok": percentile(t, 50), "p95_tok": percentile(t, 95), "total_tok": sum(t),
               "rt_em": ok[name] / n if n else 0.0, "fails": n - ok[name],
               "vs_cad_tok": (sum(t) / cad_total - 1.0) if cad_total else 0.0}
        if name == search_replace.NAME:
            row.update(ambiguous_cases=ambiguous_cases, ambiguous_blocks=ambiguous_blocks)
        rows.append(row)
    return rows, failures


def main(argv=None) -> dict:
    args = bench_argparser(__doc__.splitlines()[0]).parse_args(argv)
    from engine.backends.model import load_tokenizer

    encode, _ = token_fns(load_tokenizer("default"))
    corpora = load_corpora(args.cases)
    corpora["pooled"] = [p for pairs in corpora.values() for p in pairs]
    rows, failures = [], []
    for name, pairs in corpora.items():
        corpus_rows, corpus_fail = measure(pairs, encode)
        rows += [{"corpus": name, **r} for r in corpus_rows]
        failures += [] if name == "pooled" else corpus_fail
    columns = ["corpus", "format", "cases", "mean_tok", "median_tok", "p95_tok", "total_tok", "rt_em",
               "fails", "vs_cad_tok", "ambiguous_cases", "ambiguous_blocks"]
    return write_report("formats", rows, args.json_path, {"failures": failures}, columns=columns,
                        title="Edit formats: output tokens and round-trip EM (oracle-derived)")


if __name__ == "__main__":
    main()
