"""Parsing of the ``cad.applyEdit`` / ``cad.previewEdit`` argument object.

Shape (one object, the first element of ``ExecuteCommandParams.arguments``)::

    {"uri": str, "instruction": str, "range"?: LSP Range, "strategy"?: str,
     "maxNewTokens"?: int, "comment"?: {"line": int, "text": str}}

``comment`` names an instruction-comment line (0-based) consumed by the edit
(see :mod:`cad_lsp.instruction_comments`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from lsprotocol import types

from .errors import CommandArgumentError

__all__ = ["EditArgs", "parse_edit_args", "check_unicode", "UINTEGER_MAX"]

UINTEGER_MAX = 2**31 - 1  # LSP uinteger/integer bound; lsprotocol rejects larger positions

_SHAPE = '[{"uri": ..., "instruction": ..., "range"?: {...}, "strategy"?: ...}]'


@dataclass(frozen=True)
class EditArgs:
    uri: str
    instruction: str | None
    range: types.Range | None = None
    strategy: str | None = None
    max_new_tokens: int | None = None
    comment_line: int | None = None
    comment_text: str | None = None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _position(value: Any, where: str) -> types.Position:
    try:
        line, character = value["line"], value["character"]
    except (TypeError, KeyError):
        raise CommandArgumentError(f"{where} must be {{line, character}} integers, got {_short(value)}") from None
    for name, number in (("line", line), ("character", character)):
        if isinstance(number, bool) or not isinstance(number, int):
            raise CommandArgumentError(f"{where}.{name} must be an integer, got {_short(number)}")
        if not 0 <= number <= UINTEGER_MAX:
            raise CommandArgumentError(f"{where}.{name} must be between 0 and {UINTEGER_MAX} "
                                       f"(an LSP uinteger), got {_short(number)}")
    return types.Position(line=line, character=character)


def parse_edit_args(command: str, arguments: Sequence[Any]) -> EditArgs:
    if not arguments or not isinstance(arguments[0], dict):
        raise CommandArgumentError(f"{command} takes one object argument {_SHAPE}, got {_short(list(arguments))}")
    raw = arguments[0]
    uri = raw.get("uri")
    if not isinstance(uri, str) or not uri:
        raise CommandArgumentError(f"{command}: 'uri' (the document URI) is required, got {_short(uri)}")
    instruction = raw.get("instruction")
    if instruction is not None and not isinstance(instruction, str):
        raise CommandArgumentError(f"{command}: 'instruction' must be a string, got {_short(instruction)}")
    rng = None
    if raw.get("range") is not None:
        r = raw["range"]
        if not isinstance(r, dict):
            raise CommandArgumentError(f"{command}: 'range' must be an LSP Range {{start, end}}, got {_short(r)}")
        rng = types.Range(start=_position(r.get("start"), f"{command}: range.start"),
                          end=_position(r.get("end"), f"{command}: range.end"))
    strategy = raw.get("strategy")
    if strategy is not None and not isinstance(strategy, str):
        raise CommandArgumentError(f"{command}: 'strategy' must be a string, got {_short(strategy)}")
    budget = raw.get("maxNewTokens")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                               or not 1 <= budget <= UINTEGER_MAX):
        raise CommandArgumentError(f"{command}: 'maxNewTokens' must be an integer between 1 and "
                                   f"{UINTEGER_MAX}, got {_short(budget)}")
    comment = raw.get("comment")
    line = text = None
    if comment is not None:
        if not isinstance(comment, dict) or not isinstance(comment.get("text"), str):
            raise CommandArgumentError(f"{command}: 'comment' must be {{line, text}}, got {_short(comment)}")
        line, text = comment.get("line"), comment["text"]
        if line is not None and (isinstance(line, bool) or not isinstance(line, int)
                                 or not 0 <= line <= UINTEGER_MAX):
            raise CommandArgumentError(f"{command}: comment.line must be an integer between 0 and "
                                       f"{UINTEGER_MAX}, got {_short(line)}")
    return EditArgs(uri, instruction, rng, strategy, budget, line, text)


def check_unicode(text: str, what: str, fix: str) -> None:
    """Refuse text with a lone UTF-16 surrogate (JSON ``"\\ud800"``): not Unicode, so no tokenizer
    can encode it (the engine raised ``TypeError`` from deep inside the tokenizer)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        before = text[:exc.start]
        line = before.count("\n")
        character = exc.start - (before.rfind("\n") + 1)
        raise CommandArgumentError(
            f"{what} contains a lone UTF-16 surrogate (U+{ord(text[exc.start]):04X}) at line {line}, "
            f"character {character} (0-based): that is not valid Unicode, so the model cannot read it. "
            f"{fix}") from None
