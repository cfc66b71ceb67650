"""Instruction comments: ``# cad: make it iterative`` lines offered as code actions.

Owns detection and consumption of instruction comments.

Detection is generic, not a per-language list: a line whose first non-blank characters are a
*comment leader* (1–4 punctuation characters such as ``#``, ``//``, ``--``, ``;;``, ``%``,
``/*``, ``<!--``, ``(*``, ``{-``), then ``cad:`` (any case), then the instruction. A closing
delimiter that mirrors the leader (``*/``, ``-->``, ``*)``, ``-}``) is dropped from the end.

Decision: the comment line is **consumed** by the edit. When the edit is applied, the
program is rewritten so that its line copies skip the comment line
(:func:`drop_line_from_program`); the comment disappears together with the change it asked
for, and every other copied line stays untouched. If the model already rewrote or dropped
that line, nothing more happens. Token-level programs are left as they are (the comment is
kept).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from engine.program.grammar import CopyLines, CopyTokens

__all__ = ["InstructionComment", "find_instruction_comments", "parse_instruction_comment",
           "drop_line_from_program", "locate_comment"]

_COMMENT = re.compile(r"^\s*(?P<lead>[^\w\s]{1,4})[ \t]*cad:[ \t]*(?P<text>.*?)\s*$", re.IGNORECASE)
_MIRROR = str.maketrans("()[]{}<>", ")(][}{><")


@dataclass(frozen=True)
class InstructionComment:
    """An instruction comment on ``line`` (0-based, ``split("\\n")``); ``text`` is the full line."""

    line: int
    instruction: str
    text: str


def _closers(lead: str) -> list[str]:
    mirrored = lead[::-1].translate(_MIRROR)
    out = [mirrored, mirrored.replace("!", "")]
    return [c for c in out if c and c != lead]


def parse_instruction_comment(line: str) -> str | None:
    """The instruction in a comment line, or None when the line is not an instruction comment."""
    match = _COMMENT.match(line)
    if not match:
        return None
    text = match.group("text")
    for closer in _closers(match.group("lead")):
        if text.endswith(closer):
            text = text[: -len(closer)].rstrip()
            break
    return text or None


def find_instruction_comments(document: str, first: int = 0, last: int | None = None) -> list[InstructionComment]:
    """Instruction comments on lines ``first..last`` (0-based inclusive; default: all lines)."""
    lines = document.split("\n")
    last = len(lines) - 1 if last is None else min(last, len(lines) - 1)
    found = []
    for i in range(max(first, 0), last + 1):
        instruction = parse_instruction_comment(lines[i])
        if instruction:
            found.append(InstructionComment(i, instruction, lines[i]))
    return found


def locate_comment(document: str, line: int | None, text: str) -> int | None:
    """Where the comment line ``text`` is now (0-based): at ``line`` if unchanged, else the
    only line equal to ``text``; None if it is gone or ambiguous."""
    lines = document.split("\n")
    if line is not None and 0 <= line < len(lines) and lines[line] == text:
        return line
    hits = [i for i, value in enumerate(lines) if value == text]
    return hits[0] if len(hits) == 1 else None


def drop_line_from_program(program: Sequence, line: int) -> tuple:
    """``program`` with 1-based document ``line`` removed from every ``CopyLines`` span.

    Resolving the result gives the original resolution without the copied comment line
    (line-mode joins are by "\\n", so splitting a span around the line removes exactly it).
    Token-level programs are returned unchanged.
    """
    if any(isinstance(op, CopyTokens) for op in program):
        return tuple(program)
    out = []
    for op in program:
        if isinstance(op, CopyLines) and op.start <= line <= op.end:
            if op.start <= line - 1:
                out.append(CopyLines(op.start, line - 1))
            if line + 1 <= op.end:
                out.append(CopyLines(line + 1, op.end))
        else:
            out.append(op)
    return tuple(out)
