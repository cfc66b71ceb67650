"""Resolver semantics and edge cases: newlines, CRLF, empty doc/gens, strict vs clipped, tokens."""
from __future__ import annotations

import pytest

from engine.program.grammar import CopyLines, CopyTokens, Gen
from engine.program.oracle import line_program
from engine.program.resolver import ResolveError, resolve, strip_gen


def r(prog, doc, mode="strict"):
    return resolve(prog, doc, mode).text


def test_copy_join_and_gen_strip():
    doc = "a\nb\nc\nd"
    assert r((CopyLines(1, 2), Gen("\nX\n"), CopyLines(4, 4)), doc) == "a\nb\nX\nd"
    assert r((Gen("\n\nX\n\n"),), doc) == "\nX\n"  # strips at most one each side
    assert strip_gen("\n") == "" and strip_gen("\n\n") == "" and strip_gen("\n\n\n") == "\n"


def test_trailing_newline_is_a_final_empty_line():
    doc = "a\nb\n"
    assert r((CopyLines(1, 3),), doc) == doc
    assert r((CopyLines(1, 2),), doc) == "a\nb"
    assert r((CopyLines(1, 2), Gen("\n\n")), doc) == doc


def test_missing_trailing_newline():
    assert r((CopyLines(1, 2),), "a\nb") == "a\nb"


def test_crlf_document_copies_are_byte_exact():
    doc = "x = 1\r\ny = 2\r\nz = 3\r\n"
    gold = "x = 1\r\ny = 20\r\nz = 3\r\n"
    prog = line_program(doc, gold)
    assert CopyLines(1, 1) in prog and CopyLines(3, 4) in prog
    assert r(prog, doc) == gold


def test_empty_document_and_empty_gens():
    assert r((CopyLines(1, 1),), "") == ""
    assert r((), "abc") == ""
    assert r((Gen(""),), "") == ""
    assert r((CopyLines(1, 1), Gen(""), CopyLines(2, 2)), "a\nb") == "a\n\nb"
    with pytest.raises(ResolveError) as info:
        r((CopyLines(1, 2),), "")
    assert info.value.line_count == 1 and "1 lines" in str(info.value)


@pytest.mark.parametrize("op", [CopyLines(0, 1), CopyLines(2, 9), CopyLines(5, 5)])
def test_strict_raises_naming_op_and_line_count(op):
    with pytest.raises(ResolveError) as info:
        r((Gen("x"), op), "a\nb\nc")
    e = info.value
    assert e.op_index == 1 and e.op == op and e.line_count == 3
    assert "op 1" in str(e) and "3 lines" in str(e) and repr(op) in str(e)


def test_clipped_clips_and_warns():
    res = resolve((CopyLines(0, 2), Gen("\nX\n"), CopyLines(3, 99)), "a\nb\nc", "clipped")
    assert res.text == "a\nb\nX\nc"
    assert len(res.warnings) == 2
    assert "op 0" in res.warnings[0] and "op 2" in res.warnings[1] and "3 lines" in res.warnings[1]
    assert resolve((CopyLines(3, 1),), "a\nb\nc", "clipped").text == "a\nb\nc"
    assert resolve((CopyLines(1, 3),), "a\nb\nc", "clipped").warnings == []


def test_unknown_mode():
    with pytest.raises(ValueError, match="not one of"):
        resolve((), "", "lenient")


def _byte_decode(ids):
    return bytes(ids).decode("utf-8", errors="replace")


def test_token_mode_concatenates_and_decodes_contiguous_runs_together():
    doc = "héllo wörld"
    ids = list(doc.encode("utf-8"))  # one "token" per byte: é splits across ids 1 and 2
    assert "\ufffd" in _byte_decode(ids[0:2])  # decoding the first op alone would break é
    prog = (CopyTokens(0, 1), CopyTokens(2, 6), Gen("W"), CopyTokens(10, len(ids) - 1))
    out = resolve(prog, doc, token_ids=ids, decode_tokens=_byte_decode).text
    assert out == "héllo Wrld"


def test_token_mode_bounds_strict_and_clipped():
    ids = list(b"abc")
    with pytest.raises(ResolveError) as info:
        resolve((CopyTokens(1, 3),), "abc", token_ids=ids, decode_tokens=_byte_decode)
    assert "3 tokens" in str(info.value) and info.value.token_count == 3
    res = resolve((CopyTokens(1, 3),), "abc", "clipped", token_ids=ids, decode_tokens=_byte_decode)
    assert res.text == "bc" and res.warnings


def test_token_mode_needs_ids_and_no_mixing():
    with pytest.raises(ResolveError, match="token_ids"):
        resolve((CopyTokens(0, 0),), "abc")
    with pytest.raises(ResolveError, match="mixes"):
        resolve((CopyLines(1, 1), CopyTokens(0, 0)), "abc", token_ids=[1], decode_tokens=str)


def test_gen_only_program_follows_the_callers_granularity():
    prog = (Gen("\nx\n"),)
    assert resolve(prog, "abc").text == "x"  # line mode strips
    assert resolve(prog, "abc", token_ids=[1], decode_tokens=_byte_decode).text == "x"
    assert resolve(prog, "abc", token_ids=[1], decode_tokens=_byte_decode,
                   granularity="tokens").text == "\nx\n"
    with pytest.raises(ResolveError, match="granularity='tokens'"):
        resolve((CopyLines(1, 1),), "abc", granularity="tokens")
    with pytest.raises(ValueError, match="granularity"):
        resolve(prog, "abc", granularity="chars")
