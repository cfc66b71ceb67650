"""engine.program.patch / search_replace / pasted: a pasted diff or SEARCH/REPLACE blocks apply exactly
when they pin down one result; anything unclear is left to the model, never half-applied."""
from __future__ import annotations

import difflib

import pytest

from engine.program.pasted import PLANNERS, plan_pasted, planner_note
from engine.program.patch import apply_patch
from engine.program.search_replace import apply_search_replace
from tests.foundation.sample_documents import PY

DOC = PY
NEW = DOC.replace("        data = fh.read()\n", "        data = fh.read().strip()\n").replace(
    "    return len(data)\n", "    return len(data.encode())\n")


def git_diff(old: str, new: str, context: int = 3) -> str:
    lines = difflib.unified_diff(old.split("\n")[:-1], new.split("\n")[:-1], "a/store.py", "b/store.py",
                                 n=context, lineterm="")
    return "\n".join(lines) + "\n"


def fenced(body: str, info: str = "diff") -> str:
    return f"Apply this patch:\n```{info}\n{body.rstrip()}\n```\n"


@pytest.mark.parametrize("context", [0, 1, 3])
def test_a_git_diff_applies_exactly_fenced_or_not(context):
    diff = git_diff(DOC, NEW, context)
    assert diff.count("@@ -") == (1 if context == 3 else 2)
    assert apply_patch(DOC, diff) == NEW
    assert apply_patch(DOC, fenced(diff)) == NEW
    assert apply_patch(DOC, "Please apply:\n\n" + diff + "\nThanks!") == NEW


def test_hunks_without_line_numbers_or_with_wrong_ones_are_placed_by_their_context():
    diff = git_diff(DOC, NEW, 1)
    bare = "\n".join("@@ ... @@" if line.startswith("@@") else line for line in diff.split("\n"))
    assert apply_patch(DOC, fenced(bare)) == NEW
    off = diff.replace("@@ -4,3 +4,3 @@", "@@ -40,9 +41,9 @@").replace("@@ -11,3 +11,3 @@", "@@ -2,1 +2,1 @@")
    assert apply_patch(DOC, fenced(off)) == NEW


def test_a_chat_diff_without_any_header_is_one_hunk():
    body = "     with open(path) as fh:\n-        data = fh.read()\n+        data = fh.read().strip()\n     return data"
    assert apply_patch(DOC, fenced(body)) == DOC.replace("fh.read()\n", "fh.read().strip()\n")
    assert apply_patch(DOC, fenced(body, "python")) is None   # untagged, no @@: a snippet, not a diff


def test_a_chat_diff_that_marks_only_the_changed_lines_applies():
    body = "def load(path):\n    with open(path) as fh:\n-        data = fh.read()\n+        data = fh.read().strip()\n    return data"
    assert apply_patch(DOC, fenced(body)) == DOC.replace("fh.read()\n", "fh.read().strip()\n")
    stale = body.replace("def load(path):", "def load(p):")
    assert "'def load(p):'" in plan_pasted(DOC, fenced(stale)).reason   # the reason of the reading it was written for


def test_a_placeholder_context_line_elides_what_it_stands_for():
    diff = ("@@ ... @@\n def load(path):\n     # ... existing code ...\n-    return data\n+    return data or None\n"
            "\n # ... rest of the file unchanged ...\n def save(path, data):\n-    with open(path, \"w\") as fh:\n"
            "+    with open(path, \"a\") as fh:\n")
    assert apply_patch(DOC, fenced(diff)) == DOC.replace("    return data\n", "    return data or None\n").replace(
        '"w"', '"a"')
    bare = "def save(path, data):\n    # ... existing code ...\n-    return len(data)\n+    return len(data.encode())"
    assert apply_patch(DOC, fenced(bare)) == DOC.replace("return len(data)", "return len(data.encode())")


def test_blank_context_lines_that_lost_their_space_still_match():
    new = DOC.replace("import os\n", "import os\nimport sys\n")
    diff = "@@ -1,4 +1,5 @@\n import os\n+import sys\n\n\n def load(path):\n"
    assert apply_patch(DOC, fenced(diff)) == new


