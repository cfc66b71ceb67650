"""Unified diff format: ``difflib.unified_diff`` to serialize, the ``unidiff`` package to parse.

Lines follow the project convention (``text.split("\\n")``); every diff line is written with
a "\\n" terminator, so documents with or without a trailing newline and CRLF documents (the
"\\r" stays part of the line) round-trip byte-exactly. Hunks are applied by line number;
context and removed lines are verified against the document.
"""
from __future__ import annotations

import difflib

import unidiff

from evaluation.formats.errors import FormatApplyError

NAME = "udiff"
CONTEXT = 3


def serialize(doc: str, gold: str, context: int = CONTEXT) -> str:
    """A unified diff (``--- a/document`` / ``+++ b/document`` headers, ``context`` lines)."""
    out = difflib.unified_diff(doc.split("\n"), gold.split("\n"), "a/document", "b/document",
                               n=context, lineterm="")
    return "".join(line + "\n" for line in out)


def _strip_nl(value: str) -> str:
    return value[:-1] if value.endswith("\n") else value


def apply(doc: str, text: str) -> str:
    """Apply a single-file unified diff to ``doc`` (hunks in order, verified context)."""
    if not text.strip():
        return doc
    try:
        patch = unidiff.PatchSet(text)
    except unidiff.UnidiffParseError as exc:
        raise FormatApplyError(NAME, f"cannot parse the diff: {exc}") from exc
    if len(patch) != 1:
        raise FormatApplyError(NAME, f"expected a diff of one file, got {len(patch)} files")
    src = doc.split("\n")
    out: list[str] = []
    pos = 0  # 0-based index of the next unconsumed source line
    for k, hunk in enumerate(patch[0]):
        start = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        if start < pos or start > len(src):
            raise FormatApplyError(NAME, f"hunk {k} starts at source line {hunk.source_start}, "
                                         f"outside lines {pos + 1}..{len(src)} still to patch")
        out.extend(src[pos:start])
        pos = start
        for line in hunk:
            value = _strip_nl(line.value)
            if line.is_context or line.is_removed:
                if pos >= len(src) or src[pos] != value:
                    got = repr(src[pos]) if pos < len(src) else "end of document"
                    raise FormatApplyError(NAME, f"hunk {k}: source line {pos + 1} is {got}, "
                                                 f"the diff expects {value!r}")
                if line.is_context:
                    out.append(value)
                pos += 1
            elif line.is_added:
                out.append(value)
    out.extend(src[pos:])
    return "\n".join(out)
