"""Line endings of generated text: make model-written text follow the document's convention.

The model writes "\\n" line breaks. Under the project's line convention (`document.split("\\n")`)
a CRLF document keeps "\\r" at the end of every line but the last, so a generated line must carry a
"\\r" too, or an edited CRLF file would end up with mixed line endings. Copies are verbatim and
need nothing. This module owns that adaptation for line programs, token programs and plain
regenerated text; documents that are not CRLF are returned unchanged.
"""
from __future__ import annotations

import re

from engine.program.grammar import Gen
from engine.program.resolver import document_lines, strip_gen

_BARE_LF = re.compile(r"(?<!\r)\n")


def uses_crlf(document: str) -> bool:
    """True when every line break of the document is CRLF (and there is at least one)."""
    body = document_lines(document)[:-1]
    return bool(body) and all(line.endswith("\r") for line in body)


def crlf_text(text: str) -> str:
    """Turn every bare LF of `text` into CRLF."""
    return _BARE_LF.sub("\r\n", text)


def _crlf_gen_body(body: str, is_last_op: bool) -> str:
    lines = body.split("\n")
    out = [line if line.endswith("\r") else line + "\r" for line in lines[:-1]]
    tail = lines[-1]
    # The last line of the last op is the document's final line, which has no line break.
    out.append(tail if is_last_op or tail.endswith("\r") else tail + "\r")
    return "\n".join(out)


def adapt_program(program, document: str, *, token_level: bool = False):
    """Return `program` with each Gen's line breaks matching the document's (CRLF) convention."""
    if not uses_crlf(document):
        return tuple(program)
    last = len(program) - 1
    adapted = []
    for k, op in enumerate(program):
        if isinstance(op, Gen):
            if token_level:
                op = Gen(crlf_text(op.text))
            else:
                op = Gen("\n" + _crlf_gen_body(strip_gen(op.text), k == last) + "\n")
        adapted.append(op)
    return tuple(adapted)


def adapt_text(text: str, document: str) -> str:
    """Regenerated full text: CRLF line breaks when the document uses them."""
    return crlf_text(text) if uses_crlf(document) else text
