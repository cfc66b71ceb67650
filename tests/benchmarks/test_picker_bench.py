"""Smoke test: benchmarks.picker on the real default model (one HumanEvalPack-Fix case per language,
no long document) writes its JSON and markdown with the documented fields; both strategies reproduce
the gold edit and auto's wall is the picked strategy's. No timing thresholds."""
from __future__ import annotations

import json

import pytest

from benchmarks import picker


@pytest.mark.real_model
def test_picker_bench_records_predictions_picks_and_both_walls(tmp_path):
    out, md = tmp_path / "picker.json", tmp_path / "picker.md"
    assert picker.main(["--cases", "1", "--long", "0", "--json", str(out), "--md", str(md)]) == 0
    report = json.loads(out.read_text())
    records = report["records"]
    assert len(records) == 4 and not any(r["error"] for r in records)   # 2 cases x cold / warm
    assert {r["cache"] for r in records} == {"cold", "warm"}
    for r in records:
        assert set(r["predicted_ms"]) == {"cad", "spec-edit"} and r["picked"] in r["predicted_ms"]
        assert r["cad_s"] > 0 and r["spec_s"] > 0 and r["best_s"] == min(r["cad_s"], r["spec_s"])
        if r["cache"] == "cold":
            picked_wall = r["cad_s"] if r["picked"] == "cad" else r["spec_s"]
            assert r["auto_s"] == pytest.approx(picked_wall + r["pick_ms"] / 1000.0)
        else:
            assert r["warmed"] in ("cad", "spec-edit")
    assert report["environment"]["calibration"]["token_ms"] > 0
    assert "| corpus | cache |" in md.read_text()
