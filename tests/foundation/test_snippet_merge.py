"""engine.program.snippet: a pasted snippet is merged exactly when its anchors pin it, else left to the model."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from engine.program.oracle import line_program
from engine.program.resolver import resolve
from engine.program.snippet import extract_snippets, merge_snippet
from tests.foundation.sample_documents import PY

REPO = Path(__file__).resolve().parents[2]
GO = """package store

import "fmt"

func Get(m map[string]int, key string) int {
\tv, ok := m[key]
\tif !ok {
\t\treturn -1
\t}
\treturn v
}

func Put(m map[string]int, key string, v int) {
\tm[key] = v
\tfmt.Println("put", key)
}
"""


def fenced(body: str, lang: str = "", preamble: str = "Apply this change:") -> str:
    return f"{preamble}\n```{lang}\n{body}\n```"


def test_placeholders_keep_what_they_elide_and_the_change_lands_once():
    snippet = "def save(path, data):\n    # ... existing code ...\n        fh.write(data)\n        fh.flush()\n    return len(data)"
    got = merge_snippet(PY, fenced(snippet, "python"))
    assert got == PY.replace("        fh.write(data)\n", "        fh.write(data)\n        fh.flush()\n")


def test_a_replaced_line_between_context_lines():
    snippet = "\\tv, ok := m[key]\n\\tif !ok {\n\\t\\treturn 0\n\\t}".replace("\\t", "\t")
    got = merge_snippet(GO, fenced("// ... existing code ...\n" + snippet + "\n// ... existing code ...", "go"))
    assert got == GO.replace("\t\treturn -1\n", "\t\treturn 0\n")


def test_a_whole_new_function_without_placeholders_replaces_the_old_one():
    new_put = "func Put(m map[string]int, key string, v int) {\n\tif m == nil {\n\t\treturn\n\t}\n\tm[key] = v\n}"
    got = merge_snippet(GO, fenced(new_put, "go", "Replace `Put` with this version:"))
    assert got == GO[:GO.index("func Put")] + new_put + "\n"


def test_a_deleted_line_between_anchors_is_deleted():
    snippet = "func Put(m map[string]int, key string, v int) {\n\tm[key] = v\n}"
    got = merge_snippet(GO, fenced(snippet, "go"))
    assert got == GO.replace('\tfmt.Println("put", key)\n', "")


def test_a_changed_last_line_replaces_its_look_alike():
    doc = "x = 1\ny = 2\nprint(x + y)"
    assert merge_snippet(doc, fenced("# ...\ny = 2\nprint(x + y + 1)", "python")) == "x = 1\ny = 2\nprint(x + y + 1)"


def test_a_changed_first_line_replaces_its_look_alike():
    snippet = "def save(path, data, mode=\"w\"):\n    with open(path, mode) as fh:\n        fh.write(data)\n    # ... existing code ..."
    got = merge_snippet(PY, fenced(snippet, "python"))
    assert got == PY.replace('def save(path, data):\n    with open(path, "w") as fh:',
                             'def save(path, data, mode="w"):\n    with open(path, mode) as fh:')


def test_a_lone_changed_line_between_placeholders_replaces_its_clear_look_alike():
    stats = (REPO / "examples" / "buggy_stats.py").read_text()
    answer = (REPO / "examples" / "buggy_stats.snippet.md").read_text()
    assert merge_snippet(stats, answer) == stats.replace("total / (len(values) - 1)", "total / len(values)")
    twins = "def f(a):\n    return a + 1\n\ndef g(a):\n    return a + 2\n"
    assert merge_snippet(twins, fenced("# ...\n    return a + 3\n# ...")) is None     # two look-alikes: unclear


def test_blank_lines_the_snippet_leaves_out_are_kept():
    snippet = "import os\ndef load(path):\n    with open(path, 'rb') as fh:\n        data = fh.read()"
    got = merge_snippet(PY, fenced(snippet))
    assert got == PY.replace("open(path) as fh", "open(path, 'rb') as fh")


def test_crlf_documents_get_crlf_new_lines_and_anchors_keep_their_bytes():
    doc = PY.replace("\n", "\r\n").replace("import os", "import os   ")  # trailing blanks on an anchor
    got = merge_snippet(doc, fenced("def save(path, data):\n    # ...\n        fh.write(data)\n    return len(data) + 1"))
    assert got == doc.replace("return len(data)\r\n", "return len(data) + 1\r\n")
    last = merge_snippet(doc.rstrip("\r\n"), fenced("# ...\n        fh.write(data)\n    return len(data) + 1"))
    assert last == doc.rstrip("\r\n").replace("return len(data)", "return len(data) + 1")   # no break after the last line


def test_a_snippet_pasted_with_crlf_line_breaks_merges_into_an_lf_document():
    snippet = fenced("def save(path, data):\n    # ...\n        fh.write(data)\n    return len(data) + 1").replace("\n", "\r\n")
    assert merge_snippet(PY, snippet) == PY.replace("return len(data)\n", "return len(data) + 1\n")


def test_other_comment_syntaxes_are_placeholders():
    lua = "local M = {}\n\nfunction M.add(a, b)\n  return a - b\nend\n\nfunction M.mul(a, b)\n  return a * b\nend\n\nreturn M\n"
    snippet = "-- ... existing code ...\nfunction M.add(a, b)\n  return a + b\nend\n-- ... existing code ..."
    assert merge_snippet(lua, fenced(snippet, "lua")) == lua.replace("return a - b", "return a + b")


@pytest.mark.parametrize("snippet", [
    "def load(path):\n    with open(path) as fh:\n        data = fh.read().decode()\n\n\n# ... existing code ...",
    "# ... existing code ...\n\n\ndef load(path):\n    with open(path) as fh:\n        data = fh.read().decode()\n"
    "    return data\n\n\n# ... rest unchanged ...",
])
def test_blank_lines_beside_a_placeholder_are_layout_not_new_lines(snippet):
    assert merge_snippet(PY, fenced(snippet, "python")) == PY.replace("fh.read()", "fh.read().decode()")


def test_block_comment_placeholders_of_ml_languages_and_jsx():
    ml = "let add a b =\n  a - b\n\nlet mul a b =\n  a * b\n"
    snippet = "let add a b =\n  a + b\n\n(* ... existing code ... *)"
    assert merge_snippet(ml, fenced(snippet, "ocaml")) == ml.replace("a - b", "a + b")
    jsx = "function App() {\n  return (\n    <div>\n      <Header />\n      <p>old</p>\n    </div>\n  );\n}\n"
    snippet = "    <div>\n      {/* ... existing code ... */}\n      <p>new</p>\n    </div>"
    assert merge_snippet(jsx, fenced(snippet, "jsx")) == jsx.replace("<p>old</p>", "<p>new</p>")


@pytest.mark.parametrize("instruction", [
    "Rename load to read_file.",                                              # prose: no snippet
    fenced("def load(path):\n    with open(path) as fh:"),                     # the code as it is: no change
    "Fix this:\n```python\ndef load(path):\n    return 1\n```\nand this:\n```python\nx = 1\n```",  # two blocks
    "Apply:\n```python\ndef load(path):\n    return open(path).read()\n",     # unclosed fence
    fenced("def unknown():\n    return 1\n# ... existing code ..."),           # anchors nowhere
])
def test_no_merge_when_the_snippet_does_not_pin_one_change(instruction):
    assert merge_snippet(PY, instruction) is None


OLD_SAVE = "def save(path, data):\n    # ...\n        fh.write(data)\n    return len(data)"
NEW_SAVE = "def save(path, data):\n    # ...\n        fh.write(data)\n    return len(data) + 1"
SAVED = PY.replace("return len(data)\n", "return len(data) + 1\n")


@pytest.mark.parametrize("answer", [
    f"Your code:\n```python\n{OLD_SAVE}\n```\nchange it to:\n```python\n{NEW_SAVE}\n```",   # before, after
    f"Use:\n```python\n{NEW_SAVE}\n```\ninstead of:\n```python\n{OLD_SAVE}\n```",          # after, before
])
def test_a_block_the_document_already_holds_changes_nothing(answer):
    assert merge_snippet(PY, answer) == SAVED


def test_blocks_for_two_places_are_both_merged():
    load = "def load(path):\n    with open(path, 'rb') as fh:\n    # ... existing code ..."
    answer = f"Two changes:\n```python\n{load}\n```\nand\n```python\n{NEW_SAVE}\n```"
    assert merge_snippet(PY, answer) == SAVED.replace("open(path) as fh", "open(path, 'rb') as fh")


@pytest.mark.parametrize("second", [
    "def save(path, data):\n    # ...\n        fh.write(data)\n    return len(data) + 2",       # the same lines again
    "pip install requests",                                                                   # a shell command
])
def test_blocks_that_clash_or_do_not_anchor_leave_it_to_the_model(second):
    assert merge_snippet(PY, f"```python\n{NEW_SAVE}\n```\n```\n{second}\n```") is None


def test_a_pathological_paste_is_not_tried():
    """10,000 segments against 20,000 lines would be ~10^8 line comparisons: refused up front."""
    doc = "".join(f"x{k} = {k}\n" for k in range(20000))
    answer = fenced("\n# ...\n".join(f"x{k} = -{k}" for k in range(0, 20000, 2)))
    assert merge_snippet(doc, answer) is None


def test_an_anchor_at_two_places_is_left_to_the_model():
    doc = "def a():\n    x = 1\n    return x\n\ndef b():\n    x = 1\n    return x\n"
    assert merge_snippet(doc, fenced("# ...\n    x = 1\n    x += 1\n    return x\n# ...")) is None


def test_unfenced_snippets_need_a_placeholder_or_two_document_lines():
    known = {line.strip() for line in PY.split("\n")}
    assert extract_snippets("Change it to:\n    return data\n    # ... existing code ...", known) is not None
    assert extract_snippets("def save(path, data):\n    return len(data)", known) is not None
    assert extract_snippets("Make it return data.strip()\nplease", known) is None


def test_merged_text_round_trips_through_the_oracle_program():
    """What engine.edit ships: line_program(doc, merged) resolves to the merged text, copying the rest."""
    rng = random.Random(3)
    lines = [f"line_{k} = {k}" for k in range(40)]
    doc = "\n".join(lines) + "\n"
    for _ in range(30):
        i = rng.randrange(2, 36)
        body = lines[i - 1:i] + [f"line_{i} = {rng.randint(100, 999)}"] + lines[i + 1:i + 2]
        merged = merge_snippet(doc, fenced("# ... existing code ...\n" + "\n".join(body) + "\n# ... existing code ..."))
        assert merged is not None and merged.split("\n")[i] == body[1]
        program = line_program(doc, merged)
        assert resolve(program, doc, "strict").text == merged


def test_a_snippet_about_the_document_that_does_not_merge_says_why_and_others_stay_silent():
    from engine.program.pasted import plan_pasted

    stray = fenced("def load(path):\n    # ... existing code ...\n    return data.strip()\n    x = 1\n\n\ndef gone():\n    pass", "python")
    plan = plan_pasted(PY, stray)
    assert plan.text is None and "fit no one place of the document" in plan.declined_warning()
    assert "'return data.strip()'" in plan.reason
    quoted = "Why is this slow?\n```python\n    with open(path) as fh:\n        data = fh.read()\n```"
    unrelated = fenced("$ pip install --upgrade requests", "sh")
    for instruction in (quoted, unrelated, "Fix the bug in load."):   # nothing to say: the model just decodes
        plan = plan_pasted(PY, instruction)
        assert (plan.text, plan.declined_warning()) == (None, None)