def test_trailing_empty_lines_end_the_hunk_unless_its_counts_claim_them():
    diff = "@@ -1,1 +1,1 @@\n-import os\n+import re\n\n\n"
    assert apply_patch(DOC, "Patch:\n" + diff) == DOC.replace("import os", "import re")


REPEATED = "a = 1\nx = 0\nb = 2\n\na = 1\nx = 0\nb = 2\n"


def test_ambiguous_context_needs_line_numbers_and_takes_the_nearest():
    hunk = " a = 1\n-x = 0\n+x = 9\n b = 2"
    assert apply_patch(REPEATED, fenced("@@ ... @@\n" + hunk)) is None
    assert apply_patch(REPEATED, fenced("@@ -5,3 +5,3 @@\n" + hunk)) == "a = 1\nx = 0\nb = 2\n\na = 1\nx = 9\nb = 2\n"
    assert apply_patch(REPEATED, fenced("@@ -1,3 +1,3 @@\n" + hunk)) == "a = 1\nx = 9\nb = 2\n\na = 1\nx = 0\nb = 2\n"
    assert apply_patch(REPEATED, fenced("@@ -3,3 +3,3 @@\n" + hunk)) is None   # equally near both


@pytest.mark.parametrize("diff", [
    # a context line lost its leading space, and changes follow it: never apply half
    "@@ -4,4 +4,4 @@\n def load(path):\nwith open(path) as fh:\n-        data = fh.read()\n+        data = 1\n",
    # context that is not in the document
    "@@ -4,3 +4,3 @@\n def load(p):\n-    with open(p) as fh:\n+    with open(p, 'rb') as fh:\n",
    # a pure insertion without line numbers
    "@@ ... @@\n+import sys\n",
])
def test_a_diff_that_does_not_pin_one_result_is_left_to_the_model(diff):
    assert apply_patch(DOC, fenced(diff)) is None


def test_every_hunk_must_place_or_none_is_applied():
    good = "@@ -1 +1 @@\n-import os\n+import re\n"
    bad = "@@ -5,1 +5,1 @@\n-    nothing like this\n+    x\n"
    assert apply_patch(DOC, fenced(good + bad)) is None


def test_a_pure_insertion_goes_where_its_line_numbers_say():
    assert apply_patch(DOC, fenced("@@ -1,0 +2,1 @@\n+import sys\n")) == DOC.replace("import os\n", "import os\nimport sys\n")


def test_of_a_diff_for_several_files_the_one_that_fits_the_document_applies():
    other = "--- a/other.py\n+++ b/other.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n y = 3\n"
    mine = git_diff(DOC, NEW)
    assert apply_patch(DOC, fenced(other + mine)) == NEW
    assert apply_patch(DOC, fenced(mine + other)) == NEW
    twin = mine.replace("a/store.py", "a/copy.py").replace("b/store.py", "b/copy.py")
    assert apply_patch(DOC, fenced(mine + twin)) == NEW          # both give the same text
    other_change = git_diff(DOC, DOC.replace("import os", "import re")).replace("store.py", "copy.py")
    assert apply_patch(DOC, fenced(mine + other_change)) is None  # two different results: unclear
    created = "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x = 1\n"
    assert apply_patch(DOC, fenced(mine + created)) == NEW        # a new file's content fits no existing text
    assert apply_patch("", fenced(created)) == "x = 1\n"


def test_an_applied_diff_changes_nothing_and_is_no_plan():
    assert apply_patch(NEW, fenced(git_diff(DOC, NEW))) is None   # its old lines are gone
    assert apply_patch(DOC, fenced("@@ -1 +1 @@\n import os\n")) is None


def test_crlf_documents_keep_their_line_breaks():
    crlf, new_crlf = DOC.replace("\n", "\r\n"), NEW.replace("\n", "\r\n")
    assert apply_patch(crlf, fenced(git_diff(DOC, NEW))) == new_crlf
    assert apply_patch(DOC, fenced(git_diff(DOC, NEW)).replace("\n", "\r\n")) == NEW   # a CRLF paste


@pytest.mark.parametrize("instruction", [
    "Fix the bug in load.",
    "Steps:\n- remove the import\n- add logging\n",
    "```python\nimport os\n# ... existing code ...\n```",
    "```diff\nnot a diff at all\n```",
])
def test_prose_bullets_and_snippets_are_not_diffs(instruction):
    assert apply_patch(DOC, instruction) is None


