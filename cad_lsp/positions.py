"""LSP positions ↔ string offsets, in the negotiated position encoding.

Owns the only character math in the server:

* LSP lines end at ``"\\r\\n"``, ``"\\n"`` or a lone ``"\\r"`` (the LSP spec's EOL set);
  :class:`LineIndex` follows that rule so positions mean what the client thinks they mean.
* ``Position.character`` counts code units of the negotiated ``positionEncoding``:
  ``"utf-16"`` (the LSP default; a character outside the BMP is 2 units), ``"utf-8"``
  (bytes) or ``"utf-32"`` (code points == Python ``str`` indices).
* Program lines (``document.split("\\n")``, see docs/ARCHITECTURE.md) are converted from
  client ranges through offsets, so documents with a lone ``"\\r"`` still map correctly.
"""
from __future__ import annotations

import bisect
import re

from lsprotocol import types

__all__ = [
    "ENCODINGS", "PositionEncodingError", "LineIndex", "code_units", "range_to_line_range",
]

ENCODINGS = ("utf-16", "utf-8", "utf-32")

_EOL = re.compile(r"\r\n|\r|\n")


class PositionEncodingError(ValueError):
    """A position encoding other than utf-8/utf-16/utf-32 was requested."""


def _check_encoding(encoding: str) -> str:
    encoding = str(getattr(encoding, "value", encoding))
    if encoding not in ENCODINGS:
        raise PositionEncodingError(
            f"position encoding {encoding!r} is not supported; use one of {ENCODINGS} "
            "(negotiated through general.positionEncodings at initialize)")
    return encoding


def code_units(text: str, encoding: str = "utf-16") -> int:
    """Length of ``text`` in code units of ``encoding``."""
    encoding = _check_encoding(encoding)
    if encoding == "utf-32":
        return len(text)
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _chars_for_units(text: str, units: int, encoding: str) -> int:
    """Number of leading characters of ``text`` covering at most ``units`` code units."""
    if encoding == "utf-32":
        return min(units, len(text))
    used = 0
    for i, ch in enumerate(text):
        width = len(ch.encode("utf-8", "surrogatepass")) if encoding == "utf-8" else (2 if ord(ch) > 0xFFFF else 1)
        if used + width > units:
            return i
        used += width
    return len(text)


class LineIndex:
    """Line starts of one document under LSP's EOL rule, for offset ↔ Position conversion."""

    def __init__(self, text: str, encoding: str = "utf-16"):
        self.text = text
        self.encoding = _check_encoding(encoding)
        self.starts = [0]
        self.ends = []  # offset where each line's content ends (before its EOL)
        for match in _EOL.finditer(text):
            self.ends.append(match.start())
            self.starts.append(match.end())
        self.ends.append(len(text))

    @property
    def line_count(self) -> int:
        return len(self.starts)

    def position(self, offset: int) -> types.Position:
        """The client position of string offset ``offset`` (0 <= offset <= len(text))."""
        if not 0 <= offset <= len(self.text):
            raise IndexError(f"offset {offset} is outside the document (length {len(self.text)})")
        line = bisect.bisect_right(self.starts, offset) - 1
        if offset > self.ends[line]:
            raise ValueError(f"offset {offset} falls inside the line break after line {line}; "
                             "an edit must not split a \\r\\n pair")
        start = self.starts[line]
        return types.Position(line=line, character=code_units(self.text[start:offset], self.encoding))

    def offset(self, position: types.Position) -> int:
        """The string offset of a client position (clamped like LSP clients do)."""
        if position.line >= self.line_count:
            return len(self.text)
        start, end = self.starts[position.line], self.ends[position.line]
        content = self.text[start:end]
        return start + _chars_for_units(content, position.character, self.encoding)


def range_to_line_range(text: str, rng: types.Range, encoding: str = "utf-16") -> tuple[int, int]:
    """The 1-based inclusive program lines covered by a client range.

    Lines follow ``text.split("\\n")``. An end at the very start of a later line excludes that
    line (a selection of whole lines ends at character 0 of the next line).
    """
    index = LineIndex(text, encoding)
    start = index.offset(rng.start)
    end = index.offset(rng.end)
    if end < start:
        start, end = end, start
    first = text.count("\n", 0, start) + 1
    last = text.count("\n", 0, end) + 1
    if last > first and end > 0 and text[end - 1] == "\n":
        last -= 1
    return first, last
