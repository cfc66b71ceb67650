"""Smoke test: benchmarks.warm_start on the real default model (one HumanEvalPack-Fix case per
language, no long document) writes its JSON and markdown with the documented fields; the warm edit
reproduces the cold one. No timing thresholds."""
from __future__ import annotations

import json

import pytest

from benchmarks import warm_start


@pytest.mark.real_model
def test_warm_start_writes_cold_warmup_and_warm_per_strategy(tmp_path):
    out, md = tmp_path / "warm.json", tmp_path / "warm.md"
    assert warm_start.main(["--cases", "1", "--long", "0", "--json", str(out), "--md", str(md)]) == 0
    report = json.loads(out.read_text())
    records = report["records"]
    assert {r["strategy"] for r in records} == {row.name for _, row in warm_start.strategy_rows()}
    assert len(records) == 4 and not any(r["error"] for r in records)
    for r in records:
        assert r["warm_status"] == "warm" and r["prompt_tok"] > r["doc_tokens"] > 0
        assert r["lossless"] and r["cold_s"] > 0 and r["warm_s"] > 0 and r["warmup_s"] > 0
    summary = report["summary"]
    assert {s["corpus"] for s in summary} == {"humanevalfix-python", "humanevalfix-js"}
    for s in summary:
        assert s["warm/cold"] == pytest.approx(s["warm_s"] / s["cold_s"])
    assert "| corpus | strategy |" in md.read_text()
