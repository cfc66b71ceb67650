"""Applying LSP TextEdits to a client-side copy of a document.

Owns: LSP position → string offset conversion (UTF-16 code units, the LSP default position
encoding; lines split on "\\n" as in docs/ARCHITECTURE.md) and applying a set of
non-overlapping edits, plus the reverse: a line range → LSP Range covering those lines.
"""
from __future__ import annotations

from dataclasses import dataclass


class TextEditError(ValueError):
    """The server sent edits that cannot be applied (overlapping or malformed)."""


@dataclass(frozen=True)
class Edit:
    start_line: int
    start_char: int   # UTF-16 code units
    end_line: int
    end_char: int
    new_text: str


def _utf16_to_index(line: str, units: int) -> int:
    count = 0
    for index, ch in enumerate(line):
        if count >= units:
            return index
        count += 2 if ord(ch) > 0xFFFF else 1
    return len(line)


def _utf16_len(line: str) -> int:
    return sum(2 if ord(ch) > 0xFFFF else 1 for ch in line)


def offset_of(text: str, line: int, character: int) -> int:
    """String index of an LSP position; past-the-end lines/characters clamp to the end."""
    lines = text.split("\n")
    if line >= len(lines):
        return len(text)
    start = sum(len(l) + 1 for l in lines[:line])
    return start + _utf16_to_index(lines[line], character)


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (all positions refer to the original text)."""
    spans = []
    for e in edits:
        a, b = offset_of(text, e.start_line, e.start_char), offset_of(text, e.end_line, e.end_char)
        if b < a:
            raise TextEditError(f"edit {e} ends before it starts")
        spans.append((a, b, e.new_text))
    spans.sort(key=lambda s: (s[0], s[1]))
    for (a1, b1, _), (a2, _b2, _) in zip(spans, spans[1:]):
        if a2 < b1:
            raise TextEditError(f"overlapping edits at offsets {a1}-{b1} and {a2}: cannot apply")
    out, pos = [], 0
    for a, b, new in spans:
        out.append(text[pos:a])
        out.append(new)
        pos = b
    out.append(text[pos:])
    return "".join(out)


def lines_to_range(text: str, start_line: int, end_line: int) -> dict:
    """1-based inclusive line range → LSP Range dict from the start of `start_line` to the end
    of `end_line` (end stays on that line, so it works for the last line too)."""
    lines = text.split("\n")
    end_line = min(end_line, len(lines))
    return {
        "start": {"line": start_line - 1, "character": 0},
        "end": {"line": end_line - 1, "character": _utf16_len(lines[end_line - 1])},
    }
