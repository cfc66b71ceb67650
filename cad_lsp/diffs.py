"""Unified diffs for ``cad.previewEdit`` (nothing is applied)."""
from __future__ import annotations

import difflib

__all__ = ["unified_diff"]


def unified_diff(old: str, new: str, uri: str, context: int = 3) -> str:
    """A unified diff of ``old`` → ``new`` labelled ``a/<uri>`` / ``b/<uri>``; "" if equal.

    Lines are split with ``split("\\n")`` like the resolver, so a change of the final
    newline shows up as a changed last line.
    """
    if old == new:
        return ""
    lines = difflib.unified_diff(old.split("\n"), new.split("\n"), f"a/{uri}", f"b/{uri}",
                                 n=context, lineterm="")
    return "\n".join(lines) + "\n"
