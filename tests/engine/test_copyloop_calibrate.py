"""CopyLoop calibration (training.copyloop_calibrate): train-split cases only, disjoint samples, the
pick is the calibration optimum, the deficit is measured against the evaluation optimum, and every
setting's output is identical to greedy (on a 6-layer tiny model)."""
from __future__ import annotations

import pytest

from evaluation.corpus import load_pairs, split
from training.copyloop_calibrate import calibrate, geo_mean, sample_cases


def test_cases_come_from_the_train_split_and_are_disjoint():
    cal, ev = sample_cases(4, 4, seed=0)
    _train, held_out = split(load_pairs("python"))
    held = {p.task_id for p in held_out}
    ids = [p.task_id for p in cal + ev]
    assert len(set(ids)) == 8 and not held & set(ids)
    assert [p.task_id for p in sample_cases(4, 4, seed=0)[0]] == [p.task_id for p in cal]   # seeded
    with pytest.raises(ValueError):
        sample_cases(10_000, 1)


def test_geo_mean():
    assert geo_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert geo_mean([]) == 0.0 and geo_mean([0.0, 4.0]) == pytest.approx(4.0)


def test_calibrate_on_a_tiny_model(make_tiny_model, real_tokenizer):
    tiny = make_tiny_model(real_tokenizer, layers=6, seed=3)
    report = calibrate(tiny, depths=[0, 2], tails=[4, 8], cases=1, eval_cases=1, max_new=8)
    cal = report["calibration"]
    settings = [f"d_s={d},K={k}" for d in (0, 2) for k in (4, 8)]
    picked = f"d_s={report['screen_depth']},K={report['tail']}"
    assert picked == max(settings, key=lambda s: cal["calibration_tok_per_s"][s])
    best = cal["evaluation_optimum"]
    best_tps = cal["evaluation_tok_per_s"][f"d_s={best['screen_depth']},K={best['tail']}"]
    assert cal["deficit_vs_evaluation_optimum"] == pytest.approx(1 - cal["evaluation_tok_per_s"][picked] / best_tps,
                                                                   abs=1e-3)
    assert cal["all_identical_to_greedy"] is True
    assert [row["identical_to_greedy"] for row in report["comparison"]] == [1] * len(report["comparison"])
    with pytest.raises(ValueError, match="outside"):
        calibrate(tiny, depths=[6], tails=[4], cases=1, eval_cases=1, max_new=4)
