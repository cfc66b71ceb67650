"""Aider-style SEARCH/REPLACE blocks, derived from the line-level oracle.

Each non-copied region of the oracle becomes one block whose SEARCH part is exactly the
document lines it replaces (a pure insertion uses the adjacent document line as its anchor)
and whose REPLACE part is the new lines. Apply uses Aider's first-match semantics: blocks are
applied in order to the running text, each replacing the *first* occurrence of its SEARCH
lines. When a SEARCH anchor occurs more than once the edit may land in the wrong place;
:func:`ambiguous_anchors` counts those blocks.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from evaluation.formats.errors import FormatApplyError

NAME = "search_replace"
HEAD, SEP, TAIL = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"


@dataclass(frozen=True)
class Block:
    search: tuple[str, ...]
    replace: tuple[str, ...]


def blocks_for(doc: str, gold: str) -> list[Block]:
    """The minimal-anchor blocks turning ``doc`` into ``gold`` (same alignment as the oracle)."""
    a, b = doc.split("\n"), gold.split("\n")
    blocks: list[Block] = []
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            blocks.append(Block(tuple(a[i1:i2]), tuple(b[j1:j2])))
        elif i1 > 0:  # insertion after document line i1 (1-based): anchor on it
            blocks.append(Block((a[i1 - 1],), (a[i1 - 1], *b[j1:j2])))
        else:  # insertion at the very top: anchor on the first line
            blocks.append(Block((a[0],), (*b[j1:j2], a[0])))
    return blocks


def format_blocks(blocks: list[Block]) -> str:
    parts = []
    for blk in blocks:
        parts.append("\n".join([HEAD, *blk.search, SEP, *blk.replace, TAIL]))
    return "\n\n".join(parts) + ("\n" if parts else "")


def serialize(doc: str, gold: str) -> str:
    """SEARCH/REPLACE blocks for the oracle edit."""
    return format_blocks(blocks_for(doc, gold))


def parse_blocks(text: str) -> list[Block]:
    """Parse SEARCH/REPLACE blocks; raises :class:`FormatApplyError` naming the line."""
    lines = text.split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i] != HEAD:
            if lines[i].strip():
                raise FormatApplyError(NAME, f"line {i + 1}: expected {HEAD!r} or a blank line, "
                                             f"found {lines[i][:40]!r}")
            i += 1
            continue
        try:
            sep = lines.index(SEP, i + 1)
            tail = lines.index(TAIL, sep + 1)
        except ValueError:
            raise FormatApplyError(NAME, f"line {i + 1}: block is missing {SEP!r} or {TAIL!r}") from None
        blocks.append(Block(tuple(lines[i + 1:sep]), tuple(lines[sep + 1:tail])))
        i = tail + 1
    return blocks


def _find_all(lines: list[str], search: tuple[str, ...]) -> list[int]:
    k = len(search)
    return [i for i in range(len(lines) - k + 1) if tuple(lines[i:i + k]) == search]


def ambiguous_anchors(doc: str, text: str) -> int:
    """How many blocks' SEARCH occurs more than once in the text they are applied to."""
    lines = doc.split("\n")
    count = 0
    for blk in parse_blocks(text):
        hits = _find_all(lines, blk.search)
        count += len(hits) > 1
        if hits:
            lines[hits[0]:hits[0] + len(blk.search)] = blk.replace
    return count


def apply(doc: str, text: str) -> str:
    """Apply blocks in order, each to the first occurrence of its SEARCH lines."""
    lines = doc.split("\n")
    for k, blk in enumerate(parse_blocks(text)):
        if not blk.search:
            raise FormatApplyError(NAME, f"block {k} has an empty SEARCH part")
        hits = _find_all(lines, blk.search)
        if not hits:
            raise FormatApplyError(NAME, f"block {k}: SEARCH text {blk.search[0][:40]!r}… not found")
        lines[hits[0]:hits[0] + len(blk.search)] = blk.replace
    return "\n".join(lines)
