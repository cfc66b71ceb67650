"""Full regeneration baseline: the model emits the whole new document."""
from __future__ import annotations

NAME = "full"


def serialize(doc: str, gold: str) -> str:
    """The output is the gold document itself."""
    return gold


def apply(doc: str, text: str) -> str:
    """The output replaces the document."""
    return text
