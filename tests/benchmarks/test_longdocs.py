"""The long-document corpus (benchmarks.longdocs): held-out, long, locally edited, reproducible."""
from __future__ import annotations

import difflib

from benchmarks.longdocs import long_document_cases, training_origin
from training.langs import third_party_site_packages
from training.sources import in_stdlib, split_of


def _changed_blocks(a: str, b: str) -> int:
    ops = difflib.SequenceMatcher(None, a.split("\n"), b.split("\n"), autojunk=False).get_opcodes()
    return sum(1 for tag, *_ in ops if tag != "equal")


def test_corpus_is_long_local_and_held_out():
    cases = long_document_cases(n=24, seed=0)
    assert len(cases) >= 20, "the venv should hold enough third-party files of 150-900 lines"
    root = third_party_site_packages()[0]
    for case in cases:
        assert 150 <= case.gold.count("\n") <= 900
        assert 1 <= case.edits <= 3
        assert _changed_blocks(case.document, case.gold) == case.edits
        path = f"{root}/{case.origin}"
        assert not in_stdlib(path)
        assert split_of(training_origin(path, root)) == "test"   # never a training document
        assert case.instruction.strip()


def test_corpus_is_deterministic():
    a = [c.as_dict() for c in long_document_cases(n=5, seed=1)]
    b = [c.as_dict() for c in long_document_cases(n=5, seed=1)]
    assert a == b


def test_window_holds_every_edit_and_fits():
    count = lambda text: len(text.split())          # any monotone token count will do here
    for case in long_document_cases(n=8, seed=0):
        first, last = case.edited_lines()
        assert 1 <= first <= last <= case.lines
        window = case.window(count, max_tokens=600)
        if window is None:
            assert count(case.document) <= 600
            continue
        a, b = window
        assert a <= first and last <= b
        assert count("\n".join(case.document.split("\n")[a - 1:b])) <= 600 or (a, b) == (first, last)
