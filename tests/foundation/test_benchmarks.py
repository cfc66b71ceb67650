"""Each foundation benchmark runs end to end on a few cases and writes consistent JSON."""
from __future__ import annotations

import json

import pytest

from benchmarks import ceiling, formats, losslessness, perturbation
from benchmarks.common import markdown_table, percentile, write_report


def test_common_report(tmp_path, capsys):
    out = tmp_path / "r.json"
    write_report("demo", [{"a": 1, "b": 0.25}], out, {"note": "x"})
    data = json.loads(out.read_text())
    assert data["benchmark"] == "demo" and data["rows"] == [{"a": 1, "b": 0.25}] and data["note"] == "x"
    assert "| a | b |" in capsys.readouterr().out
    assert markdown_table([]) == "(no rows)"
    assert percentile([1, 2, 3, 4], 50) == 2.5


def test_perturbation_eps0_is_exact(tmp_path):
    report = perturbation.main(["--cases", "4", "--trials", "2", "--json", str(tmp_path / "p.json")])
    rows = {(r["corpus"], r["eps"]): r for r in report["rows"]}
    assert rows[("pooled", 0)]["em_exact"] == 1.0 and rows[("pooled", 0)]["attempts"] == 16
    assert rows[("pooled", 5)]["em_trimmed"] < 1.0
    assert json.loads((tmp_path / "p.json").read_text())["trials"] == 2


@pytest.mark.real_model
def test_ceiling_small(tmp_path):
    report = ceiling.main(["--cases", "3", "--json", str(tmp_path / "c.json")])
    py = next(r for r in report["rows"] if r["corpus"] == "python")
    assert 0.0 < py["f_line"] < 1.0 and py["cases"] == 3
    prof = report["span_profiles"]["python"]
    assert len(prof["per_case"]) == 3
    assert sum(sum(c["spans"]) for c in prof["per_case"]) == prof["T_copy"]
    cases = ceiling.bnd_cases(prof)
    assert len(cases) == 3 and all(t >= t_gen >= 0 and t_gen + sum(sp) >= t for t, t_gen, sp in cases)
    covers = [r["f_tok"] for r in report["token_cover"] if r["corpus"] == "python"]
    assert covers == sorted(covers, reverse=True)  # larger m never covers more


@pytest.mark.real_model
def test_losslessness_small(tmp_path):
    report = losslessness.main(["--cases", "3", "--json", str(tmp_path / "l.json")])
    line = report["totals"]["line"]
    assert line["cases"] == line["strict"] == line["clipped"] == 6
    assert not report["failures"]


@pytest.mark.real_model
def test_formats_small(tmp_path):
    report = formats.main(["--cases", "3", "--json", str(tmp_path / "f.json")])
    rows = {(r["corpus"], r["format"]): r for r in report["rows"]}
    assert rows[("pooled", "cad")]["rt_em"] == rows[("pooled", "udiff")]["rt_em"] == 1.0
    assert rows[("pooled", "cad")]["total_tok"] < rows[("pooled", "udiff")]["total_tok"]
    assert rows[("pooled", "full")]["cases"] == 6
