"""The edit-program grammar: ops, parse/serialize, and the reserved-literal escape.

Owns the textual form of an edit program::

    <program><copy lines="1-12"/><gen>
        return a + b
    </gen><copy lines="14-40"/><copy tokens="0-17"/></program>

* ``CopyLines(start, end)``: 1-based inclusive document lines (``lines="i-j"``, 1 <= i <= j).
* ``CopyTokens(start, end)``: 0-based inclusive document token ids (``tokens="a-b"``, a <= b).
* ``Gen(text)``: free text; ``text`` is the *unescaped* body.

Whitespace (space, tab, CR, LF) is allowed before ``<program>``, between ops and after
``</program>``; anything else outside ops is a :class:`ProgramParseError`. ``serialize``
emits no such whitespace, so ``parse(serialize(p)) == p`` for every program and
``serialize(parse(s)) == s`` for every canonical ``s``.

Escape. A gen body must never contain a reserved literal (``RESERVED_LITERALS``) verbatim.
``escape`` maps each one to an entity form built from U+27E8 "⟨", U+27E9 "⟩" and U+2024
"․" (for the slash), e.g. ``</gen>`` -> ``⟨․gen⟩``. To make ``escape`` injective on *all*
strings (including text that already contains the entity forms), the escape character
"⟨" itself is doubled first-come-first-served in the same left-to-right pass. The escaped
alphabet {"⟨⟨", entities, any other single char} is prefix-free, so ``unescape`` decodes it
uniquely and ``unescape(escape(s)) == s`` for every string ``s``. ``escape`` output never
contains a reserved literal. ``unescape`` leaves a lone "⟨" that starts no code unchanged.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

from engine.errors import ProgramParseError

__all__ = [
    "CopyLines", "CopyTokens", "Gen", "Op", "Program", "ProgramParseError",
    "parse", "serialize", "escape", "unescape", "RESERVED_LITERALS", "ENTITIES",
    "ESCAPE_CHAR", "PROGRAM_OPEN", "PROGRAM_CLOSE", "COPY_LINES_OPEN", "COPY_TOKENS_OPEN", "RANGE_SEP",
    "COPY_CLOSE", "GEN_OPEN", "GEN_CLOSE",
]

# The structural literals, as the model writes them (the token FSM, engine.guide, spells these).
PROGRAM_OPEN = "<program>"
PROGRAM_CLOSE = "</program>"
COPY_LINES_OPEN = '<copy lines="'
COPY_TOKENS_OPEN = '<copy tokens="'
RANGE_SEP = "-"
COPY_CLOSE = '"/>'
GEN_OPEN = "<gen>"
GEN_CLOSE = "</gen>"


@dataclass(frozen=True)
class CopyLines:
    """Copy document lines ``start..end`` (1-based, inclusive)."""

    start: int
    end: int


@dataclass(frozen=True)
class CopyTokens:
    """Copy document token ids ``start..end`` (0-based, inclusive)."""

    start: int
    end: int


@dataclass(frozen=True)
class Gen:
    """Generated text (unescaped)."""

    text: str


Op = Union[CopyLines, CopyTokens, Gen]
Program = tuple  # tuple[Op, ...]

# Longest first, so "</copy>" wins over any shorter overlapping literal.
RESERVED_LITERALS: tuple[str, ...] = ("</program>", "</copy>", "</gen>", "<copy", "<gen>")

ESCAPE_CHAR = "\u27e8"  # ⟨
_CLOSE = "\u27e9"  # ⟩
_SLASH = "\u2024"  # ․


def _entity(literal: str) -> str:
    return literal.replace("<", ESCAPE_CHAR).replace(">", _CLOSE).replace("/", _SLASH)


ENTITIES: dict[str, str] = {lit: _entity(lit) for lit in RESERVED_LITERALS}
_UNENTITIES: dict[str, str] = {ent: lit for lit, ent in ENTITIES.items()}
_ESCAPE_RE = re.compile("|".join(re.escape(x) for x in (*RESERVED_LITERALS, ESCAPE_CHAR)))
_UNESCAPE_RE = re.compile(
    "|".join(re.escape(x) for x in (ESCAPE_CHAR * 2, *sorted(_UNENTITIES, key=len, reverse=True)))
)


def escape(text: str) -> str:
    """Replace reserved literals by entities and double the escape char; injective on all strings."""

    def sub(m: re.Match) -> str:
        s = m.group(0)
        return ESCAPE_CHAR * 2 if s == ESCAPE_CHAR else ENTITIES[s]

    return _ESCAPE_RE.sub(sub, text)


def unescape(text: str) -> str:
    """Inverse of :func:`escape` (single left-to-right pass)."""

    def sub(m: re.Match) -> str:
        s = m.group(0)
        return ESCAPE_CHAR if s == ESCAPE_CHAR * 2 else _UNENTITIES[s]

    return _UNESCAPE_RE.sub(sub, text)


_WS = " \t\r\n"
_COPY_RE = re.compile(r'<copy (lines|tokens)="([^"]*)"/>')
_RANGE_RE = re.compile(r"([0-9]+)-([0-9]+)\Z")


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def _parse_range(text: str, kind: str, body: str, body_offset: int) -> Op:
    m = _RANGE_RE.match(body)
    if not m:
        bad = next((i for i, c in enumerate(body) if not (c.isdigit() and c.isascii()) and c != "-"), None)
        off = body_offset + (bad if bad is not None else 0)
        raise ProgramParseError(
            text, off, f'a range "START-END" of decimal digits in {kind}="…"', found=repr(body))
    a, b = int(m.group(1)), int(m.group(2))
    if kind == "lines":
        if a < 1:
            raise ProgramParseError(text, body_offset, "line numbers >= 1 (lines are 1-based)",
                                    found=repr(body))
        if b < a:
            raise ProgramParseError(text, body_offset + m.start(2), f"an end line >= start line {a}",
                                    found=repr(body))
        return CopyLines(a, b)
    if b < a:
        raise ProgramParseError(text, body_offset + m.start(2), f"an end token >= start token {a}",
                                found=repr(body))
    return CopyTokens(a, b)


def parse(text: str) -> Program:
    """Parse ``<program>…</program>`` into a tuple of ops (gen bodies unescaped).

    Raises :class:`ProgramParseError` naming the character offset and what was expected.
    """
    pos = _skip_ws(text, 0)
    if not text.startswith("<program>", pos):
        raise ProgramParseError(text, pos, "'<program>'")
    pos += len("<program>")
    ops: list[Op] = []
    while True:
        pos = _skip_ws(text, pos)
        if text.startswith("</program>", pos):
            pos += len("</program>")
            break
        if text.startswith("<gen>", pos):
            body_start = pos + len("<gen>")
            end = text.find("</gen>", body_start)
            if end < 0:
                raise ProgramParseError(text, len(text), f"'</gen>' closing the <gen> opened at offset {pos}")
            body = text[body_start:end]
            for lit in ("<gen>", "<copy", "</program>", "</copy>"):
                nested = body.find(lit)
                if nested >= 0:
                    raise ProgramParseError(
                        text, body_start + nested,
                        f"'</gen>' or escaped text (reserved literal {lit!r} may not appear inside <gen>)")
            ops.append(Gen(unescape(body)))
            pos = end + len("</gen>")
            continue
        if text.startswith("<copy", pos):
            m = _COPY_RE.match(text, pos)
            if not m:
                raise ProgramParseError(text, pos, '\'<copy lines="I-J"/>\' or \'<copy tokens="A-B"/>\'')
            ops.append(_parse_range(text, m.group(1), m.group(2), m.start(2)))
            pos = m.end()
            continue
        if pos >= len(text):
            raise ProgramParseError(text, pos, "'</program>'")
        raise ProgramParseError(text, pos, "'<copy …/>', '<gen>' or '</program>'")
    end = _skip_ws(text, pos)
    if end != len(text):
        raise ProgramParseError(text, end, "end of text after '</program>' (trailing garbage)")
    return tuple(ops)


def serialize(program) -> str:
    """Serialize ops to canonical program text (gen bodies escaped, no whitespace between ops)."""
    parts = ["<program>"]
    for i, op in enumerate(program):
        if isinstance(op, CopyLines):
            parts.append(f'<copy lines="{op.start}-{op.end}"/>')
        elif isinstance(op, CopyTokens):
            parts.append(f'<copy tokens="{op.start}-{op.end}"/>')
        elif isinstance(op, Gen):
            parts.append(f"<gen>{escape(op.text)}</gen>")
        else:
            raise TypeError(f"op {i} of the program is {op!r}; expected CopyLines, CopyTokens or Gen")
    parts.append("</program>")
    return "".join(parts)
