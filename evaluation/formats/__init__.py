"""Edit output formats compared in the formats benchmark (seed Table 3).

Each format module exposes ``NAME``, ``serialize(doc, gold) -> str`` (the text a model would
have to emit, derived from the oracle) and ``apply(doc, text) -> str`` (parse + apply). The
registry :data:`FORMATS` maps names to modules, in table order.
"""
from __future__ import annotations

from types import ModuleType

from evaluation.formats import cad, full, search_replace, udiff
from evaluation.formats.errors import FormatApplyError

FORMATS: dict[str, ModuleType] = {m.NAME: m for m in (full, search_replace, udiff, cad)}

__all__ = ["FORMATS", "FormatApplyError", "get_format"]


def get_format(name: str) -> ModuleType:
    """The format module called ``name``."""
    try:
        return FORMATS[name]
    except KeyError:
        raise KeyError(f"unknown edit format {name!r}; known formats: {sorted(FORMATS)}") from None
