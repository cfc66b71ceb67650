"""Cost model of Copy-as-Decode: the kernel curve s(N), the closed-form bound, predictions, m*.

Owns the arithmetic of the seed paper's §2.1 and Appendices H/J, on plain numbers:

* `KernelCurve`: the measured per-span speedup s(N) = T_AR(N) / T_PP(N) (from a kernel JSON written
  by `benchmarks.kernel`), interpolated piecewise-linearly in (log N, log s) between measured N and
  clamped at both ends; also carries τ (single-token decode latency) and the fixed costs.
* `bnd_exact(T, T_gen, spans, s)`: eq. (3), T / (T_gen + Σ N_k / s(N_k)); `bnd_exact_corpus` pools a
  corpus's exact span histogram (ΣT over Σ denominators).
* `predict_ms` (extended cost model, eq. (2) + per-op forwards) and `predict_from_forwards`
  (one term per forward the decoder actually ran).
* `m_star` / `m_star_safe`: the minimum span worth splicing, min{N : s(N) > 1 + c/(N·τ)} and the
  conservative min{N : s(N) > 1.5}.
"""
from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

SpeedupFn = Callable[[float], float]


class CostModelError(ValueError):
    """Bad input to the cost model (empty/invalid kernel curve, negative lengths…)."""


@dataclass(frozen=True)
class FixedCosts:
    """Per-op fixed costs in milliseconds (seed Appendix H)."""

    c_mask_ms: float = 0.0  # masked argmax minus plain argmax, per masked step
    c_sync_ms: float = 0.0  # CPU-side work per op (.item(), small decodes, substring checks)
    c_forced_ms: float = 0.0  # one short (3–5 token) forced-literal forward

    @property
    def c_ms(self) -> float:
        """c = c_mask + c_sync, the overhead m* is defined against (Appendix J)."""
        return self.c_mask_ms + self.c_sync_ms


@dataclass(frozen=True)
class KernelCurve:
    """Measured s(N) at increasing span lengths `ns`, with τ and fixed costs when known."""

    ns: tuple[int, ...]
    speedups: tuple[float, ...]
    tau_ms: float | None = None
    fixed: FixedCosts = field(default_factory=FixedCosts)
    source: str = ""

    def __post_init__(self):
        if not self.ns or len(self.ns) != len(self.speedups):
            raise CostModelError(
                f"kernel curve needs equal, non-empty N and s lists (got {len(self.ns)} N, "
                f"{len(self.speedups)} s){' from ' + self.source if self.source else ''}"
            )
        if any(b <= a for a, b in zip(self.ns, self.ns[1:])) or self.ns[0] < 1:
            raise CostModelError(f"kernel N values must be increasing and >= 1, got {self.ns}")
        if any(not (s > 0 and math.isfinite(s)) for s in self.speedups):
            raise CostModelError(f"kernel speedups must be positive and finite, got {self.speedups}")

    def s(self, n: float) -> float:
        """Interpolated s(N): exact at measured N, log-log linear between, clamped outside."""
        if n <= self.ns[0]:
            return self.speedups[0]
        if n >= self.ns[-1]:
            return self.speedups[-1]
        i = bisect.bisect_right(self.ns, n)
        n0, n1 = self.ns[i - 1], self.ns[i]
        s0, s1 = self.speedups[i - 1], self.speedups[i]
        w = (math.log(n) - math.log(n0)) / (math.log(n1) - math.log(n0))
        return math.exp(math.log(s0) + w * (math.log(s1) - math.log(s0)))

    __call__ = s

    def splice_ms(self, n: int) -> float:
        """Predicted wall time of one parallel-prefill forward over n tokens: τ·n/s(n)."""
        return self._tau() * n / self.s(n)

    def _tau(self) -> float:
        if self.tau_ms is None:
            raise CostModelError("this kernel curve has no tau_ms; re-run benchmarks.kernel to measure it")
        return self.tau_ms

    @classmethod
    def from_report(cls, report: Mapping, source: str = "") -> "KernelCurve":
        """Build from a `benchmarks.kernel` JSON object: rows of {N, s}, plus tau_ms, fixed_costs."""
        rows = report.get("rows")
        if not rows:
            raise CostModelError(f"kernel report {source or ''} has no rows; expected rows of {{N, s}}")
        try:
            pairs = sorted((int(r["N"]), float(r["s"])) for r in rows)
        except (KeyError, TypeError, ValueError) as exc:
            raise CostModelError(f"kernel report {source} rows need numeric 'N' and 's': {exc}") from exc
        fc = report.get("fixed_costs") or {}
        fixed = FixedCosts(
            c_mask_ms=float(fc.get("c_mask_ms", 0.0)),
            c_sync_ms=float(fc.get("c_sync_ms", 0.0)),
            c_forced_ms=float(fc.get("c_forced_ms", 0.0)),
        )
        tau = report.get("tau_ms")
        return cls(
            ns=tuple(n for n, _ in pairs),
            speedups=tuple(s for _, s in pairs),
            tau_ms=float(tau) if tau is not None else None,
            fixed=fixed,
            source=source,
        )

    @classmethod
    def from_json(cls, path: str | Path) -> "KernelCurve":
        path = Path(path)
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise CostModelError(f"cannot read kernel JSON {path}: {exc}; run `python -m benchmarks.kernel --json {path}`") from exc
        return cls.from_report(report, source=str(path))


