"""benchmarks.snippet_merge counts merges against gold, per family and per snippet language."""
from __future__ import annotations

import json

from benchmarks.snippet_merge import evaluate

DOC = "def f(x):\n    y = x + 1\n    return y\n"
SNIPPET = "Apply:\n```python\ndef f(x):\n    y = x + 2\n    return y\n```"


def test_counts_exact_wrong_and_left_to_the_model(tmp_path):
    cases = [
        {"family": "snippet", "lang": "python", "document": DOC, "instruction": SNIPPET,
         "gold": DOC.replace("+ 1", "+ 2")},                                          # merged exactly
        {"family": "snippet", "lang": "python", "document": DOC, "instruction": SNIPPET,
         "gold": DOC.replace("+ 1", "+ 3")},                                          # merged, differs
        {"family": "bugfix", "lang": "go", "document": DOC, "instruction": "Fix the bug.", "gold": DOC},
    ]
    path = tmp_path / "test.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    rows, extra = evaluate([path])
    by = {r["group"]: r for r in rows}
    assert by["snippet"] | {} == by["snippet/python"] | {"group": "snippet"}
    assert (by["snippet"]["merged_exact"], by["snippet"]["merged_wrong"], by["snippet"]["left_to_model"]) == (1, 1, 0)
    assert by["snippet"]["lost_lines"] == 1                       # "y = x + 3" is missing from the wrong merge
    assert (by["bugfix"]["left_to_model"], by["bugfix"]["merged_exact"]) == (1, 0)
    assert extra["cases"] == 3
