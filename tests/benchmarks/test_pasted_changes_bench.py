"""benchmarks.pasted_changes writes each gold edit the ways people paste it and counts exact plans."""
from __future__ import annotations

import json

from benchmarks import pasted_changes


def test_every_variant_is_counted_and_prose_is_not_taken_for_a_diff(tmp_path, monkeypatch):
    monkeypatch.setattr("evaluation.corpus.load_pairs", lambda lang: [])   # only the file's cases
    doc = "def f(x):\n    y = x + 1\n    return y\n\n\ndef g(x):\n    y = x + 1\n    return y\n"
    cases = [
        {"family": "bugfix", "lang": "python", "document": doc, "instruction": "Fix f.",
         "gold": doc.replace("y = x + 1\n    return y\n\n\ndef g", "y = x + 2\n    return y\n\n\ndef g")},
        {"family": "noop", "lang": "python", "document": doc, "instruction": "- keep it\n- as is", "gold": doc},
    ]
    path = tmp_path / "test.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    rows, extra = pasted_changes.evaluate([path])
    by = {r["variant"]: r for r in rows}
    assert set(by) == set(pasted_changes.VARIANTS) and extra["edits"] == 1   # the no-op case is no edit
    assert (by["git"]["exact"], by["git"]["wrong"]) == (1, 0)
    # "y = x + 1" / "return y" occur in f and g: without line numbers the one-line-context hunk is ambiguous
    assert by["search-replace"]["left"] == 1
    assert extra["own_instructions"] == 1 and extra["own_instructions_triggered"] == {}