SR = """store.py
```python
<<<<<<< SEARCH
        data = fh.read()
=======
        data = fh.read().strip()
>>>>>>> REPLACE
```

```python
<<<<<<< SEARCH
    return len(data)
=======
    return len(data.encode())
>>>>>>> REPLACE
```
"""


def test_search_replace_blocks_apply_in_order():
    assert apply_search_replace(DOC, SR) == NEW
    assert apply_search_replace(DOC.replace("\n", "\r\n"), SR) == NEW.replace("\n", "\r\n")


@pytest.mark.parametrize("instruction", [
    "<<<<<<< SEARCH\n    return data\n=======\n    return None\n",                           # no REPLACE marker
    "<<<<<<< SEARCH\n\n\ndef\n=======\n\n\nasync def\n>>>>>>> REPLACE",                      # not found either
    "<<<<<<< SEARCH\n    return nothing\n=======\n    return 1\n>>>>>>> REPLACE",               # not found
    "<<<<<<< SEARCH\n\n=======\nx = 1\n>>>>>>> REPLACE",                                       # empty SEARCH
    "=======\n>>>>>>> REPLACE",                                                                # stray markers
])
def test_unclear_search_replace_blocks_are_left_to_the_model(instruction):
    assert apply_search_replace(DOC, instruction) is None


def test_a_search_block_found_twice_is_ambiguous():
    block = "<<<<<<< SEARCH\nx = 0\n=======\nx = 9\n>>>>>>> REPLACE"
    assert apply_search_replace(REPEATED, block) is None
    wider = "<<<<<<< SEARCH\n\na = 1\nx = 0\n=======\n\na = 1\nx = 9\n>>>>>>> REPLACE"
    assert apply_search_replace(REPEATED, wider) == "a = 1\nx = 0\nb = 2\n\na = 1\nx = 9\nb = 2\n"


def test_the_registry_tries_diff_then_search_replace_then_snippet():
    assert [p.name for p in PLANNERS] == ["patch", "search-replace", "snippet-merge"]
    assert plan_pasted(DOC, fenced(git_diff(DOC, NEW))) == ("patch", NEW, "")
    assert plan_pasted(DOC, SR) == ("search-replace", NEW, "")
    snippet = "```python\ndef save(path, data):\n    # ... existing code ...\n    return len(data.encode())\n```"
    assert plan_pasted(DOC, snippet) == ("snippet-merge", DOC.replace("len(data)", "len(data.encode())"), "")
    assert plan_pasted(DOC, "Fix the bug in load.") == ("snippet-merge", None, "")   # nothing to say
    assert "diff" in planner_note("patch") and planner_note("model") is None


def test_a_format_that_does_not_apply_is_left_to_the_model_not_to_the_next_planner():
    """SEARCH/REPLACE blocks whose SEARCH is ambiguous are no snippet (the merger would read them as one)."""
    ambiguous = "```\n<<<<<<< SEARCH\nx = 0\n=======\nx = 9\n>>>>>>> REPLACE\n```"
    plan = plan_pasted(REPEATED, ambiguous)
    assert (plan.planner, plan.text, plan.refused, plan.declined_warning()) == ("search-replace", None, True, None)
    assert plan.refusal().startswith("the pasted SEARCH/REPLACE blocks could not be applied as is: block 1's SEARCH "
                                     "part (from 'x = 0') occurs at 2 places. Nothing was changed.")
    plan = plan_pasted(DOC, fenced("@@ ... @@\n-    nothing like this\n+    x = 1\n"))
    assert (plan.planner, plan.text, plan.refused) == ("patch", None, True)
    assert "hunk 1 does not fit: its 1 context and removed lines (from 'nothing like this') are not in the document" \
        in plan.refusal()


@pytest.mark.parametrize("diff, reason", [
    ("@@ -4,4 +4,4 @@\n def load(path):\nwith open(path) as fh:\n-        data = 1\n", "a change outside any hunk"),
    ("@@ ... @@\n+import sys\n", "no line numbers to say where"),
    ("@@ -1 +1 @@\n import os\n", "changes nothing"),
])
def test_the_reason_a_diff_was_not_applied_says_what_to_fix(diff, reason):
    assert reason in plan_pasted(DOC, fenced(diff)).reason
