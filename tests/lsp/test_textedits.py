"""Properties of cad_lsp.textedits: edits reproduce the resolver output and spare copied lines."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from lsprotocol import types

from cad_lsp.positions import LineIndex, code_units, range_to_line_range
from cad_lsp.textedits import (
    apply_text_edits, copied_line_ranges, copied_spans, program_to_edits, text_to_edits,
)
from engine.program.grammar import CopyLines, CopyTokens, Gen
from engine.program.resolver import resolve

ENCODINGS = ["utf-16", "utf-8", "utf-32"]
# Lines mix ASCII, non-ASCII BMP text and astral characters (UTF-16 surrogate pairs).
_chars = st.sampled_from(list("ab x=(){}:#") + ["é", "中", "😀", "𝄞", "\t"])
_line = st.text(_chars, max_size=8)


@st.composite
def documents(draw):
    lines = draw(st.lists(_line, min_size=0, max_size=9))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    final_newline = draw(st.booleans())
    text = eol.join(lines) + (eol if final_newline and lines else "")
    return text


@st.composite
def programs(draw, n: int, monotonic: bool):
    ops = []
    pos = 1
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            ops.append(Gen(draw(st.sampled_from(["", "\n", "new", "\nnew\n", "a\nb", "é😀\n\n", "x = 1\n"]))))
        elif monotonic:
            if pos > n:
                continue
            s = draw(st.integers(pos, n))
            e = draw(st.integers(s, n))
            ops.append(CopyLines(s, e))
            pos = e + 1
        else:
            s = draw(st.integers(1, n))
            ops.append(CopyLines(s, draw(st.integers(s, n))))
    return tuple(ops)


def _check(program, doc, encoding, mode="strict"):
    plan = program_to_edits(program, doc, encoding=encoding, mode=mode)
    expected = resolve(program, doc, mode).text
    assert plan.new_text == expected
    assert apply_text_edits(doc, plan.edits, encoding) == expected
    index = LineIndex(doc, encoding)
    for cs, ce in copied_spans(doc, plan.copied):
        for edit in plan.edits:
            s, e = index.offset(edit.range.start), index.offset(edit.range.end)
            assert not max(s, cs) < min(e, ce), (edit, cs, ce)
            assert not cs < s < ce, (edit, cs, ce)
    return plan


@settings(max_examples=250, deadline=None)
@given(st.data())
def test_monotonic_programs_keep_copies(data):
    doc = data.draw(documents())
    n = len(doc.split("\n"))
    program = data.draw(programs(n, monotonic=True))
    encoding = data.draw(st.sampled_from(ENCODINGS))
    plan = _check(program, doc, encoding)
    if any(isinstance(op, CopyLines) for op in program):
        assert plan.method == "anchors"
        assert plan.copied == copied_line_ranges(program, n)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_program_applies_exactly(data):
    doc = data.draw(documents())
    n = len(doc.split("\n"))
    program = data.draw(programs(n, monotonic=False))
    _check(program, doc, data.draw(st.sampled_from(ENCODINGS)))


@settings(max_examples=100, deadline=None)
@given(documents(), documents(), st.sampled_from(ENCODINGS))
def test_text_diff_applies_exactly(doc, new, encoding):
    assert apply_text_edits(doc, text_to_edits(doc, new, encoding), encoding) == new


def test_unchanged_document_needs_no_edits():
    doc = "a\nb\nc\n"
    assert program_to_edits((CopyLines(1, 4),), doc).edits == []


def test_single_line_replacement_is_one_whole_line_edit():
    doc = "def f():\n    return 1\n"
    plan = program_to_edits((CopyLines(1, 1), Gen("    return 2"), CopyLines(3, 3)), doc)
    assert plan.new_text == "def f():\n    return 2\n"
    assert len(plan.edits) == 1
    assert plan.edits[0].range == types.Range(types.Position(1, 0), types.Position(2, 0))
    assert plan.edits[0].new_text == "    return 2\n"


def test_non_monotonic_program_falls_back_to_line_diff():
    doc = "a\nb\nc"
    plan = program_to_edits((CopyLines(3, 3), CopyLines(1, 2)), doc)
    assert plan.method == "line-diff" and "monotonic" in plan.reason
    assert apply_text_edits(doc, plan.edits) == "c\na\nb"


def test_duplicating_program_falls_back_to_line_diff():
    doc = "a\nb"
    plan = program_to_edits((CopyLines(1, 2), CopyLines(1, 2)), doc)
    assert plan.method == "line-diff"
    assert apply_text_edits(doc, plan.edits) == "a\nb\na\nb"


def test_token_program_uses_line_diff_on_resolver_output():
    doc = "alpha beta\ngamma\n"
    ids = list(range(len(doc)))  # one "token" per character
    decode = lambda xs: "".join(doc[i] for i in xs)  # noqa: E731
    program = (CopyTokens(0, 5), Gen("BETA"), CopyTokens(10, len(doc) - 1))
    plan = program_to_edits(program, doc, token_ids=ids, decode_tokens=decode)
    assert plan.method == "line-diff" and plan.reason == "token-level program"
    assert apply_text_edits(doc, plan.edits) == "alpha BETA\ngamma\n"


def test_crlf_delete_trailing_lines_never_splits_crlf():
    doc = "a\r\nb\r\nc"
    plan = _check((CopyLines(1, 1),), doc, "utf-16")
    assert plan.new_text == "a\r"
    for edit in plan.edits:  # positions are valid LSP positions (inside line content)
        for pos in (edit.range.start, edit.range.end):
            assert pos.character <= len("a\r")


def test_empty_document():
    plan = _check((Gen("hello\nworld"),), "", "utf-16")
    assert plan.new_text == "hello\nworld"


def test_utf16_positions_count_surrogate_pairs():
    doc = "😀x\ny"
    index = LineIndex(doc, "utf-16")
    assert index.position(2) == types.Position(0, 3)
    assert index.offset(types.Position(0, 3)) == 2
    assert code_units("😀", "utf-8") == 4 and code_units("😀", "utf-32") == 1
    plan = _check((CopyLines(1, 1),), doc, "utf-16")
    assert plan.edits[0].range.start == types.Position(0, 3)


def test_range_to_line_range_excludes_line_at_character_zero():
    doc = "a\nb\nc\nd\n"
    rng = types.Range(types.Position(1, 0), types.Position(3, 0))
    assert range_to_line_range(doc, rng) == (2, 3)
    assert range_to_line_range(doc, types.Range(types.Position(1, 0), types.Position(1, 0))) == (2, 2)
    assert range_to_line_range(doc, types.Range(types.Position(0, 0), types.Position(3, 1))) == (1, 4)
