"""benchmarks.breakage counts, per family, the gold edits the syntax-breakage warning fires on."""
from __future__ import annotations

from benchmarks.breakage import gold_rows

DOC = "int f(int x) {\n  return g(x);\n}\n"


def test_gold_edits_are_counted_per_family_and_check():
    cases = [
        {"family": "bugfix", "document": DOC, "gold": DOC.replace("g(x)", "g(x + 1)")},       # keeps the brackets
        {"family": "mechanical", "document": DOC, "gold": DOC.replace("  return g(x);\n}\n", "  return g(x);\n")},
        {"family": "mechanical", "document": DOC, "gold": DOC},
    ]
    by = {r["group"]: r for r in gold_rows(cases)}
    assert (by["bugfix"]["cases"], by["bugfix"]["flagged"]) == (1, 0)
    assert (by["mechanical"]["cases"], by["mechanical"]["flagged"], by["mechanical"]["by_check"]) == (2, 1, "brackets 1")
    assert by["humanevalpack python"]["cases"] > 100 and by["humanevalpack python"]["flagged"] == 0
