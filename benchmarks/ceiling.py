"""Copy ceiling (seed Table 2 left part, Table 12 and Table 13): how much of the gold is copyable.

Line level: the line oracle's ``CopyLines`` ops; each op's text is tokenized on its own and
its token count is a span length N_k. Per case T = tokens(gold) (the full-regeneration cost)
and T_gen = max(0, T - sum N_k) (everything not copied, separators included), so
f_line = sum N_k / sum T. Token level: greedy longest-match cover over token ids with minimum
span m (the aspirational sub-line primitive, ``engine.program.oracle.token_cover``).

``span_profile(pairs, tokenizer)`` returns the per-case span histogram (N_k list, T, T_gen)
that the e2e/kernel benchmarks use to compute bnd_exact = T / (T_gen + sum N_k / s(N_k)).

Run: ``python -m benchmarks.ceiling --json out.json [--cases N]``.
"""
from __future__ import annotations

from typing import Sequence

from benchmarks.common import bench_argparser, load_corpora, percentile, token_fns, write_report
from engine.program.grammar import CopyLines
from engine.program.oracle import line_program, longest_matches, token_cover
from engine.program.resolver import document_lines

MIN_SPANS = (1, 2, 4, 8, 16, 32)


def _summary(spans: list[int], total_tokens: int, cases: int) -> dict:
    copied = sum(spans)
    return {
        "cases": cases, "T": total_tokens, "T_copy": copied, "f": copied / total_tokens if total_tokens else 0.0,
        "K": len(spans), "span_mean": copied / len(spans) if spans else 0.0,
        "span_p50": percentile(spans, 50), "span_p95": percentile(spans, 95),
        "short_spans_lt8": sum(n < 8 for n in spans),
    }


def span_profile(pairs: Sequence, tokenizer) -> dict:
    """Line-level copy spans: ``{"per_case": [{task_id, T, T_gen, spans, empty_copy_ops}],
    "histogram": {N: count}, cases, T, T_copy, f, K, span_mean, span_p50, span_p95, ...}``.

    ``spans`` are the token lengths N_k (> 0) of the case's CopyLines ops (each op's text
    tokenized alone); ops that copy only empty lines have 0 tokens and are counted in
    ``empty_copy_ops`` instead (they are still ops: ``K`` includes them). ``T`` is the gold's
    token count; ``T_gen = max(0, T - sum(spans))``. Then
    ``bnd_exact = sum T / (sum T_gen + sum_k N_k / s(N_k))`` over the corpus.
    """
    encode, _ = token_fns(tokenizer)
    cases, all_spans, total, k_ops = [], [], 0, 0
    for pair in pairs:
        lines = document_lines(pair.document)
        spans = [len(encode("\n".join(lines[op.start - 1:op.end])))
                 for op in line_program(pair.document, pair.gold) if isinstance(op, CopyLines)]
        t = len(encode(pair.gold))
        nonzero = [n for n in spans if n > 0]
        cases.append({"task_id": pair.task_id, "T": t, "T_gen": max(0, t - sum(spans)), "spans": nonzero,
                      "empty_copy_ops": len(spans) - len(nonzero)})
        all_spans += nonzero
        total += t
        k_ops += len(spans)
    histogram: dict[int, int] = {}
    for n in all_spans:
        histogram[n] = histogram.get(n, 0) + 1
    summary = _summary(all_spans, total, len(cases))
    summary["K"] = k_ops
    summary["T_gen"] = sum(c["T_gen"] for c in cases)
    return {**summary, "histogram": dict(sorted(histogram.items())), "per_case": cases}


def bnd_cases(profile: dict) -> list[tuple[int, int, list[int]]]:
    """``(T, T_gen, spans)`` per case of a :func:`span_profile`, the input of
    ``evaluation.costmodel.bnd_exact_corpus``."""
    return [(c["T"], c["T_gen"], c["spans"]) for c in profile["per_case"]]


def token_ceiling(pairs: Sequence, tokenizer, min_spans: Sequence[int] = MIN_SPANS) -> dict[int, dict]:
    """Token-level greedy cover summary for each minimum span m (seed Table 13)."""
    encode, _ = token_fns(tokenizer)
    spans: dict[int, list[int]] = {m: [] for m in min_spans}
    total = 0
    for pair in pairs:
        d, g = encode(pair.document), encode(pair.gold)
        total += len(g)
        matches = longest_matches(d, g)
        for m in min_spans:
            spans[m] += [length for _, _, length in token_cover(d, g, m, matches=matches)]
    return {m: _summary(spans[m], total, len(pairs)) for m in min_spans}


def main(argv=None) -> dict:
    args = bench_argparser(__doc__.splitlines()[0]).parse_args(argv)
    from engine.backends.model import load_tokenizer

    tokenizer = load_tokenizer("default")
    corpora = load_corpora(args.cases)
    corpora["pooled"] = [p for pairs in corpora.values() for p in pairs]
    rows, cover_rows, profiles, token = [], [], {}, {}
    for name, pairs in corpora.items():
        prof = span_profile(pairs, tokenizer)
        profiles[name] = prof
        rows.append({"corpus": name, "cases": prof["cases"], "f_line": prof["f"], "K": prof["K"],
                     "span_mean": prof["span_mean"], "span_p50": prof["span_p50"],
                     "span_p95": prof["span_p95"], "spans<8": prof["short_spans_lt8"],
                     "copied_in_spans<8": 
                         sum(n * c for n, c in prof["histogram"].items() if n < 8) / max(1, prof["T_copy"]),
                     "T_gold": prof["T"], "T_copy": prof["T_copy"]})
        token[name] = token_ceiling(pairs, tokenizer)
        for m, s in token[name].items():
            cover_rows.append({"corpus": name, "m": m, "f_tok": s["f"], "spans": s["K"], "span_mean": s["span_mean"]})
    from benchmarks.common import markdown_table

    report = write_report("ceiling", rows, args.json_path,
                          {"token_cover": cover_rows, "token_ceiling": token, "span_profiles": profiles},
                          title="Line-level copy ceiling (CopyLines oracle)")
    print("## Token-level greedy cover (aspirational)\n")
    print(markdown_table(cover_rows))
    return report


if __name__ == "__main__":
    main()
