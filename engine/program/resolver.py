"""The resolver: a pure function from (program, document) to the new document text.

Line convention (see docs/ARCHITECTURE.md): ``lines = document.split("\\n")``, 1-based in
programs, ``n = len(lines)``. A document ending in "\\n" has a final empty line; ``""`` has one
empty line; CRLF documents keep "\\r" at the end of each line, so copies are byte-exact.

Line mode (no ``CopyTokens``):

* ``CopyLines(i, j)`` emits ``"\\n".join(lines[i-1:j])``;
* ``Gen(s)`` emits ``s`` with at most one leading and at most one trailing "\\n" stripped
  (so ``Gen("\\n\\n")`` and ``Gen("")`` both emit ``""``: one empty line between neighbours);
* the emitted pieces are joined with a single "\\n".

Token mode (the program has a ``CopyTokens``, or the caller passes ``granularity="tokens"``,
which a token-level decoder should do so that a program made only of gens is not
line-stripped; passing ``token_ids`` alone does not switch modes): ``token_ids`` are the document's token ids and
``decode_tokens(ids) -> str`` decodes them. ``CopyTokens(a, b)`` emits the decode of
``token_ids[a:b+1]``; runs of ``CopyTokens`` that are contiguous in the document
(``b + 1 == next.a``) are decoded together so multi-byte characters split between them
come out right. Gen bodies are emitted verbatim (no stripping); pieces are concatenated.
Mixing ``CopyLines`` and ``CopyTokens`` is a :class:`ResolveError`.

Modes: ``"strict"`` raises :class:`ResolveError` on an out-of-range op; ``"clipped"`` clips
indices into range (lines to [1, n], tokens to [0, T-1]), swaps reversed ranges, and records
one warning per repaired op in :attr:`Resolution.warnings`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from engine.errors import ResolveError

from engine.program.grammar import CopyLines, CopyTokens, Gen, Op

__all__ = ["ResolveError", "Resolution", "resolve", "document_lines", "strip_gen", "MODES"]

MODES = ("strict", "clipped")


@dataclass
class Resolution:
    """The resolved text and any warnings produced in clipped mode."""

    text: str
    warnings: list[str] = field(default_factory=list)


def document_lines(document: str) -> list[str]:
    """The line convention used everywhere: ``document.split("\\n")``."""
    return document.split("\n")


def strip_gen(text: str) -> str:
    """Strip at most one leading and at most one trailing newline from a gen body."""
    if text.startswith("\n"):
        text = text[1:]
    if text.endswith("\n"):
        text = text[:-1]
    return text


def _check_range(op, index: int, start: int, end: int, lo: int, hi: int, unit: str, mode: str,
                 line_count: int, token_count: int | None, warnings: list[str]) -> tuple[int, int]:
    """Validate ``lo <= start <= end <= hi`` (strict) or repair it (clipped)."""
    if lo <= start <= end <= hi:
        return start, end
    size = hi - lo + 1
    what = f"the document has {line_count} lines" if unit == "line" else \
        f"the document has {token_count} tokens (valid indices {lo}-{hi})"
    if mode == "strict":
        raise ResolveError(
            f"op {index} ({op!r}) is out of range: {what}; "
            f"use {unit}s {lo}..{hi} with start <= end, or resolve with mode='clipped'",
            index, op, line_count, token_count)
    if size <= 0:
        raise ResolveError(f"op {index} ({op!r}) copies from an empty token sequence: {what}",
                           index, op, line_count, token_count)
    s, e = sorted((start, end))
    s, e = min(max(s, lo), hi), min(max(e, lo), hi)
    warnings.append(f"op {index} ({op!r}) clipped to {unit}s {s}-{e}: {what}")
    return s, e


def resolve(program: Sequence[Op], document: str, mode: str = "strict", *,
            token_ids: Sequence[int] | None = None,
            decode_tokens: Callable[[Sequence[int]], str] | None = None,
            granularity: str | None = None) -> Resolution:
    """Resolve ``program`` against ``document`` (see the module docstring for the semantics).

    ``granularity`` is ``None`` (infer: token mode iff the program has a ``CopyTokens``),
    ``"lines"`` or ``"tokens"``.
    """
    if mode not in MODES:
        raise ValueError(f"resolve mode {mode!r} is not one of {MODES}")
    if granularity not in (None, "lines", "tokens"):
        raise ValueError(f"resolve granularity {granularity!r} is not None, 'lines' or 'tokens'")
    lines = document_lines(document)
    n = len(lines)
    has_lines = any(isinstance(op, CopyLines) for op in program)
    has_tokens = any(isinstance(op, CopyTokens) for op in program)
    if has_lines and has_tokens:
        index = next(i for i, op in enumerate(program) if isinstance(op, CopyTokens))
        raise ResolveError(f"op {index} ({program[index]!r}) mixes token copies with line copies; "
                           "a program uses either CopyLines or CopyTokens", index, program[index], n)
    warnings: list[str] = []
    if granularity == "lines" and has_tokens:
        index = next(i for i, op in enumerate(program) if isinstance(op, CopyTokens))
        raise ResolveError(f"op {index} ({program[index]!r}) is a token copy but granularity='lines'",
                           index, program[index], n)
    if granularity == "tokens" and has_lines:
        index = next(i for i, op in enumerate(program) if isinstance(op, CopyLines))
        raise ResolveError(f"op {index} ({program[index]!r}) is a line copy but granularity='tokens'",
                           index, program[index], n)
    if has_tokens or granularity == "tokens":
        return _resolve_tokens(program, n, mode, token_ids, decode_tokens, warnings)
    pieces: list[str] = []
    for index, op in enumerate(program):
        if isinstance(op, CopyLines):
            s, e = _check_range(op, index, op.start, op.end, 1, n, "line", mode, n, None, warnings)
            pieces.append("\n".join(lines[s - 1:e]))
        elif isinstance(op, Gen):
            pieces.append(strip_gen(op.text))
        else:
            raise ResolveError(f"op {index} ({op!r}) is not CopyLines, CopyTokens or Gen", index, op, n)
    return Resolution("\n".join(pieces), warnings)


def _resolve_tokens(program, n, mode, token_ids, decode_tokens, warnings) -> Resolution:
    if token_ids is None or decode_tokens is None:
        raise ResolveError("a program with CopyTokens needs token_ids= (the document's token ids) "
                           "and decode_tokens= (ids -> str)", 0, program[0] if program else None, n)
    t = len(token_ids)
    pieces: list[str] = []
    run: list[int] = []  # contiguous document ids pending decode
    last_end = None
    for index, op in enumerate(program):
        if isinstance(op, CopyTokens):
            s, e = _check_range(op, index, op.start, op.end, 0, t - 1, "token", mode, n, t, warnings)
            if run and last_end is not None and s != last_end + 1:
                pieces.append(decode_tokens(run))
                run = []
            run.extend(token_ids[s:e + 1])
            last_end = e
        elif isinstance(op, Gen):
            if run:
                pieces.append(decode_tokens(run))
                run, last_end = [], None
            pieces.append(op.text)
        else:
            raise ResolveError(f"op {index} ({op!r}) cannot appear in a token-mode program", index, op, n, t)
    if run:
        pieces.append(decode_tokens(run))
    return Resolution("".join(pieces), warnings)
