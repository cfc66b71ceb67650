"""Hypothesis fuzzing: escape/unescape and parse/serialize round trips (>= 10,000 cases),
line-oracle losslessness on random documents, and parse robustness on arbitrary text."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.program.grammar import (
    ENTITIES, ESCAPE_CHAR, RESERVED_LITERALS, CopyLines, CopyTokens, Gen, ProgramParseError,
    escape, parse, serialize, unescape,
)
from engine.program.oracle import line_program
from engine.program.resolver import resolve

# Adversarial building blocks: reserved literals, their entity forms, the entity characters
# on their own, prefixes of literals, tag-ish text, newlines and CR.
PIECES = [*RESERVED_LITERALS, *ENTITIES.values(), ESCAPE_CHAR, ESCAPE_CHAR * 2, "\u27e9", "\u2024",
          "<", ">", "/", "</", "<cop", "</gen", "<program>", '<copy lines="1-2"/>', "gen", "copy",
          "\n", "\r\n", "\r", " ", "é", "日本", "\U0001f600"]
adversarial_text = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=4)), max_size=12).map("".join)

ops = st.one_of(
    st.builds(CopyLines, st.integers(1, 10**6), st.integers(0, 50)).map(lambda o: CopyLines(o.start, o.start + o.end)),
    st.builds(CopyTokens, st.integers(0, 10**6), st.integers(0, 50)).map(lambda o: CopyTokens(o.start, o.start + o.end)),
    st.builds(Gen, adversarial_text),
)
programs = st.lists(ops, max_size=8).map(tuple)
FAST = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=5000, **FAST)
@given(adversarial_text)
def test_escape_round_trip_and_no_reserved_literal(text):
    escaped = escape(text)
    assert unescape(escaped) == text  # hence escape is injective on all strings
    for lit in RESERVED_LITERALS:
        assert lit not in escaped
    assert escape(unescape(escaped)) == escaped


@settings(max_examples=1000, **FAST)
@given(adversarial_text, adversarial_text)
def test_escape_injective_pairs(a, b):
    if a != b:
        assert escape(a) != escape(b)


@settings(max_examples=5000, **FAST)
@given(programs)
def test_parse_serialize_round_trip(program):
    text = serialize(program)
    assert parse(text) == program
    assert serialize(parse(text)) == text


@settings(max_examples=1000, **FAST)
@given(st.text(alphabet=st.sampled_from(list("<>/=\"-0123 \nagenpropycliostk\u27e8")), max_size=40))
def test_parse_arbitrary_text_only_raises_typed_errors(text):
    try:
        parse("<program>" + text)
    except ProgramParseError as exc:
        assert 0 <= exc.offset <= len(text) + len("<program>")
        assert f"offset {exc.offset}" in str(exc) and exc.expected in str(exc)


lines = st.lists(st.sampled_from(["", "a", "b", "c", "  x = 1", "\r", "a\r", "}"]), min_size=1, max_size=12)


@settings(max_examples=1000, **FAST)
@given(lines.map("\n".join), lines.map("\n".join))
def test_line_oracle_lossless_on_random_documents(doc, gold):
    prog = parse(serialize(line_program(doc, gold)))
    assert resolve(prog, doc, "strict").text == gold
