"""Per-case runs for the end-to-end benchmark: strategy variants, forced replays, forward timing.

`ForwardRecorder` observes the backend's forwards (`engine.backends.base`: every forward of every strategy goes through a session)
and records (tokens, ms) per forward, so a run's time splits into the prompt prefill (the first
forward) and the decode that follows. `run_forced(variant, ...)` replays the gold output under one
strategy variant (engine.decode.regen forced mode for regen/spec-edit, engine.decode.program forced mode for
Copy-as-Decode) and returns a flat record; `run_free` decodes without forcing.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Variant:
    """One strategy configuration: `kind` is "regen" (engine.decode.regen) or "cad" (engine.decode.program)."""

    name: str
    kind: str
    options: dict = field(default_factory=dict)
    token_level: bool = False
    min_span: int | None = None  # token-level oracle's minimum span


def forced_variants(windows=(16, 32, 64), token_min_spans=(8,)) -> list[Variant]:
    """The forced-mode lineup: regen, spec-edit per window, CaD line overhead ladder, CaD tokens."""
    out = [Variant("regen", "regen", {"drafter": "none"})]
    out += [Variant(f"spec-edit W={w}", "regen", {"drafter": "spec-edit", "window": w}) for w in windows]
    ladder = [
        ("cad-line (seed schedule)", dict(ride_along=False, speculative_headers=False, monotonic=False)),
        ("cad-line + ride-along", dict(ride_along=True, speculative_headers=False, monotonic=False)),
        ("cad-line + spec headers", dict(ride_along=True, speculative_headers=True, monotonic=False)),
        ("cad-line + monotonic", dict(ride_along=True, speculative_headers=True, monotonic=True)),
    ]
    out += [Variant(name, "cad", opts) for name, opts in ladder]
    for m in dict.fromkeys(token_min_spans):
        out.append(Variant(f"cad-tokens m={m}", "cad", dict(ride_along=True, speculative_headers=True),
                           token_level=True, min_span=m))
    return out


class ForwardRecorder:
    """Context manager recording (tokens, ms) of every forward the backend runs while active.

    Observes through the backend interface (``engine.backends.base``: ``backend.observers``); on CUDA
    the session synchronizes before timing, so ms is the device work.
    """

    def __init__(self, backend):
        self.forwards: list[tuple[int, float]] = []
        self._backend = backend

    def _observe(self, ids, ms: float) -> None:
        self.forwards.append((len(ids), ms))

    def __enter__(self) -> "ForwardRecorder":
        self._backend.observers.append(self._observe)
        return self

    def __exit__(self, *exc) -> None:
        self._backend.observers.remove(self._observe)


def oracle_program(variant: Variant, pair, tokenizer):
    """The gold program for a CaD variant: line oracle, or token oracle with the variant's m."""
    from engine.program.oracle import line_program, token_program
    from engine.prompt import document_token_ids

    if not variant.token_level:
        return line_program(pair.document, pair.gold)

    def decode(ids) -> str:
        return tokenizer.decode(list(ids), clean_up_tokenization_spaces=False, skip_special_tokens=False)

    gold_ids = tokenizer.encode(pair.gold, add_special_tokens=False)
    return token_program(document_token_ids(tokenizer, pair.document), gold_ids, decode,
                         min_span=variant.min_span or 8)


def _instruction(pair) -> str:
    return getattr(pair, "instruction", None) or f"Fix bugs in {pair.entry_point}."


def _once(variant: Variant, loaded, pair, *, forced: bool, max_new_tokens: int | None, device) -> dict:
    from engine.decode.program import decode_program
    from engine.decode.regen import regenerate

    instr = _instruction(pair)
    rec = ForwardRecorder(loaded)
    program = None
    t0 = time.perf_counter()
    with rec:
        if variant.kind == "regen":
            kwargs = dict(variant.options)
            if forced:
                kwargs["forced"] = pair.gold
            if max_new_tokens:
                kwargs["max_new_tokens"] = max_new_tokens
            res = regenerate(loaded, pair.document, instr, **kwargs)
            ops, parsed = 0, res.stopped_by in ("end", "eos", "target")
        else:
            if forced:
                program = oracle_program(variant, pair, loaded.tokenizer)
            kwargs = dict(variant.options, token_level=variant.token_level, forced=program)
            if max_new_tokens:
                kwargs["max_new_tokens"] = max_new_tokens
            res = decode_program(loaded, pair.document, instr, **kwargs)
            ops, parsed = len(res.program) + 1, res.resolve_error is None and not res.stats.truncated
    st = res.stats  # engine.decode.types.DecodeStats, the one counters type of every strategy
    text, out_program = res.text, res.program
    counts = dict(decoded=st.decoded_tokens, copied=st.copied_tokens, forced=st.forced_tokens,
                  masked_steps=st.masked_steps, ops=ops, truncated=st.truncated, parsed=parsed)
    wall = (time.perf_counter() - t0) * 1000.0
    sizes = [n for n, _ in rec.forwards]
    prefill = rec.forwards[0][1] if rec.forwards else 0.0
    return {
        "variant": variant.name, "task_id": pair.task_id, "lang": pair.lang,
        "ok": text == pair.gold, "wall_ms": wall, "prefill_ms": prefill, "decode_ms": wall - prefill,
        "forward_ms": sum(ms for _, ms in rec.forwards[1:]),
        "forwards": len(sizes), "sizes": sizes, "program": out_program, **counts,
    }


def run_variant(variant: Variant, loaded, pair, *, forced: bool = True, repeats: int = 1,
                max_new_tokens: int | None = None, device=None) -> dict:
    """Run one variant on one pair `repeats` times; keep the run with the median wall time."""
    runs = [_once(variant, loaded, pair, forced=forced, max_new_tokens=max_new_tokens, device=device)
            for _ in range(max(1, repeats))]
    runs.sort(key=lambda r: r["wall_ms"])
    chosen = runs[len(runs) // 2]
    chosen["repeats_wall_ms"] = [r["wall_ms"] for r in runs]
    return chosen


def predicted_ms(record: dict, curve) -> float:
    """Extended cost model for a run's post-prefill part, from its actual forward schedule:
    Σ over forwards τ·n/s(n) (1-token forwards cost τ) + c_mask per masked step + c_sync per op."""
    from evaluation.costmodel import predict_from_forwards

    return predict_from_forwards(record["sizes"][1:], tau_ms=curve.tau_ms, s=curve.s, fixed=curve.fixed,
                                 masked_steps=record["masked_steps"], ops=record["ops"])


def median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def endpoint_accuracy(program: Any, oracle: Any) -> tuple[int, int, int]:
    """(#oracle copy ops, #starts matched, #ends matched), aligning the i-th predicted copy op with
    the i-th oracle copy op (line or token copies)."""
    from engine.program.grammar import CopyLines, CopyTokens

    def copies(p):
        return [op for op in (p or ()) if isinstance(op, (CopyLines, CopyTokens))]

    pred, gold = copies(program), copies(oracle)
    starts = sum(1 for a, b in zip(pred, gold) if a.start == b.start)
    ends = sum(1 for a, b in zip(pred, gold) if a.end == b.end)
    return len(gold), starts, ends
