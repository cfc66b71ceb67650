"""benchmarks.speculative: every lossless strategy row (AR, HF prompt lookup, every registry drafter in
regeneration, CaD with every registry drafter) writes exactly its reference's output (AR's ids and text
for regeneration rows, cad+none's for CaD rows), forced and free-run, on a small sample: two
HumanEvalPack-Fix cases and one long document (cut to its first lines so the forced replay stays short).

The tiny random model keeps it under a minute on two cores (near-flat logits make it a hard case for
exact equality); the real-model variant runs one case free-run with a short budget."""
from __future__ import annotations

import pytest

from benchmarks.speculative import check_lossless, run_all, summarize
from benchmarks.speculative_runs import Case, humaneval_cases, long_cases, rows
from engine.drafters import DRAFTERS

LONG_LINES = 25     # the long document's first lines (document and gold alike)
FREE_BUDGET = 16    # free-run token budget


def _sample(tokenizer, context_length: int) -> list[Case]:
    cases = humaneval_cases(1)                            # one python, one js
    long = long_cases(1, tokenizer, context_length, max_tokens=2000)[0]
    head = lambda text: "\n".join(text.split("\n")[:LONG_LINES]) + "\n"  # noqa: E731
    return cases + [Case(long.corpus, long.case_id, head(long.document), long.instruction, head(long.gold))]


def _check(loaded, cases, modes=("forced", "free")) -> list[dict]:
    # the draft-model rows need a draft model beside the model (the benchmark leaves them out without one)
    lineup = rows([d for d in DRAFTERS if d != "draft-model" or getattr(loaded, "draft", None) is not None])
    records = run_all(loaded, cases, modes, lineup, max_new=FREE_BUDGET)
    assert not [r for r in records if r.get("error")], [r["error"] for r in records if r.get("error")]
    mismatches = check_lossless(records)
    assert mismatches == []
    expected = {(c.case_id, m, row.name) for c in cases for m in modes for row in lineup
                if not (row.kind == "hf" and m == "forced")}
    assert {(r["case_id"], r["mode"], r["strategy"]) for r in records} == expected
    assert all(r["lossless"] is True for r in records)
    return records


def test_every_strategy_equals_its_reference_tiny_model():
    from engine.backends.model import tiny_random_model

    import dataclasses

    loaded = dataclasses.replace(tiny_random_model(), draft=tiny_random_model(seed=1))  # the draft-model rows too
    cases = _sample(loaded.tokenizer, int(loaded.context_length))
    assert [c.corpus for c in cases] == ["humanevalfix-python", "humanevalfix-js", "longdocs"]
    records = _check(loaded, cases)
    forced = [r for r in records if r["mode"] == "forced"]
    assert all(r["exact"] for r in forced), "a forced replay writes the gold"
    table = summarize(records, [row.name for row in rows(DRAFTERS)])
    assert {r["strategy"] for r in table} >= {f"cad+{d}" for d in DRAFTERS}
    assert all(r["mismatches"] == 0 and r["lossless"] == r["cases"] for r in table)


@pytest.mark.real_model
def test_every_strategy_equals_its_reference_real_model(real_model):
    case = humaneval_cases(1)[0]
    _check(real_model, [case], modes=("free",))
