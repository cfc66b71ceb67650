"""Oracles: line-level losslessness on edge cases and the whole corpus; token-level cover."""
from __future__ import annotations

import pytest

from evaluation.corpus import load_pairs
from engine.program.grammar import CopyLines, CopyTokens, Gen, parse, serialize
from engine.program.oracle import line_program, token_cover, token_program
from engine.program.resolver import resolve

EDGE = ["", "\n", "\n\n", "a", "a\n", "a\n\n", "\na", "a\r\nb\r\n", "x\n\ny\n\n\nz"]


@pytest.mark.parametrize("doc", EDGE)
@pytest.mark.parametrize("gold", EDGE)
def test_line_oracle_edge_cases(doc, gold):
    prog = parse(serialize(line_program(doc, gold)))
    assert resolve(prog, doc).text == gold


def test_line_oracle_shapes():
    prog = line_program("a\nb\nc\nd", "a\nB\nc")
    assert prog == (CopyLines(1, 1), Gen("\nB\n"), CopyLines(3, 3))
    assert line_program("a\nb", "a") == (CopyLines(1, 1),)  # deletions emit nothing


@pytest.mark.parametrize("lang", ["python", "js"])
def test_line_oracle_lossless_on_corpus(lang):
    pairs = load_pairs(lang)
    assert len(pairs) == 164
    ok = 0
    for p in pairs:
        prog = parse(serialize(line_program(p.document, p.gold)))
        strict = resolve(prog, p.document, "strict")
        clipped = resolve(prog, p.document, "clipped")
        ok += strict.text == p.gold and clipped.text == p.gold and not clipped.warnings
    assert ok == 164


def _byte_decode(ids):
    return bytes(ids).decode("utf-8", errors="replace")


def test_token_cover_greedy_min_span():
    doc = [1, 2, 3, 4, 5, 6, 7, 8]
    gold = [9, 1, 2, 3, 4, 0, 6, 7]
    assert token_cover(doc, gold, 1) == [(1, 0, 4), (6, 5, 2)]
    assert token_cover(doc, gold, 3) == [(1, 0, 4)]
    assert token_cover(doc, gold, 5) == []
    with pytest.raises(ValueError):
        token_cover(doc, gold, 0)


def test_token_program_never_cuts_inside_a_multibyte_char():
    doc = "prefix é suffix text"
    gold = "prefix é SUFFIX text"
    d, g = list(doc.encode()), list(gold.encode())
    for m in (1, 2, 4, 8):
        prog = token_program(d, g, _byte_decode, m)
        assert resolve(prog, doc, token_ids=d, decode_tokens=_byte_decode).text == gold
        for op in prog:
            if isinstance(op, Gen):
                assert "\ufffd" not in op.text
    prog = token_program(list("é".encode()) + [1], list("é".encode()) + [2], _byte_decode, 1)
    assert isinstance(prog[0], CopyTokens) and prog[0] == CopyTokens(0, 1)


@pytest.mark.real_model
@pytest.mark.parametrize("lang", ["python", "js"])
def test_token_oracle_lossless_on_corpus(lang, real_tokenizer):
    tok = real_tokenizer

    def dec(ids):
        return tok.decode(list(ids), clean_up_tokenization_spaces=False)

    lossless = ok = 0
    for p in load_pairs(lang):
        d = tok.encode(p.document, add_special_tokens=False)
        g = tok.encode(p.gold, add_special_tokens=False)
        if dec(d) != p.document or dec(g) != p.gold:
            continue
        lossless += 1
        prog = parse(serialize(token_program(d, g, dec, 8)))
        assert any(isinstance(op, CopyTokens) for op in prog)
        ok += resolve(prog, p.document, token_ids=d, decode_tokens=dec).text == p.gold
    assert lossless > 0 and ok == lossless
