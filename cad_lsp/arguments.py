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

__all__ = ["EditArgs", "parse_edit_args"]

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


def _position(value: Any, where: str) -> types.Position:
    try:
        line, character = int(value["line"]), int(value["character"])
    except (TypeError, KeyError, ValueError):
        raise CommandArgumentError(f"{where} must be {{line, character}} integers, got {value!r}") from None
    if line < 0 or character < 0:
        raise CommandArgumentError(f"{where} must not be negative, got {value!r}")
    return types.Position(line=line, character=character)


def parse_edit_args(command: str, arguments: Sequence[Any]) -> EditArgs:
    if not arguments or not isinstance(arguments[0], dict):
        raise CommandArgumentError(f"{command} takes one object argument {_SHAPE}, got {list(arguments)!r}")
    raw = arguments[0]
    uri = raw.get("uri")
    if not isinstance(uri, str) or not uri:
        raise CommandArgumentError(f"{command}: 'uri' (the document URI) is required, got {uri!r}")
    instruction = raw.get("instruction")
    if instruction is not None and not isinstance(instruction, str):
        raise CommandArgumentError(f"{command}: 'instruction' must be a string, got {instruction!r}")
    rng = None
    if raw.get("range") is not None:
        r = raw["range"]
        if not isinstance(r, dict):
            raise CommandArgumentError(f"{command}: 'range' must be an LSP Range {{start, end}}, got {r!r}")
        rng = types.Range(start=_position(r.get("start"), f"{command}: range.start"),
                          end=_position(r.get("end"), f"{command}: range.end"))
    strategy = raw.get("strategy")
    if strategy is not None and not isinstance(strategy, str):
        raise CommandArgumentError(f"{command}: 'strategy' must be a string, got {strategy!r}")
    budget = raw.get("maxNewTokens")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise CommandArgumentError(f"{command}: 'maxNewTokens' must be a positive integer, got {budget!r}")
    comment = raw.get("comment")
    line = text = None
    if comment is not None:
        if not isinstance(comment, dict) or not isinstance(comment.get("text"), str):
            raise CommandArgumentError(f"{command}: 'comment' must be {{line, text}}, got {comment!r}")
        line, text = comment.get("line"), comment["text"]
        if line is not None and (isinstance(line, bool) or not isinstance(line, int)):
            raise CommandArgumentError(f"{command}: comment.line must be an integer, got {line!r}")
    return EditArgs(uri, instruction, rng, strategy, budget, line, text)
