"""cad_lsp.rebase: edits survive typing elsewhere, and only there (pure functions)."""
from __future__ import annotations

import pytest

from cad_lsp.rebase import rebase_edits
from cad_lsp.textedits import apply_text_edits, text_to_edits

DOC = "".join(f"line {i}\n" for i in range(1, 11))  # 10 lines + final empty line


def program_edits(new_doc: str):
    return text_to_edits(DOC, new_doc)


def replace_line(text: str, n: int, new: str) -> str:
    lines = text.split("\n")
    lines[n - 1] = new
    return "\n".join(lines)


EDITED = replace_line(replace_line(DOC, 4, "FOUR"), 5, "FIVE")  # the model rewrites lines 4-5


@pytest.mark.parametrize("typing", [
    lambda t: replace_line(t, 1, "typed on line 1"),                       # above, same line count
    lambda t: "new first line\nanother\n" + t,                              # above, lines inserted
    lambda t: replace_line(t, 9, "typed on line 9"),                        # below
    lambda t: t + "appended at the end\n",                                  # at the end
    lambda t: "\n".join(x for i, x in enumerate(t.split("\n")) if i != 1),  # a line above deleted
    lambda t: replace_line(t, 3, "line 3 changed") + "tail\n",              # right above + at the end
], ids=["above", "inserted-above", "below", "appended", "deleted-above", "adjacent-and-end"])
def test_non_overlapping_changes_are_rebased(typing):
    current = typing(DOC)
    rebased = rebase_edits(DOC, current, program_edits(EDITED))
    assert rebased.edits is not None, rebased.why
    result = apply_text_edits(current, rebased.edits)
    # the model's lines are in, the user's typing is kept
    assert result == typing(EDITED)


@pytest.mark.parametrize("typing, lines", [
    (lambda t: replace_line(t, 4, "user typed here"), "4"),
    (lambda t: replace_line(t, 5, "user typed here"), "4-5"),
    (lambda t: t.replace("line 4\nline 5\n", "line 4\ninserted\nline 5\n"), "4-5"),
], ids=["first-edited-line", "second-edited-line", "insert-between-edited-lines"])
def test_overlapping_changes_discard_the_edit_and_say_where(typing, lines):
    rebased = rebase_edits(DOC, typing(DOC), program_edits(EDITED))
    assert rebased.edits is None
    assert f"line(s) {lines}" in rebased.why


def test_several_edits_each_follow_their_own_offset():
    edited = replace_line(replace_line(DOC, 2, "TWO"), 8, "EIGHT")
    current = replace_line(DOC, 5, "five\nand a new line")  # between the two edits, +1 line
    rebased = rebase_edits(DOC, current, program_edits(edited))
    assert rebased.edits is not None and len(rebased.edits) == 2
    assert apply_text_edits(current, rebased.edits) == replace_line(replace_line(current, 2, "TWO"), 9, "EIGHT")


def test_edit_at_the_end_of_the_document_and_crlf():
    doc = "a\r\nb\r\nc"
    edits = text_to_edits(doc, "a\r\nb\r\nC")
    current = "typed\r\na\r\nb\r\nc"
    rebased = rebase_edits(doc, current, edits)
    assert rebased.edits is not None, rebased.why
    assert apply_text_edits(current, rebased.edits) == "typed\r\na\r\nb\r\nC"


def test_unchanged_text_is_the_identity():
    edits = program_edits(EDITED)
    rebased = rebase_edits(DOC, DOC, edits)
    assert [(e.range, e.new_text) for e in rebased.edits] == [(e.range, e.new_text) for e in edits]
