"""Program × document → a minimal list of LSP ``TextEdit`` s that never touch copied lines.

Owns the mapping from an edit program to client edits:

1. **Monotonic line programs** (``CopyLines`` ranges strictly increasing and disjoint): the
   copied lines are *anchors* and stay untouched. Each gap between anchors (document lines
   not copied) is replaced by the generated lines the program puts there; inside a gap a
   line diff (difflib) keeps any regenerated-but-identical lines untouched too.
2. **Everything else** (reordering, duplication, token-level ``CopyTokens`` programs, or a
   program whose anchor reconstruction disagrees with the resolver): a minimal line diff
   (``difflib.SequenceMatcher`` over lines) between the document and the resolver output.

Lines follow ``document.split("\\n")`` (program line k == LSP line k-1 for "\\n"/"\\r\\n"
documents). Whole-line hunks become ranges at line starts; a hunk that reaches the end of
the document uses the end-of-line position instead of an out-of-range line. Character
offsets are computed in the negotiated encoding (:mod:`cad_lsp.positions`), and no range
ever splits a ``"\\r\\n"`` pair.

Correctness is checked in code, before returning: the edits are applied in memory (through
the same position conversion a client uses) and must reproduce the resolver's output
exactly, and no edit may overlap the content of a copied line; otherwise
:class:`TextEditMappingError` is raised.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Callable, Sequence

from lsprotocol import types

from engine.program.grammar import CopyLines, CopyTokens, Gen
from engine.program.resolver import resolve, strip_gen

from .positions import LineIndex

__all__ = [
    "TextEditMappingError", "LineHunk", "EditPlan", "program_to_edits", "text_to_edits",
    "copied_line_ranges", "apply_text_edits", "copied_spans",
]


class TextEditMappingError(RuntimeError):
    """The computed TextEdits do not reproduce the resolver output (a bug in this module)."""


@dataclass(frozen=True)
class LineHunk:
    """Replace document lines ``[start, end)`` (0-based, ``split("\\n")``) by ``lines``."""

    start: int
    end: int
    lines: tuple[str, ...]


@dataclass
class EditPlan:
    """The TextEdits for one program, the text they produce and how they were derived."""

    edits: list[types.TextEdit]
    new_text: str
    copied: list[tuple[int, int]] = field(default_factory=list)  # 1-based inclusive lines kept
    method: str = "anchors"  # "anchors" | "line-diff"
    reason: str = ""  # why the line-diff fallback was used


def copied_line_ranges(program: Sequence, line_count: int, mode: str = "strict") -> list[tuple[int, int]] | None:
    """Copied line ranges (1-based inclusive, clipped like the resolver) if they are monotonic.

    Returns ``None`` for token programs and for programs whose copies are not strictly
    increasing and disjoint (reordering, duplication).
    """
    ranges: list[tuple[int, int]] = []
    for op in program:
        if isinstance(op, CopyTokens):
            return None
        if isinstance(op, CopyLines):
            s, e = op.start, op.end
            if mode == "clipped":
                s, e = sorted((s, e))
                s, e = min(max(s, 1), line_count), min(max(e, 1), line_count)
            if not 1 <= s <= e <= line_count:
                return None
            if ranges and s <= ranges[-1][1]:
                return None
            ranges.append((s, e))
    return ranges


def _anchor_hunks(program: Sequence, lines: list[str], target: str, mode: str) -> list[LineHunk] | None:
    """Hunks for a monotonic line program, or None when that structure does not apply."""
    ranges = copied_line_ranges(program, len(lines), mode)
    if ranges is None:
        return None
    gaps: list[list[str]] = [[]]  # generated lines before the first copy, between copies, after
    out: list[str] = []
    copy_i = 0
    for op in program:
        if isinstance(op, CopyLines):
            s, e = ranges[copy_i]
            copy_i += 1
            out.extend(lines[s - 1:e])
            gaps.append([])
        elif isinstance(op, Gen):
            piece = strip_gen(op.text).split("\n")
            out.extend(piece)
            gaps[-1].extend(piece)
        else:
            return None
    if "\n".join(out) != target or not out:
        return None
    hunks: list[LineHunk] = []
    bounds = [0] + [x for s, e in ranges for x in (s - 1, e)] + [len(lines)]
    for gap_i, new_lines in enumerate(gaps):
        lo, hi = bounds[2 * gap_i], bounds[2 * gap_i + 1]
        for h in _diff_hunks(lines[lo:hi], new_lines):
            hunks.append(LineHunk(h.start + lo, h.end + lo, h.lines))
    return hunks


def _diff_hunks(old: Sequence[str], new: Sequence[str]) -> list[LineHunk]:
    """A line diff as hunks (difflib, no junk heuristics)."""
    matcher = difflib.SequenceMatcher(None, list(old), list(new), autojunk=False)
    return [LineHunk(i1, i2, tuple(new[j1:j2]))
            for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def _line_offsets(lines: Sequence[str]) -> list[int]:
    offsets, pos = [], 0
    for line in lines:
        offsets.append(pos)
        pos += len(line) + 1
    return offsets


def _hunk_span(hunk: LineHunk, lines: Sequence[str], offsets: Sequence[int], length: int) -> tuple[int, int, str]:
    """The (start, end, new_text) string replacement for a whole-line hunk."""
    a, b, new = hunk.start, hunk.end, hunk.lines
    n = len(lines)
    if b < n:  # followed by a kept line: replace [start of a, start of b)
        return offsets[a], offsets[b], "".join(line + "\n" for line in new)
    if a == n:  # pure insertion after the last line
        return length, length, "".join("\n" + line for line in new)
    if new:  # replace through the end of the document, keeping the preceding line break
        return offsets[a], length, "\n".join(new)
    if a == 0:
        return 0, length, ""
    return offsets[a] - 1, length, ""  # delete the trailing lines and the break before them


def _no_crlf_split(text: str, start: int, end: int, new: str) -> tuple[int, int, str]:
    """Widen a replacement that would begin or end between "\\r" and "\\n" by that character."""
    if 0 < start < len(text) and text[start - 1] == "\r" and text[start] == "\n":
        start, new = start - 1, "\r" + new
    if 0 < end < len(text) and text[end - 1] == "\r" and text[end] == "\n":
        end, new = end + 1, new + "\n"
    return start, end, new


def hunks_to_edits(document: str, hunks: Sequence[LineHunk], encoding: str = "utf-16") -> list[types.TextEdit]:
    """Convert whole-line hunks (sorted, disjoint) to TextEdits in ``encoding``."""
    lines = document.split("\n")
    offsets = _line_offsets(lines)
    index = LineIndex(document, encoding)
    edits = []
    for hunk in hunks:
        start, end, new = _no_crlf_split(document, *_hunk_span(hunk, lines, offsets, len(document)))
        if start == end and not new:
            continue
        edits.append(types.TextEdit(range=types.Range(start=index.position(start), end=index.position(end)),
                                    new_text=new))
    return edits


def apply_text_edits(document: str, edits: Sequence[types.TextEdit], encoding: str = "utf-16") -> str:
    """Apply TextEdits the way an LSP client does (positions → offsets, non-overlapping)."""
    index = LineIndex(document, encoding)
    spans = sorted(((index.offset(e.range.start), index.offset(e.range.end), i, e.new_text)
                    for i, e in enumerate(edits)), key=lambda s: (s[0], s[2]))
    for (s1, e1, _, _), (s2, _, _, _) in zip(spans, spans[1:]):
        if s2 < e1:
            raise TextEditMappingError(f"TextEdits overlap at offsets {s2}..{e1}")
    out, pos = [], 0
    for start, end, _, new in spans:
        out.append(document[pos:start])
        out.append(new)
        pos = end
    out.append(document[pos:])
    return "".join(out)


def copied_spans(document: str, copied: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """String spans of the *content* of copied lines (1-based inclusive line ranges).

    A line's content excludes its line break (and the "\\r" of a "\\r\\n" break).
    """
    lines = document.split("\n")
    offsets = _line_offsets(lines)
    spans = []
    for s, e in copied:
        last = lines[e - 1]
        content_end = offsets[e - 1] + len(last) - (1 if last.endswith("\r") else 0)
        spans.append((offsets[s - 1], content_end))
    return spans


def _check_untouched(document: str, edits, copied, encoding: str) -> None:
    index = LineIndex(document, encoding)
    spans = copied_spans(document, copied)
    for edit in edits:
        start, end = index.offset(edit.range.start), index.offset(edit.range.end)
        for cs, ce in spans:
            if max(start, cs) < min(end, ce) or cs < start < ce:
                raise TextEditMappingError(
                    f"TextEdit {edit.range} touches copied text at offsets {cs}..{ce}")


def text_to_edits(document: str, new_text: str, encoding: str = "utf-16") -> list[types.TextEdit]:
    """A minimal line diff from ``document`` to ``new_text`` as TextEdits (verified)."""
    edits = hunks_to_edits(document, _diff_hunks(document.split("\n"), new_text.split("\n")), encoding)
    _verify(document, edits, new_text, encoding)
    return edits


def _verify(document: str, edits, expected: str, encoding: str) -> None:
    got = apply_text_edits(document, edits, encoding)
    if got != expected:
        raise TextEditMappingError(
            f"applying {len(edits)} TextEdit(s) gives {len(got)} chars, expected the resolver's "
            f"{len(expected)} chars (first difference at offset "
            f"{next((i for i, (x, y) in enumerate(zip(got, expected)) if x != y), min(len(got), len(expected)))}); "
            "this is a bug in cad_lsp.textedits, please report it with the program and document")


def program_to_edits(program: Sequence, document: str, *, encoding: str = "utf-16", mode: str = "strict",
                     expected: str | None = None, token_ids: Sequence[int] | None = None,
                     decode_tokens: Callable[[Sequence[int]], str] | None = None,
                     granularity: str | None = None) -> EditPlan:
    """The minimal TextEdits that turn ``document`` into ``resolve(program, document)``.

    ``expected`` is the resolver output when the caller already has it (required for token
    programs unless ``token_ids``/``decode_tokens`` are given). For line programs the
    resolver is run here and must agree with ``expected``. ``granularity="tokens"`` marks a
    token-mode program even without ``CopyTokens`` (e.g. a gen-only ``cad-tokens`` program).
    """
    is_tokens = granularity == "tokens" or any(isinstance(op, CopyTokens) for op in program)
    if is_tokens and (token_ids is None or decode_tokens is None):
        if expected is None:
            raise ValueError("a token-level program needs expected= (the resolver output) or "
                             "token_ids= and decode_tokens= to resolve it")
        target = expected
    else:
        target = resolve(program, document, mode, token_ids=token_ids, decode_tokens=decode_tokens,
                         granularity=granularity).text
        if expected is not None and expected != target:
            raise TextEditMappingError(
                f"the engine's text ({len(expected)} chars) differs from resolve(program, document, "
                f"mode={mode!r}) ({len(target)} chars); the edit would not match its program")
    lines = document.split("\n")
    hunks = None if is_tokens else _anchor_hunks(program, lines, target, mode)
    if hunks is not None:
        copied = copied_line_ranges(program, len(lines), mode) or []
        edits = hunks_to_edits(document, hunks, encoding)
        _verify(document, edits, target, encoding)
        _check_untouched(document, edits, copied, encoding)
        return EditPlan(edits, target, copied, "anchors")
    reason = "token-level program" if is_tokens else "copies are not monotonic (reordered or duplicated)"
    return EditPlan(text_to_edits(document, target, encoding), target, [], "line-diff", reason)
