"""evaluation.costmodel on hand-computed examples."""
from __future__ import annotations

import json

import pytest

from evaluation.costmodel import (
    CostModelError,
    FixedCosts,
    KernelCurve,
    bnd_exact,
    bnd_exact_corpus,
    curve_m_star,
    m_star,
    m_star_safe,
    predict_from_forwards,
    predict_ms,
)

LINEAR = KernelCurve(ns=(1, 2, 4, 8), speedups=(1.0, 2.0, 4.0, 8.0), tau_ms=2.0)


def test_interpolation_is_exact_at_points_loglog_between_and_clamped():
    assert LINEAR.s(4) == 4.0
    assert LINEAR.s(3) == pytest.approx(3.0)  # s = N is a straight line in log-log
    assert LINEAR.s(0.5) == 1.0
    assert LINEAR.s(1000) == 8.0
    curve = KernelCurve(ns=(1, 4), speedups=(1.0, 16.0))
    assert curve.s(2) == pytest.approx(4.0)  # log-log midpoint of (1,1)-(4,16)


def test_splice_cost_is_tau_n_over_s():
    assert LINEAR.splice_ms(8) == pytest.approx(2.0 * 8 / 8)
    with pytest.raises(CostModelError, match="no tau_ms"):
        KernelCurve(ns=(1,), speedups=(1.0,)).splice_ms(4)


def test_bnd_exact_hand_example():
    # 100 tokens, 20 generated, two 40-token copies at s=8: 100 / (20 + 5 + 5)
    assert bnd_exact(100, 20, [40, 40], lambda n: 8.0) == pytest.approx(100 / 30)
    # no copies: no speedup
    assert bnd_exact(50, 50, [], lambda n: 8.0) == pytest.approx(1.0)


def test_bnd_exact_corpus_pools_tokens_and_denominators():
    cases = [(100, 20, [40, 40]), (50, 50, [])]
    assert bnd_exact_corpus(cases, lambda n: 8.0) == pytest.approx(150 / 80)
    # pooled is not the mean of per-case bounds
    mean = (100 / 30 + 1.0) / 2
    assert bnd_exact_corpus(cases, lambda n: 8.0) != pytest.approx(mean)


def test_bnd_rejects_bad_input():
    with pytest.raises(CostModelError, match=">= 0"):
        bnd_exact(10, -1, [], lambda n: 2.0)
    with pytest.raises(CostModelError, match="undefined"):
        bnd_exact(0, 0, [], lambda n: 2.0)


def test_predict_ms_hand_example():
    fixed = FixedCosts(c_mask_ms=0.1, c_sync_ms=0.25, c_forced_ms=1.5)
    got = predict_ms(gen_tokens=10, spans=[8], ops=4, tau_ms=2.0, s=lambda n: 4.0, fixed=fixed,
                     masked_steps=3, forced_forwards=2, base_ms=7.0)
    # 10*2 + 2*8/4 + 3*(2+0.1) + 2*1.5 + 4*0.25 + 7
    assert got == pytest.approx(20 + 4 + 6.3 + 3 + 1 + 7)


def test_predict_from_forwards_hand_example():
    fixed = FixedCosts(c_mask_ms=0.5, c_sync_ms=1.0)
    got = predict_from_forwards([1, 1, 8, 2], tau_ms=2.0, s=LINEAR.s, fixed=fixed, masked_steps=2, ops=3)
    # forwards: 2/1 + 2/1 + 2*8/8 + 2*2/2 = 8; + 2*0.5 + 3*1.0
    assert got == pytest.approx(8 + 1 + 3)
    with pytest.raises(CostModelError, match=">= 1"):
        predict_from_forwards([0], tau_ms=1.0, s=LINEAR.s)


def test_m_star_strict_and_safe():
    ns = LINEAR.ns
    assert m_star(LINEAR.s, c_ms=0.0, tau_ms=1.0, ns=[1, 2]) == 2  # N=1 never counts, even if s(1) > 1
    noisy = KernelCurve(ns=(1, 2, 4), speedups=(1.2, 1.3, 3.0))
    assert m_star_safe(noisy.s, noisy.ns) == 4
    assert m_star(LINEAR.s, c_ms=1.0, tau_ms=1.0, ns=ns) == 2  # 2 > 1 + 1/2
    assert m_star(LINEAR.s, c_ms=10.0, tau_ms=1.0, ns=ns) == 4  # 2 > 6 fails; 4 > 3.5
    assert m_star(LINEAR.s, c_ms=1000.0, tau_ms=1.0, ns=ns) is None
    assert m_star_safe(LINEAR.s, ns) == 2
    assert m_star_safe(LINEAR.s, ns, threshold=5.0) == 8
    flat = KernelCurve(ns=(1, 2), speedups=(0.9, 1.0))
    assert m_star_safe(flat.s, flat.ns) is None


def test_curve_from_kernel_json(tmp_path):
    report = {
        "benchmark": "kernel",
        "rows": [{"N": 4, "s": 3.0}, {"N": 1, "s": 1.1}, {"N": 16, "s": 9.0}],
        "tau_ms": 10.0,
        "fixed_costs": {"c_mask_ms": 0.2, "c_sync_ms": 0.3, "c_forced_ms": 12.0},
    }
    path = tmp_path / "k.json"
    path.write_text(json.dumps(report))
    curve = KernelCurve.from_json(path)
    assert curve.ns == (1, 4, 16) and curve.speedups == (1.1, 3.0, 9.0)
    assert curve.fixed.c_ms == pytest.approx(0.5)
    # c=0.5, tau=10: N=1 is never a splice; N=4 (interpolated s(2) = sqrt(1.1*3)=1.817 is not on the
    # grid): 3.0 > 1 + 0.5/40 -> m* = 4; with c_forced too: 3.0 > 1 + 12.5/40
    assert curve_m_star(curve) == 4
    assert curve_m_star(curve, include_forced=True) == 4
    assert m_star(curve.s, 0.5, 10.0, ns=[1, 2, 3]) == 2  # s(2) = 1.817 > 1.025
    with pytest.raises(CostModelError, match="run `python -m benchmarks.kernel"):
        KernelCurve.from_json(tmp_path / "missing.json")
    with pytest.raises(CostModelError, match="no rows"):
        KernelCurve.from_report({"rows": []})
    with pytest.raises(CostModelError, match="increasing"):
        KernelCurve(ns=(4, 2), speedups=(1.0, 2.0))
