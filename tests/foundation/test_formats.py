"""Edit formats: every format round-trips the oracle edit; search/replace ambiguity is real."""
from __future__ import annotations

import pytest

from evaluation.corpus import load_pairs
from evaluation.formats import FORMATS, FormatApplyError, get_format
from evaluation.formats import search_replace as sr

CASES = [("a\nb\nc\n", "a\nB\nc\n"), ("a\nb", "a\nb\nc"), ("", "x\n"), ("x\n", ""),
         ("a\r\nb\r\n", "a\r\nX\r\nb\r\n"), ("p\nq\nr", "new\np\nr"), ("same", "same")]


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("doc,gold", CASES)
def test_round_trip_edge_cases(name, doc, gold):
    fmt = get_format(name)
    assert fmt.apply(doc, fmt.serialize(doc, gold)) == gold


def test_registry_order_and_unknown():
    assert list(FORMATS) == ["full", "search_replace", "udiff", "cad"]
    with pytest.raises(KeyError, match="unknown edit format"):
        get_format("xml")


def test_search_replace_first_match_misfires_on_ambiguous_anchor():
    doc = "def f():\n    return 0\n\ndef g():\n    return 0\n"
    gold = "def f():\n    return 0\n\ndef g():\n    return 1\n"
    text = sr.serialize(doc, gold)
    assert sr.ambiguous_anchors(doc, text) == 1
    assert sr.apply(doc, text) != gold  # first match rewrites f instead of g
    assert get_format("udiff").apply(doc, get_format("udiff").serialize(doc, gold)) == gold
    assert get_format("cad").apply(doc, get_format("cad").serialize(doc, gold)) == gold


def test_apply_errors_are_typed_and_say_where():
    with pytest.raises(FormatApplyError, match="not found"):
        sr.apply("a\nb", "<<<<<<< SEARCH\nzzz\n=======\ny\n>>>>>>> REPLACE\n")
    with pytest.raises(FormatApplyError, match="line 1"):
        sr.apply("a", "garbage")
    with pytest.raises(FormatApplyError, match="source line 2"):
        get_format("udiff").apply("a\nb\nc", "--- a/d\n+++ b/d\n@@ -1,2 +1,2 @@\n a\n-x\n+y\n")
    with pytest.raises(FormatApplyError, match="offset"):
        get_format("cad").apply("a", "<program><gen>")


@pytest.mark.parametrize("lang", ["python", "js"])
def test_corpus_round_trip(lang):
    pairs = load_pairs(lang)
    ok = {name: 0 for name in FORMATS}
    for p in pairs:
        for name, fmt in FORMATS.items():
            ok[name] += fmt.apply(p.document, fmt.serialize(p.document, p.gold)) == p.gold
    assert ok["full"] == ok["udiff"] == ok["cad"] == len(pairs)
    assert ok["search_replace"] < len(pairs)
