"""Grammar: parse/serialize round trips, escape properties, malformed programs (typed errors)."""
from __future__ import annotations

import pytest

from engine.program.grammar import (
    ENTITIES, ESCAPE_CHAR, RESERVED_LITERALS, CopyLines, CopyTokens, Gen, ProgramParseError,
    escape, parse, serialize, unescape,
)


def test_serialize_canonical_form():
    prog = (CopyLines(1, 12), Gen("\n    return a + b\n"), CopyLines(14, 40), CopyTokens(0, 3))
    text = serialize(prog)
    assert text == ('<program><copy lines="1-12"/><gen>\n    return a + b\n</gen>'
                    '<copy lines="14-40"/><copy tokens="0-3"/></program>')
    assert parse(text) == prog


def test_empty_program_and_whitespace_between_ops():
    assert parse("<program></program>") == ()
    assert parse(' \n<program>\n <copy lines="2-3"/>\n<gen>x</gen> </program>\n') == (CopyLines(2, 3), Gen("x"))


def test_gen_body_with_reserved_literals_round_trips():
    body = 'if "</gen>" in s or "<copy" in t: return "</program></copy><gen>"'
    text = serialize((Gen(body),))
    inner = text[len("<program><gen>"):-len("</gen></program>")]
    for lit in RESERVED_LITERALS:
        assert lit not in inner
    assert parse(text) == (Gen(body),)


def test_escape_maps_each_literal_to_its_entity_and_back():
    for lit, ent in ENTITIES.items():
        assert escape(lit) == ent
        assert unescape(ent) == lit
    assert escape("</gen>") == "\u27e8\u2024gen\u27e9"


def test_escape_is_injective_on_text_that_already_contains_entities():
    a = "</gen>"
    b = ENTITIES["</gen>"]  # the entity form itself, written literally
    assert escape(a) != escape(b)
    assert unescape(escape(b)) == b
    assert unescape(escape(ESCAPE_CHAR)) == ESCAPE_CHAR
    assert unescape(escape(ESCAPE_CHAR + "<copy")) == ESCAPE_CHAR + "<copy"


def _err(text: str) -> ProgramParseError:
    with pytest.raises(ProgramParseError) as info:
        parse(text)
    return info.value


def test_unterminated_gen():
    e = _err("<program><gen>abc")
    assert e.offset == len("<program><gen>abc")
    assert "</gen>" in e.expected and "offset 9" in e.expected
    assert f"offset {e.offset}" in str(e) and "</gen>" in str(e)


def test_reversed_line_range():
    text = '<program><copy lines="5-2"/></program>'
    e = _err(text)
    assert e.offset == text.index("2\"")
    assert "end line >= start line 5" in str(e) and f"offset {e.offset}" in str(e)


def test_zero_line_number():
    text = '<program><copy lines="0-3"/></program>'
    e = _err(text)
    assert e.offset == text.index("0-3")
    assert "1-based" in e.expected and f"offset {e.offset}" in str(e)


@pytest.mark.parametrize("body", ["a-3", "1-b", "1", "-1-3", "1 - 3", ""])
def test_non_digit_range(body):
    text = f'<program><copy lines="{body}"/></program>'
    e = _err(text)
    assert text.index('"') < e.offset <= text.index('"') + 1 + len(body)
    assert "decimal digits" in e.expected and repr(body) in str(e)


def test_reversed_token_range():
    e = _err('<program><copy tokens="9-3"/></program>')
    assert "end token >= start token 9" in str(e)


@pytest.mark.parametrize("inner,lit", [("<gen>x", "<gen>"), ('<copy lines="1-2"/>', "<copy"),
                                       ("</program>", "</program>"), ("</copy>", "</copy>")])
def test_nested_tags_in_gen(inner, lit):
    text = f"<program><gen>a{inner}</gen></program>"
    e = _err(text)
    assert e.offset == text.index(lit, len("<program><gen>"))
    assert lit in e.expected and f"offset {e.offset}" in str(e)


def test_trailing_garbage():
    text = '<program><copy lines="1-2"/></program> junk'
    e = _err(text)
    assert e.offset == text.index("junk")
    assert "trailing garbage" in e.expected and "'junk'" in str(e)


@pytest.mark.parametrize("text,offset,expected", [
    ("hello", 0, "'<program>'"),
    ("<program>", 9, "'</program>'"),
    ("<program>text</program>", 9, "'<copy …/>', '<gen>' or '</program>'"),
    ('<program><copy lines="1-2"></program>', 9, '<copy lines="I-J"/>'),
    ('<program><copy rows="1-2"/></program>', 9, '<copy lines="I-J"/>'),
])
def test_other_malformed(text, offset, expected):
    e = _err(text)
    assert e.offset == offset
    assert expected in e.expected
    assert isinstance(e, ValueError)


def test_serialize_rejects_foreign_ops():
    with pytest.raises(TypeError, match="op 1"):
        serialize((Gen("a"), "not an op"))
