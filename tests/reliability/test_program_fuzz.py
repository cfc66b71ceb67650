"""Issue 13 item 4: resolver/program fuzzing with invariants (not just "no crash").

Random line programs against random documents (CRLF, CR, no final newline, unicode, empty),
strict and clipped resolver modes, every LSP position encoding:

* ``cad_lsp.textedits.program_to_edits`` applied to the document == the resolver's text;
* no TextEdit overlaps a copied line (checked here independently of textedits' own check) and
  every copied line appears byte-identical in the result;
* strict mode either raises ``ResolveError`` or agrees with clipped mode;
* idempotence: resolving the identity program gives the document back, and the edits from the
  result to itself are empty; the line oracle's program for (document, result) resolves to result.
"""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cad_lsp.positions import LineIndex
from cad_lsp.textedits import apply_text_edits, program_to_edits, text_to_edits
from engine.program.grammar import CopyLines, Gen
from engine.program.oracle import line_program
from engine.program.resolver import ResolveError, resolve

FAST = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True)
LINE = st.sampled_from(["", "a", "b", "  x = 1", "}", "é日本", "\U0001f600 = 2", "\t", "a\r", "\r", "# cad: fix",
                        "...", "<copy lines=\"1-2\"/>", "x" * 30])
documents = st.lists(LINE, min_size=1, max_size=14).map("\n".join)
gen_text = st.lists(st.sampled_from(["", "new", "\n", "  y = 2", "\r\n", "é", "\U0001f600", "a\r"]), max_size=4).map("".join)


@st.composite
def programs(draw, n_lines_hint=14, monotonic=None):
    ops = []
    cursor = 1
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            ops.append(Gen(draw(gen_text)))
            continue
        if monotonic if monotonic is not None else draw(st.booleans()):
            start = cursor + draw(st.integers(0, 3))
            end = start + draw(st.integers(0, 4))
            cursor = end + 1
        else:
            start, end = draw(st.integers(-1, n_lines_hint + 3)), draw(st.integers(-1, n_lines_hint + 3))
        ops.append(CopyLines(start, end))
    return tuple(ops)


def _copied_line_texts(program, document: str) -> list[str]:
    lines = document.split("\n")
    out = []
    for op in program:
        if isinstance(op, CopyLines) and 1 <= op.start <= op.end <= len(lines):
            out.extend(lines[op.start - 1:op.end])
    return out


@settings(max_examples=2500, **FAST)
@given(documents, programs(), st.sampled_from(["strict", "clipped"]), st.sampled_from(["utf-16", "utf-8", "utf-32"]))
def test_text_edits_reproduce_the_resolver_and_never_touch_copied_lines(document, program, mode, encoding):
    try:
        resolution = resolve(program, document, mode)
    except ResolveError:
        assert mode == "strict"
        return
    if mode == "strict":
        assert resolve(program, document, "clipped").text == resolution.text
    plan = program_to_edits(program, document, encoding=encoding, mode=mode)
    assert plan.new_text == resolution.text
    assert apply_text_edits(document, plan.edits, encoding) == resolution.text
    for line in _copied_line_texts(program, document):
        assert line in resolution.text.split("\n")  # byte-identical copy
    if plan.method == "anchors":
        index = LineIndex(document, encoding)
        lines = document.split("\n")
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line) + 1)
        for a, b in plan.copied:
            lo, hi = starts[a - 1], starts[b] - 1  # content of lines a..b, without the final "\n"
            for edit in plan.edits:
                s = index.offset(edit.range.start)
                e = index.offset(edit.range.end)
                if s < hi and e > lo and s == hi - 1 and document[s] == "\r" and edit.new_text.startswith("\r"):
                    continue  # a "\r\n" pair is never split: the copied line's "\r" is rewritten as itself
                assert e <= lo or s >= hi or (s == e and (s == lo or s == hi)), (edit, (a, b), document, program)


@settings(max_examples=1500, **FAST)
@given(documents, programs(monotonic=True))
def test_monotonic_programs_map_to_anchored_edits(document, program):
    try:
        text = resolve(program, document, "strict").text
    except ResolveError:
        return
    plan = program_to_edits(program, document, mode="strict")
    if any(isinstance(op, CopyLines) for op in program) and text:
        assert plan.method == "anchors", plan.reason
    assert apply_text_edits(document, plan.edits) == text


@settings(max_examples=1500, **FAST)
@given(documents, documents)
def test_idempotence_and_oracle_round_trip(document, other):
    n = len(document.split("\n"))
    assert resolve((CopyLines(1, n),), document, "strict").text == document
    assert text_to_edits(document, document) == []
    assert program_to_edits((CopyLines(1, n),), document).edits == []
    program = line_program(document, other)
    assert resolve(program, document, "strict").text == other
    plan = program_to_edits(program, document, mode="strict")
    assert apply_text_edits(document, plan.edits) == other
    again = program_to_edits(line_program(other, other), other, mode="strict")
    assert again.edits == []
