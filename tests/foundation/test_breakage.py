"""engine.program.breakage: an edit that breaks what the document had is named; honest edits are not."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.program.breakage import breakage_message, find_breakage
from evaluation.corpus import load_pairs

FAST = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True)
PY = "def mean(values):\n    total = sum(values)\n    return total / len(values)\n\n\ndef clamp(x):\n    return x\n"
JS = "function mean(values) {\n  let total = 0;\n  for (const v of values) {\n    total += v;\n  }\n  return total;\n}\n"


def test_python_that_stops_compiling_is_named_with_its_line():
    found = find_breakage(PY, PY.replace("def clamp(x):\n", "def clamp(x):\ndef clamp(x):\n"))
    assert found is not None and found.check == "python" and found.line == 7
    message = breakage_message(found)
    assert "Python syntax error at line 7" in message and "did not have" in message


def test_python_that_still_compiles_is_fine_even_with_a_bracket_in_a_string():
    assert find_breakage(PY, PY.replace("return x\n", "return x\n\n\nprint('(', \"[\")\n")) is None
    assert find_breakage(PY, PY.replace("len(values)", "max(len(values), 1)")) is None


def test_json_that_stops_parsing_is_named():
    doc = json.dumps({"name": "cad", "deps": ["a", "b"]}, indent=2) + "\n"
    assert find_breakage(doc, doc.replace('"b"', '"b", "c"')) is None
    found = find_breakage(doc, doc.replace('"b"', '"b",'))
    assert found is not None and found.check == "json"


@pytest.mark.parametrize("new, delta", [
    (JS.replace("for (const v of values) {", "for (const v of values"), "1 more '(' than ')'"),
    (JS.replace("  }\n  return", "  return"), "1 more '{' than '}'"),
    (JS.replace("let total = 0;", "let total = [0;"), "1 more '[' than ']'"),
])
def test_other_languages_by_their_brackets(new, delta):
    found = find_breakage(JS, new)
    assert found is not None and found.check == "brackets" and delta in found.detail
    assert found.line == next(i for i, (a, b) in enumerate(zip(JS.split("\n"), new.split("\n")), 1) if a != b)


@pytest.mark.parametrize("new", [
    JS.replace("let total = 0;", 'let total = 0; console.log("(", \'[\');'),   # brackets in strings
    JS.replace("let total = 0;", "let total = 0;  // see (1"),                   # and in a comment
    JS.replace("for (const v of values) {", "for (const v\n       of values) {"),  # a bracket pair re-wrapped
    JS.replace("total += v;", "if (v > 0) {\n      total += v;\n    }"),       # a block added
    JS,                                                                          # nothing changed
])
def test_balanced_edits_are_not_named(new):
    assert find_breakage(JS, new) is None


CODE = st.sampled_from(["x = f(a, b);", "if (x) {", "}", "  y[i] = z;", "call(", ");", "# a (comment", "", "end"])
BALANCED = st.lists(st.sampled_from(["f(x);", "a[0] = g(1);", "log('(');", "h();"]), min_size=1, max_size=4)


@settings(max_examples=300, **FAST)
@given(st.lists(CODE, min_size=1, max_size=15), BALANCED, st.booleans(), st.data())
def test_inserting_balanced_code_anywhere_is_never_named(lines, body, wrapped, data):
    block = ["if (c) {", *body, "}"] if wrapped else body
    at = data.draw(st.integers(0, len(lines)))
    doc = "\n".join(lines) + "\n"
    found = find_breakage(doc, "\n".join(lines[:at] + block + lines[at:]) + "\n")
    assert found is None or found.check == "python"   # Python: an 'if' line can break indentation


@pytest.mark.parametrize("lang", ["python", "js"])
def test_the_real_fixes_of_humanevalpack_are_never_named(lang):
    pairs = load_pairs(lang)
    named = [p.task_id for p in pairs if find_breakage(p.document, p.gold)]
    assert len(pairs) > 100 and not named, named[:3]


@pytest.mark.parametrize("before", ["", "   \n\n", "TODO\n", '"""notes"""\n', "42\n"])
def test_a_document_that_compiles_without_showing_python_is_not_held_to_python(before):
    # An empty file, a lone word or a lone string compile as Python but are not code: prose written
    # into them is no "Python syntax error" (the bracket count still applies).
    assert find_breakage(before, before + "new lines of plain text\n") is None
    found = find_breakage(before, before + "a (note\n")
    assert found is not None and found.check == "brackets"


def test_a_one_statement_python_file_is_still_checked():
    found = find_breakage("x = 1\n", "x = = 1\n")
    assert found is not None and found.check == "python"