# --------------------------------------------------------------------------- eq. (3)


def _check_lengths(T: int, T_gen: int, spans: Sequence[int]) -> None:
    if T < 0 or T_gen < 0 or any(n < 0 for n in spans):
        raise CostModelError(f"token counts must be >= 0 (T={T}, T_gen={T_gen}, spans={list(spans)})")


def bnd_denominator(T_gen: int, spans: Sequence[int], s: SpeedupFn) -> float:
    """T_gen + Σ N_k / s(N_k), in decode-step equivalents."""
    return T_gen + sum(n / s(n) for n in spans if n > 0)


def bnd_exact(T: int, T_gen: int, spans: Sequence[int], s: SpeedupFn) -> float:
    """Seed eq. (3): the fixed-cost-agnostic speedup bound T / (T_gen + Σ N_k/s(N_k))."""
    _check_lengths(T, T_gen, spans)
    den = bnd_denominator(T_gen, spans, s)
    if den <= 0:
        raise CostModelError(f"bound undefined: nothing to decode or copy (T={T}, T_gen={T_gen}, spans={list(spans)})")
    return T / den


def bnd_exact_corpus(cases: Iterable[tuple[int, int, Sequence[int]]], s: SpeedupFn) -> float:
    """Pooled bound over a corpus's exact span histogram: Σ T / Σ (T_gen + Σ N_k/s(N_k))."""
    total_T = 0.0
    total_den = 0.0
    for T, T_gen, spans in cases:
        _check_lengths(T, T_gen, spans)
        total_T += T
        total_den += bnd_denominator(T_gen, spans, s)
    if total_den <= 0:
        raise CostModelError("bound undefined: the corpus has no tokens")
    return total_T / total_den


# --------------------------------------------------------------------------- extended cost model


def predict_ms(
    *,
    gen_tokens: int,
    spans: Sequence[int],
    ops: int,
    tau_ms: float,
    s: SpeedupFn,
    fixed: FixedCosts = FixedCosts(),
    masked_steps: int = 0,
    forced_forwards: int = 0,
    base_ms: float = 0.0,
) -> float:
    """Extended cost model (eq. (2) + Appendix H) for one edit, in ms.

    gen_tokens × τ + Σ τ·N_k/s(N_k) + masked_steps × (τ + c_mask) + forced_forwards × c_forced
    + ops × c_sync + base_ms (e.g. the prompt prefill, paid by every strategy).
    """
    _check_lengths(0, gen_tokens, spans)
    if min(ops, masked_steps, forced_forwards) < 0:
        raise CostModelError(f"op/step counts must be >= 0 (ops={ops}, masked={masked_steps}, forced={forced_forwards})")
    return (
        gen_tokens * tau_ms
        + sum(tau_ms * n / s(n) for n in spans if n > 0)
        + masked_steps * (tau_ms + fixed.c_mask_ms)
        + forced_forwards * fixed.c_forced_ms
        + ops * fixed.c_sync_ms
        + base_ms
    )


def predict_from_forwards(
    sizes: Sequence[int],
    *,
    tau_ms: float,
    s: SpeedupFn,
    fixed: FixedCosts = FixedCosts(),
    masked_steps: int = 0,
    ops: int = 0,
) -> float:
    """Predicted ms for a run given the size of every forward it executed.

    Each forward over n tokens costs τ·n/s(n) (n=1 is one decode step, τ/s(1) ≈ τ), plus c_mask per
    masked step and c_sync per op.
    """
    if any(n < 1 for n in sizes):
        raise CostModelError(f"forward sizes must be >= 1, got {[n for n in sizes if n < 1][:5]}")
    return (
        sum(tau_ms * n / s(n) for n in sizes)
        + masked_steps * fixed.c_mask_ms
        + ops * fixed.c_sync_ms
    )


# --------------------------------------------------------------------------- m* policy


MIN_SPLICE = 2  # a 1-token "splice" is the same forward as a decode step: s(1) = 1 up to noise


def m_star(s: SpeedupFn, c_ms: float, tau_ms: float, ns: Iterable[int]) -> int | None:
    """Appendix J: min{N in ns, N >= 2 : s(N) > 1 + c/(N·τ)}; None when no N qualifies.

    N = 1 is excluded: splicing one token is the same forward as decoding it, so a measured
    s(1) > 1 is timing noise, not a reason to copy single tokens (the seed's Table 17 also starts at 2).
    """
    if tau_ms <= 0:
        raise CostModelError(f"tau_ms must be > 0, got {tau_ms}")
    for n in sorted(ns):
        if n >= MIN_SPLICE and s(n) > 1.0 + c_ms / (n * tau_ms):
            return n
    return None


def m_star_safe(s: SpeedupFn, ns: Iterable[int], threshold: float = 1.5) -> int | None:
    """The conservative deployment threshold: min{N in ns, N >= 2 : s(N) > threshold}."""
    for n in sorted(ns):
        if n >= MIN_SPLICE and s(n) > threshold:
            return n
    return None


def curve_m_star(curve: KernelCurve, *, include_forced: bool = False) -> int | None:
    """m* on a measured curve's own N grid, c = c_mask + c_sync (+ c_forced if asked)."""
    c = curve.fixed.c_ms + (curve.fixed.c_forced_ms if include_forced else 0.0)
    return m_star(curve.s, c, curve._tau(), curve.ns)
