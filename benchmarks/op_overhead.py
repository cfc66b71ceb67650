"""Per-op overhead of the program decoder: forwards per op under three forward schedules.

Owns one measurement: on HumanEvalPack-Fix cases, replay the line-level oracle program in forced
mode (the real cost of that program) with the real default model, under

* ``seed``: every committed literal / chosen token is fed at once in its own forward (the seed's
  schedule: forced-template prefills, then the splice);
* ``ride``: forced literals and single-option tokens ride along in the next decision's forward;
* ``ride+spec``: plus speculative op headers (guessed header verified in one forward);
* ``ride+spec+pld``: plus prompt-lookup drafts for gen bodies (engine.drafters "pld").

Reports forwards per copy op (header + splice), per gen op and per program, tokens per forward,
wall time, and the masked-step overhead (mask + argmax per decision, in microseconds). A free
(unforced) decode of the same cases is measured too, with and without speculative headers.

    python -m benchmarks.op_overhead --cases 5 --json op_overhead.json
"""
from __future__ import annotations

import statistics

from benchmarks.common import bench_argparser, load_corpora, write_report

CONFIGS = {"seed": dict(ride_along=False, speculative_headers=False),
           "ride": dict(ride_along=True, speculative_headers=False),
           "ride+spec": dict(ride_along=True, speculative_headers=True),
           "ride+spec+pld": dict(ride_along=True, speculative_headers=True, drafter="pld")}


def _summarise(name: str, results: list) -> dict:
    copy_f, gen_f, close_f, n_copy, n_gen = 0, 0, 0, 0, 0
    for res in results:
        for rec in res.stats.per_op:
            if rec["kind"] in ("CopyLines", "CopyTokens"):
                copy_f += rec["forwards"]
                n_copy += 1
            elif rec["kind"] == "Gen":
                gen_f += rec["forwards"]
                n_gen += 1
            else:
                close_f += rec["forwards"]
    forwards = sum(r.stats.forwards for r in results)
    tokens = sum(r.stats.output_tokens for r in results)
    steps = sum(r.stats.masked_steps for r in results)
    return {
        "config": name,
        "cases": len(results),
        "ops": n_copy + n_gen,
        "forwards": forwards,
        "fwd/program": forwards / max(1, len(results)),
        "fwd/copy op": copy_f / max(1, n_copy),
        "fwd/gen op": gen_f / max(1, n_gen),
        "fwd on close": close_f,
        "tokens/fwd": tokens / max(1, forwards),
        "guess acc": (sum(r.stats.guess_accepted for r in results)
                      / max(1, sum(r.stats.guess_tokens for r in results))),
        "mask us/step": 1000.0 * sum(r.stats.mask_ms for r in results) / max(1, steps),
        "wall ms (median)": statistics.median(r.stats.wall_ms for r in results) if results else 0.0,
    }


def mask_overhead_us(tokenizer, document: str, reps: int = 2000) -> dict:
    """Median microseconds of one masked step (FSM step + argmax over the allowed ids), isolated."""
    import time

    import torch

    from engine.guide.fsm import ProgramFSM
    from engine.guide.tokens import token_table
    from engine.prompt import DocumentView

    table = token_table(tokenizer)
    view = DocumentView(document, tokenizer)
    logits = torch.randn(len(tokenizer))
    op_choice = ProgramFSM(table, view)
    for t in table.copy_lines_open[:1]:
        op_choice.advance(t)  # now choosing copy vs gen
    digit = ProgramFSM(table, view)
    for t in table.copy_lines_open:
        digit.advance(t)  # now choosing the first digit of a line index
    out = {}
    for name, fsm in (("op choice", op_choice), ("line index digit", digit)):
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            st = fsm.step()
            if st.kind == "choose":
                int(st.allowed[torch.argmax(logits.index_select(0, st.allowed))])
            times.append((time.perf_counter() - t0) * 1e6)
        times.sort()
        out[name] = times[len(times) // 2]
    return out


def main(argv=None) -> dict:
    parser = bench_argparser(__doc__.splitlines()[0], default_cases=5)
    parser.add_argument("--max-new-tokens", type=int, default=96, help="budget of the free decodes")
    parser.add_argument("--model", default="default")
    args = parser.parse_args(argv)

    from engine.decode.program import decode_program
    from engine.backends.model import load_model
    from engine.program.oracle import line_program

    loaded = load_model(args.model, device="auto")
    pairs = [p for ps in load_corpora(args.cases).values() for p in ps]
    decode_program(loaded, pairs[0].document, pairs[0].instruction, max_new_tokens=4)  # warm-up
    rows, exact = [], {}
    for name, cfg in CONFIGS.items():
        results = []
        for pair in pairs:
            program = line_program(pair.document, pair.gold)
            res = decode_program(loaded, pair.document, pair.instruction, forced=program, **cfg)
            exact[name] = exact.get(name, 0) + int(res.text == pair.gold)
            results.append(res)
        row = _summarise(f"forced oracle, {name}", results)
        row["exact"] = exact[name]
        rows.append(row)
    free_ids = {}
    for name in ("ride", "ride+spec"):
        results = []
        for pair in pairs:
            res = decode_program(loaded, pair.document, pair.instruction, max_new_tokens=args.max_new_tokens,
                                 **CONFIGS[name])
            results.append(res)
            free_ids.setdefault(pair.task_id, []).append(res.output_ids)
        row = _summarise(f"free, {name}", results)
        row["exact"] = sum(int(r.text == p.gold) for r, p in zip(results, pairs))
        rows.append(row)
    lossless = all(a == b for a, b in free_ids.values())
    mask_us = mask_overhead_us(loaded.tokenizer, pairs[0].document)
    print("isolated masked-step overhead (median us): "
          + ", ".join(f"{k} {v:.1f}" for k, v in mask_us.items()) + "\n")
    return write_report("op_overhead", rows, args.json_path,
                        extra={"model": loaded.spec, "device": str(loaded.device),
                               "free_spec_lossless": lossless, "mask_step_us_median": mask_us},
                        title=f"Decoder forwards per op ({loaded.spec}, {loaded.device}); "
                              f"speculative headers lossless on free decodes: {lossless}")


if __name__ == "__main__":
    main()
