"""Rebase an edit's TextEdits through changes the user made while it was decoding.

Owns the rule that decides whether typing elsewhere in the buffer may keep an edit:

* the user's changes are the line diff (difflib) between the decoded snapshot and the current
  text; an edit **touches** the snapshot lines ``range.start.line .. range.end.line`` (an end at
  character 0 of a later line does not touch that line: the position is a line start whatever
  the line holds);
* the edit survives only if every line it touches lies inside one unchanged block of that diff:
  then it is moved by that block's line offset, characters unchanged. A change on, or an
  insertion between, the touched lines is an **overlap** and the edit is discarded, with a
  message naming the lines;
* every rebased edit is checked: the current text under its new range must equal the snapshot
  text under its old range, and the edits must not overlap; otherwise nothing is rebased.

:func:`rebase_onto_current` applies this to a server document (used by
:func:`cad_lsp.versioned_apply.apply_versioned` when the document changed while decoding).
Pure functions otherwise; no LSP I/O.
"""
from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass
from typing import Any, Sequence
from urllib.parse import unquote

from lsprotocol import types

from .positions import LineIndex

__all__ = ["Rebased", "rebase_edits", "rebase_onto_current"]


@dataclass(frozen=True)
class Rebased:
    """``edits`` moved onto the current text, or ``edits=None`` and ``why`` (an overlap)."""

    edits: list[types.TextEdit] | None
    why: str = ""
    snapshot: Any = None  # the current document as a snapshot (set by rebase_onto_current)


def _touched(edit: types.TextEdit) -> tuple[int, int]:
    start, end = edit.range.start, edit.range.end
    last = end.line - 1 if end.character == 0 and end.line > start.line else end.line
    return start.line, last


def _equal_blocks(old_lines: list[str], new_lines: list[str]) -> list[tuple[int, int, int]]:
    """(old_start, new_start, size) of the unchanged line blocks."""
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    return [(a, b, size) for a, b, size in matcher.get_matching_blocks() if size]


def rebase_edits(old_text: str, new_text: str, edits: Sequence[types.TextEdit],
                 encoding: str = "utf-16") -> Rebased:
    """Move ``edits`` (against ``old_text``) onto ``new_text``, or say which change overlaps."""
    old_lines, new_lines = old_text.split("\n"), new_text.split("\n")
    blocks = _equal_blocks(old_lines, new_lines)
    old_index, new_index = LineIndex(old_text, encoding), LineIndex(new_text, encoding)
    moved: list[types.TextEdit] = []
    for edit in edits:
        first, last = _touched(edit)
        block = next(((a, b, size) for a, b, size in blocks if a <= first and last < a + size), None)
        if block is None:
            lines = f"{first + 1}" if first == last else f"{first + 1}-{last + 1}"
            return Rebased(None, f"your changes overlap line(s) {lines}, which the edit rewrites")
        shift = block[1] - block[0]
        rng = types.Range(start=types.Position(line=edit.range.start.line + shift, character=edit.range.start.character),
                          end=types.Position(line=edit.range.end.line + shift, character=edit.range.end.character))
        before = old_text[old_index.offset(edit.range.start):old_index.offset(edit.range.end)]
        after = new_text[new_index.offset(rng.start):new_index.offset(rng.end)]
        if before != after:  # cannot happen for line-aligned ranges; never guess
            return Rebased(None, f"the text under the edit at line {first + 1} moved within its line")
        moved.append(types.TextEdit(range=rng, new_text=edit.new_text))
    spans = sorted((new_index.offset(e.range.start), new_index.offset(e.range.end)) for e in moved)
    if any(s2 < e1 for (_, e1), (s2, _) in zip(spans, spans[1:])):
        return Rebased(None, "the rebased edits would overlap")
    return Rebased(moved)


def rebase_onto_current(ls: Any, snap: Any, edits: Sequence[types.TextEdit]) -> Rebased:
    """Rebase ``edits`` decoded against ``snap`` onto the document as the server has it now.

    Only for a document that is still open and whose version moved forward (typing); anything
    else (closed, reopened at a lower version, unopened file) is not rebased. On success
    ``snapshot`` is ``snap`` with the current text, version (and sync generation, when the
    snapshot records one), so the edit is sent versioned against what the client has now.
    """
    document = ls.workspace.text_documents.get(unquote(snap.uri))
    if snap.version is None or document is None or document.version is None:
        return Rebased(None, "the document is not open in the editor")
    if document.version <= snap.version:
        return Rebased(None, f"its version went from {snap.version} to {document.version} (reopened?)")
    current = document.source
    rebased = rebase_edits(snap.text, current, edits, getattr(ls, "position_encoding", "utf-16"))
    if rebased.edits is None:
        return rebased
    changes: dict[str, Any] = {"text": current, "version": document.version}
    if any(f.name == "generation" for f in dataclasses.fields(snap)):
        changes["generation"] = ls.protocol.generation(snap.uri)
    return Rebased(rebased.edits, snapshot=dataclasses.replace(snap, **changes))
