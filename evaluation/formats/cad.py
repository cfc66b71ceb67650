"""Copy-as-Decode format: the serialized line-level oracle program, applied by the resolver."""
from __future__ import annotations

from evaluation.formats.errors import FormatApplyError
from engine.program.grammar import ProgramParseError, parse
from engine.program.grammar import serialize as serialize_program
from engine.program.oracle import line_program
from engine.program.resolver import ResolveError, resolve

NAME = "cad"


def serialize(doc: str, gold: str) -> str:
    """``<program>…</program>`` for the line-level oracle."""
    return serialize_program(line_program(doc, gold))


def apply(doc: str, text: str, mode: str = "strict") -> str:
    """Parse the program and resolve it against ``doc``."""
    try:
        return resolve(parse(text), doc, mode).text
    except (ProgramParseError, ResolveError) as exc:
        raise FormatApplyError(NAME, str(exc)) from exc
