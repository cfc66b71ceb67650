"""Range-scoped edits: cut lines a..b out of a document, and re-base the sub-edit onto the whole.

How large documents get edited: the model sees (and rewrites) only the selected lines, then the
sub-document's program is shifted to full-document line numbers and the lines before `a` and after
`b` are copied verbatim, so `EditResult.program` and `.text` always refer to the full document.

    check_range(document, line_range) -> (a, b)            # raises InvalidRangeError
    slice_lines(document, a, b) -> str
    rebase_program(program, a, b, n_lines, sub_lines) -> Program   # line programs only
    splice_text(document, a, b, new_sub_text) -> str
"""
from __future__ import annotations

from engine.errors import InvalidRangeError
from engine.program.grammar import CopyLines, CopyTokens, Gen


def check_range(document: str, line_range) -> tuple[int, int]:
    """Validate a 1-based inclusive (a, b) against the document's `n = len(split("\\n"))` lines."""
    n = len(document.split("\n"))
    try:
        a, b = (int(line_range[0]), int(line_range[1]))
        if len(line_range) != 2:
            raise ValueError
    except (TypeError, ValueError, IndexError):
        raise InvalidRangeError(
            f"line_range must be a pair (first, last) of 1-based line numbers, got {line_range!r}"
        ) from None
    if not (1 <= a <= b <= n):
        raise InvalidRangeError(
            f"line_range {(a, b)} is outside the document: lines are numbered 1..{n} and the range "
            f"needs 1 <= first <= last <= {n}. Pass a range inside the document (or None for all)."
        )
    return a, b


def slice_lines(document: str, a: int, b: int) -> str:
    """Lines a..b (1-based inclusive) joined with "\\n" (CRs kept)."""
    return "\n".join(document.split("\n")[a - 1:b])


def splice_text(document: str, a: int, b: int, new_sub_text: str) -> str:
    """The document with lines a..b replaced by `new_sub_text`."""
    lines = document.split("\n")
    return "\n".join(lines[: a - 1] + [new_sub_text] + lines[b:])


def _merge(ops: list) -> tuple:
    out: list = []
    for op in ops:
        if out and isinstance(op, CopyLines) and isinstance(out[-1], CopyLines) and out[-1].end + 1 == op.start:
            out[-1] = CopyLines(out[-1].start, op.end)
        else:
            out.append(op)
    return tuple(out)


def rebase_program(program, a: int, b: int, n_lines: int, sub_lines: int) -> tuple:
    """Shift a line program over lines a..b (numbered 1..sub_lines) to full-document lines.

    Copies are clamped into the range first (a sub-edit never touches lines outside it), lines
    before `a` and after `b` are copied verbatim, and adjacent copies are merged. An empty
    sub-program (the range became one empty line) becomes `Gen("")`.
    """
    shift = a - 1
    body: list = []
    for op in program:
        if isinstance(op, CopyTokens):
            raise ValueError("rebase_program handles line programs only; token programs re-derive")
        if isinstance(op, CopyLines):
            i, j = sorted((op.start, op.end))
            i, j = min(max(i, 1), sub_lines), min(max(j, 1), sub_lines)
            body.append(CopyLines(i + shift, j + shift))
        else:
            body.append(op)
    if not body:
        body = [Gen("")]
    ops = ([CopyLines(1, a - 1)] if a > 1 else []) + body + ([CopyLines(b + 1, n_lines)] if b < n_lines else [])
    return _merge(ops)
