"""The two texts a pasted change is read from: the document's lines and the instruction's fenced blocks.

Shared by the model-free planners (`engine.program.pasted`): the snippet merger, the patch applier
and the SEARCH/REPLACE applier. Lines compare without trailing whitespace (and ``\\r``); what they
write keeps the document's own lines byte for byte and its line breaks (CRLF when every break is).
"""
from __future__ import annotations

import functools
import re
from typing import Callable, NamedTuple

__all__ = ["DocumentLines", "FencedBlock", "NoPlan", "document_lines", "fenced_blocks", "find_runs", "keep_last_break",
           "new_line", "or_none"]

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([^\s`]*)")


class NoPlan(ValueError):
    """A pasted change in a planner's format that does not pin down one result; the message says why
    (the user sees it: the model decoded the instruction instead)."""


def or_none(plan: Callable[[str, str], str | None]) -> Callable[[str, str], str | None]:
    """``plan(document, instruction)`` with ``NoPlan`` turned into ``None`` (callers that need no reason)."""
    @functools.wraps(plan)
    def quiet(document: str, instruction: str) -> str | None:
        try:
            return plan(document, instruction)
        except NoPlan:
            return None
    return quiet


class DocumentLines(NamedTuple):
    """The document's lines as given (``raw``), as compared (``keys``: no trailing whitespace or
    ``\\r``), the set of its stripped lines (``known``) and whether every line break is CRLF."""

    raw: list[str]
    keys: list[str]
    known: set[str]
    crlf: bool


def document_lines(document: str) -> DocumentLines:
    raw = document.split("\n")
    keys = [line.rstrip("\r").rstrip() for line in raw]
    crlf = len(raw) > 1 and all(line.endswith("\r") for line in raw[:-1])
    return DocumentLines(raw, keys, {line.strip() for line in keys}, crlf)


def new_line(line: str, crlf: bool) -> str:
    """A pasted line as the document writes it: its own ``\\r`` dropped, the document's added."""
    line = line.rstrip("\r")
    return line + "\r" if crlf else line


def find_runs(keys: list[str], lines: list[str], start: int = 0) -> list[int]:
    """The 0-based places from ``start`` where ``lines`` (compared without trailing whitespace) stand in
    ``keys`` (a document's compared lines) one after the other."""
    want = [line.rstrip("\r").rstrip() for line in lines]
    n = len(want)
    return [a for a in range(start, len(keys) - n + 1) if keys[a] == want[0] and keys[a:a + n] == want]


def keep_last_break(out: list[str], doc: DocumentLines) -> list[str]:
    """``out`` (new raw lines of a CRLF document) with no ``\r`` on its last line when the document's last
    line had none: a pasted line that became the last keeps the document's (absent) final break."""
    if doc.crlf and out and out[-1].endswith("\r") and not doc.raw[-1].endswith("\r"):
        out[-1] = out[-1][:-1]
    return out


class FencedBlock(NamedTuple):
    info: str          # the fence's info string, lower case ("diff", "python", "" when none)
    lines: list[str]


def fenced_blocks(lines: list[str]) -> list[FencedBlock] | None:
    """The Markdown fenced blocks (```` ``` ```` or ``~~~``) of ``lines``; None when a fence is left open."""
    blocks, current, fence, info = [], None, "", ""
    for line in lines:
        m = _FENCE.match(line)
        if current is None:
            if m:
                current, fence, info = [], m.group(1), m.group(2).lower()
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip().strip(fence[0]):
            blocks.append(FencedBlock(info, current))
            current = None
        else:
            current.append(line)
    return None if current is not None else blocks
