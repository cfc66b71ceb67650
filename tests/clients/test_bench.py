"""cad-bench and its test runner: EM semantics, fatal console.assert, --gold sanity, LSP replay
against a fake server (exact gold edits) and against the real server + real model."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from clients import bench
from clients.testrun import run_tests

REPO = Path(__file__).resolve().parents[2]
FAKE_SERVER = f"{sys.executable} {REPO / 'tests' / 'clients' / 'fake_cad_server.py'}"


def test_exact_match_strips_at_most_one_trailing_newline():
    assert bench.exact_match("a\n", "a")
    assert bench.exact_match("a\n", "a\n")
    assert not bench.exact_match("a\n\n", "a")
    assert not bench.exact_match("a ", "a")


def test_js_console_assert_failures_are_fatal_and_timeouts_fail():
    test = "const t = () => { console.assert(f(2) === 4) }\nt()\n"
    assert run_tests("js", "const f = (x) => x * 2\n", test, "f").passed
    bad = run_tests("js", "const f = (x) => x + 3\n", test, "f")
    assert not bad.passed and "Assertion failed" in bad.output_tail
    hang = run_tests("js", "const f = (x) => { while (true) {} }\n", test, "f", timeout_s=1.0)
    assert not hang.passed and hang.timed_out


def test_python_runner_appends_check_and_fails_on_exceptions():
    test = "def check(candidate):\n    assert candidate(2) == 4\n"
    assert run_tests("python", "def f(x):\n    return x * 2\n", test, "f").passed
    assert not run_tests("python", "def f(x):\n    return x + 3\n", test, "f").passed
    assert not run_tests("python", "def f(x):\n    raise ValueError\n", test, "f").passed


def test_gold_mode_gold_passes_and_buggy_fails_on_10_cases_per_language(tmp_path, capsys):
    out = tmp_path / "gold.json"
    assert bench.main(["--gold", "--lang", "both", "--cases", "10", "--json", str(out), "-q"]) == 0
    report = json.loads(out.read_text())
    rows = {r["lang"]: r for r in report["rows"]}
    assert set(rows) == {"python", "js"}
    for row in rows.values():
        assert row["cases"] == 10
        assert row["gold pass@1"] == 1.0, row
        assert row["buggy pass@1"] == 0.0, row
    assert "| js |" in capsys.readouterr().out


def test_replay_over_lsp_with_gold_edits_gives_full_em_and_pass(tmp_path, monkeypatch):
    out = tmp_path / "fake.json"
    monkeypatch.setenv("FAKE_CAD_MODE", "gold")   # the fake server turns each buggy doc into its gold
    code = bench.main(["--lang", "both", "--cases", "4", "--concurrency", "3", "--server-cmd", FAKE_SERVER,
                       "--json", str(out), "-q"])
    assert code == 0
    report = json.loads(out.read_text())
    assert len(report["cases"]) == 8
    for case in report["cases"]:
        assert case["applied"] and case["em"] and case["passed"] and not case["error"], case
        assert case["latency_s"] > 0
    assert report["rows"][-1]["lang"] == "all" and report["rows"][-1]["pass@1"] == 1.0


@pytest.mark.real_model
@pytest.mark.slow
def test_bench_three_cases_against_real_server_and_model(tmp_path):
    out = tmp_path / "real.json"
    code = bench.main(["--lang", "python", "--cases", "3", "--max-new-tokens", "8", "--concurrency", "2",
                       "--json", str(out), "-q"])
    assert code == 0
    report = json.loads(out.read_text())
    assert len(report["cases"]) == 3
    for case in report["cases"]:
        assert not case["error"], case
        # the server answered: our copy took the edit, or it was refused as cut off by the budget
        assert case["applied"] or "maxNewTokens" in case["message"], case
        assert case["latency_s"] > 0
        assert case["stats"]["decoded_tokens"] <= 8   # the maxNewTokens server setting reached the engine
    row = report["rows"][0]
    assert row["cases"] == 3 and 0.0 <= row["pass@1"] <= 1.0


def test_js_md5_task_runs_offline():
    from evaluation.corpus import load_pairs

    (pair,) = [p for p in load_pairs("js") if p.task_id == "JavaScript/162"]
    assert run_tests("js", pair.gold, pair.test, pair.entry_point).passed
    assert not run_tests("js", pair.document, pair.test, pair.entry_point).passed
