"""Smoke tests: benchmarks.kernel (--quick) and benchmarks.e2e (--cases 1, forced and --free) run on
the real default model and write JSON with the documented fields. They prove the code paths run;
the numbers themselves are not checked (no timing thresholds)."""
from __future__ import annotations

import json
import math

import pytest
import torch

from benchmarks import e2e, kernel


@pytest.fixture(scope="module")
def kernel_json(tmp_path_factory):
    path = tmp_path_factory.mktemp("kernel") / "kernel.json"
    rc = kernel.main(["--quick", "--ns", "1", "2", "8", "--trials", "1", "--prefix", "64", "--json", str(path)])
    assert rc == 0
    return path


@pytest.mark.real_model
def test_kernel_quick_writes_curve_fixed_costs_and_m_star(kernel_json):
    report = json.loads(kernel_json.read_text())
    assert [r["N"] for r in report["rows"]] == [1, 2, 8]
    for row in report["rows"]:
        assert row["ar_ms"] > 0 and row["pp_ms"] > 0
        assert row["s"] == pytest.approx(row["ar_ms"] / row["pp_ms"])
    assert report["tau_ms"] == pytest.approx(report["rows"][0]["ar_ms"])
    fixed = report["fixed_costs"]
    assert {"c_mask_ms", "c_sync_ms", "c_forced_ms", "c_forced_extra_ms"} <= set(fixed)
    assert fixed["c_forced_ms"] > 0 and fixed["c_mask_ms"] >= 0
    for key in ("m_star", "m_star_safe", "m_star_with_forced"):
        assert key in report and (report[key] is None or report[key] in (2, 8))
    assert report["config"]["prefix"] == 64 and report["config"]["device"] == "cpu"


def test_gpu_only_config_skips_cleanly_without_cuda(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("CUDA present: this would run the 7B-shape sweep")
    path = tmp_path / "k7.json"
    rc = kernel.main(["--model-config", "qwen2.5-7b", "--random-weights", "--dtype", "bf16", "--json", str(path)])
    assert rc == 0
    assert "SKIPPED" in capsys.readouterr().out
    assert "CUDA is not available" in json.loads(path.read_text())["skipped"]


@pytest.mark.real_model
def test_e2e_forced_one_case(kernel_json, tmp_path):
    path = tmp_path / "e2e.json"
    e2e.main(["--cases", "1", "--langs", "python", "--windows", "32", "--kernel-json", str(kernel_json),
              "--json", str(path)])
    report = json.loads(path.read_text())
    names = [r["variant"] for r in report["rows"]]
    assert names[:2] == ["regen", "spec-edit W=32"]
    assert {"cad-line (seed schedule)", "cad-line + ride-along", "cad-line + spec headers",
            "cad-line + monotonic", "cad-tokens m=8"} <= set(names)
    for row in report["rows"]:
        assert row["lossless"] == row["cases"] == 1, row["variant"]  # forced replays reproduce the gold
        assert row["decode_ms/case"] > 0 and row["pred_ms/case"] > 0
        assert math.isfinite(row["speedup"]) and row["bnd_exact"] > 0  # s(N) is timing: no value check
    regen = next(r for r in report["rows"] if r["variant"] == "regen")
    assert regen["speedup"] == pytest.approx(1.0)
    seed = next(r for r in report["rows"] if r["variant"] == "cad-line (seed schedule)")
    ride = next(r for r in report["rows"] if r["variant"] == "cad-line + ride-along")
    assert ride["fwd/case"] < seed["fwd/case"] < regen["fwd/case"]
    assert report["notes"] and report["bnd_exact"]["python"] > 0

    # re-scoring the records with a (here: rescaled) kernel curve reuses the measurements
    k = json.loads(kernel_json.read_text())
    k["tau_ms"] *= 2
    k2 = tmp_path / "k2.json"
    k2.write_text(json.dumps(k))
    again = e2e.main(["--rescore", str(path), "--kernel-json", str(k2), "--json", str(tmp_path / "r.json")])
    for old, new in zip(report["rows"], again["rows"]):
        assert new["decode_ms/case"] == pytest.approx(old["decode_ms/case"])
        assert new["bnd_exact"] == pytest.approx(old["bnd_exact"])  # tau does not enter eq. (3)
        if old["variant"] == "regen":  # 1-token forwards only: prediction scales with tau
            assert new["pred_ms/case"] == pytest.approx(2 * old["pred_ms/case"], rel=1e-6)


@pytest.mark.real_model
def test_e2e_free_one_case(tmp_path):
    path = tmp_path / "free.json"
    e2e.main(["--free", "--cases", "1", "--langs", "python", "--free-extra", "0", "--json", str(path)])
    report = json.loads(path.read_text())
    assert [r["strategy"] for r in report["rows"]] == ["cad-line", "regen"]
    for row in report["rows"]:
        assert 0 <= row["EM"] <= 1 and 0 <= row["parse_rate"] <= 1
        assert row["wall_ms/case"] > 0 and row["fwd/case"] >= 1
    cad = report["rows"][0]
    assert 0 <= cad["start_acc"] <= 1 and 0 <= cad["end_acc"] <= 1
