"""The everyday-edits corpus (evaluation.everyday) and its benchmark's bookkeeping (no model)."""
from __future__ import annotations

import re

import pytest

from benchmarks.everyday import outcome_of, summarize
from evaluation.everyday import _apply, everyday_cases


def test_every_case_has_one_right_answer_and_most_are_in_file_types_never_mined():
    """The documents are hand-written (never training data); since the data build mines configuration
    files, YAML/TOML/INI/shell cases are in file types it trains on: the report names them, and most
    cases (and file types) stay in languages never mined."""
    from training.langs import TRAIN_LANGS, language_of_name

    cases = everyday_cases()
    assert len(cases) >= 30 and len({c.case_id for c in cases}) == len(cases)
    for case in cases:
        assert (case.gold == case.document) == (case.kind == "noop"), case.case_id
        assert case.instruction.strip() and not re.search(r"\blines? \d", case.instruction)   # no line numbers
    never = [c for c in cases if language_of_name(c.filename) not in TRAIN_LANGS]
    assert len(never) >= 2 * len(cases) // 3 and len({c.file_type for c in never}) >= 13


def test_an_edit_must_name_one_place():
    with pytest.raises(ValueError, match="occurs 2 times"):
        _apply("a = 1\nb = 1\n", "setting", [("= 1", "= 2")])
    assert _apply("sum(x)\nM.sum(y)\nsummary\n", "rename", [("sum", "total")]) == "total(x)\nM.total(y)\nsummary\n"


def test_outcomes_and_summary():
    case = everyday_cases()[0]
    assert outcome_of(case, case.gold, False) == "exact"
    assert outcome_of(case, case.document, False) == "unchanged"
    assert outcome_of(case, case.document + "x", False) == "wrong"
    assert outcome_of(case, case.gold, True) == "incomplete"
    rows = [{"model": "m", "strategy": "cad", "kind": "setting", "outcome": "exact", "flagged": False, "seconds": 1.0},
            {"model": "m", "strategy": "cad", "kind": "setting", "outcome": "wrong", "flagged": True, "seconds": 3.0},
            {"model": "m", "strategy": "cad", "kind": "noop", "outcome": "exact", "flagged": False, "seconds": 2.0}]
    table = {r["kind"]: r for r in summarize(rows)}
    assert (table["ALL"]["n"], table["ALL"]["exact"], table["ALL"]["wrong"]) == (3, 2, 1)
    assert table["setting"]["flagged_wrong"] == "1/1" and table["setting"]["flagged_exact"] == "0/1"
    assert table["ALL"]["s_per_edit"] == 2.0
