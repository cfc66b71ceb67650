"""Pipeline losslessness (seed §4.3): oracle programs round-trip through the resolver.

For every HumanEvalPack-Fix pair: the line oracle is serialized, parsed back and resolved in
strict and clipped mode; byte-exact and trimmed EM are counted. Token level: pairs whose
document or gold the tokenizer does not round-trip (``decode(encode(s)) != s``) are excluded
and counted by reason; the rest go through the token oracle (``--min-span``) the same way.
Also audits golds for reserved literals (the escape requirement).

Run: ``python -m benchmarks.losslessness --json out.json [--cases N] [--min-span 8]``.
"""
from __future__ import annotations

from benchmarks.common import bench_argparser, load_corpora, token_fns, write_report
from engine.program.grammar import RESERVED_LITERALS, parse, serialize
from engine.program.oracle import line_program, token_program
from engine.program.resolver import resolve


def _check(prog, pair, **kw) -> dict:
    prog = parse(serialize(prog))
    out = {}
    for mode in ("strict", "clipped"):
        text = resolve(prog, pair.document, mode, **kw).text
        out[mode] = text == pair.gold
        out[mode + "_trimmed"] = text.strip() == pair.gold.strip()
    return out


def measure(pairs, encode, decode, min_span: int = 8) -> tuple[list[dict], list[dict]]:
    """Rows ``(line_row, token_row)`` for one corpus, plus failures listed by task id."""
    line = {"strict": 0, "clipped": 0, "strict_trimmed": 0, "clipped_trimmed": 0}
    tok = dict(line)
    excluded = {"document_not_lossless": 0, "gold_not_lossless": 0}
    failures: list[dict] = []
    reserved = 0
    for pair in pairs:
        reserved += any(lit in pair.gold for lit in RESERVED_LITERALS)
        for key, ok in _check(line_program(pair.document, pair.gold), pair).items():
            line[key] += ok
            if not ok:
                failures.append({"task_id": pair.task_id, "level": "line", "check": key})
        d, g = encode(pair.document), encode(pair.gold)
        if decode(d) != pair.document:
            excluded["document_not_lossless"] += 1
            continue
        if decode(g) != pair.gold:
            excluded["gold_not_lossless"] += 1
            continue
        res = _check(token_program(d, g, decode, min_span), pair, token_ids=d, decode_tokens=decode)
        for key, ok in res.items():
            tok[key] += ok
            if not ok:
                failures.append({"task_id": pair.task_id, "level": "token", "check": key})
    n = len(pairs)
    n_tok = n - sum(excluded.values())
    rows = [
        {"level": "line", "cases": n, "eligible": n, **line, "reserved_literal_golds": reserved},
        {"level": f"token (m={min_span})", "cases": n, "eligible": n_tok, **tok, **excluded},
    ]
    return rows, failures


def main(argv=None) -> dict:
    parser = bench_argparser(__doc__.splitlines()[0])
    parser.add_argument("--min-span", type=int, default=8, help="token oracle minimum span")
    args = parser.parse_args(argv)
    from engine.backends.model import load_tokenizer

    encode, decode = token_fns(load_tokenizer("default"))
    rows, failures, totals = [], [], {}
    for lang, pairs in load_corpora(args.cases).items():
        lang_rows, lang_fail = measure(pairs, encode, decode, args.min_span)
        rows += [{"corpus": lang, **r} for r in lang_rows]
        failures += lang_fail
    for level in ("line", f"token (m={args.min_span})"):
        part = [r for r in rows if r["level"] == level]
        totals[level] = {k: sum(r[k] for r in part) for k in part[0] if isinstance(part[0][k], int)}
        rows.append({"corpus": "pooled", "level": level, **totals[level]})
    columns = ["corpus", "level", "cases", "eligible", "strict", "clipped", "strict_trimmed",
               "clipped_trimmed", "reserved_literal_golds", "document_not_lossless", "gold_not_lossless"]
    return write_report("losslessness", rows, args.json_path, {"failures": failures, "totals": totals},
                        columns=columns, title="Oracle round-trip losslessness (byte-exact counts)")


if __name__ == "__main__":
    main()
